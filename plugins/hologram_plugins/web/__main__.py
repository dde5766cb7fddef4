"""`python -m hologram_plugins.web`: how the kernel runs this plugin out of process."""

from hologram_plugins.web import plugin

plugin.run()
