"""`python -m hologram_plugins.skills`: how the kernel runs this plugin out of process."""

from hologram_plugins.skills import plugin

plugin.run()
