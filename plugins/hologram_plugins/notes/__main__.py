"""`python -m hologram_plugins.notes`: how the kernel runs this plugin out of process."""

from hologram_plugins.notes import plugin

plugin.run()
