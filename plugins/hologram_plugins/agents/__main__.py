"""`python -m hologram_plugins.agents`: how the kernel runs this plugin out of process."""

from hologram_plugins.agents import plugin

plugin.run()
