"""`python -m hologram_plugins.terminal`: how the kernel runs this plugin out of process."""

from hologram_plugins.terminal import plugin

plugin.run()
