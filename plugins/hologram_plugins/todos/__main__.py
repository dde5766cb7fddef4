"""`python -m hologram_plugins.todos`: how the kernel runs this plugin out of process."""

from hologram_plugins.todos import plugin

plugin.run()
