"""`python -m hologram_plugins.http`: how the kernel runs the HTTP channel out of process."""

from hologram_plugins.http import plugin

plugin.run()
