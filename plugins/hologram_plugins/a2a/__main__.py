"""`python -m hologram_plugins.a2a`: how the kernel runs the A2A plugin out of process."""

from hologram_plugins.a2a import plugin

plugin.run()
