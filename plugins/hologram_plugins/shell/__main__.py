"""`python -m hologram_plugins.shell`: how the kernel runs this plugin out of process."""

from hologram_plugins.shell import plugin

plugin.run()
