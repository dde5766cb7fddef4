"""`python -m hologram_plugins.mcp`: how the kernel runs this plugin out of process."""

from hologram_plugins.mcp import plugin

plugin.run()
