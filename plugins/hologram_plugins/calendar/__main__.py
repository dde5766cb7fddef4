"""`python -m hologram_plugins.calendar`: how the kernel runs this plugin out of process."""

from hologram_plugins.calendar import plugin

plugin.run()
