"""`python -m hologram_plugins.code`: how the kernel runs this plugin out of process."""

from hologram_plugins.code import plugin

plugin.run()
