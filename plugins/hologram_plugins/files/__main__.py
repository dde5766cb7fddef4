"""`python -m hologram_plugins.files`: how the kernel runs this plugin out of process."""

from hologram_plugins.files import plugin

plugin.run()
