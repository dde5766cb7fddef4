"""`python -m hologram_plugins.admin`: how the kernel runs this plugin out of process."""

from hologram_plugins.admin import plugin

plugin.run()
