"""`python -m hologram_plugins.browser`: how the kernel runs this plugin out of process."""

from hologram_plugins.browser import plugin

plugin.run()
