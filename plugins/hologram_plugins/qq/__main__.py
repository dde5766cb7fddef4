"""`python -m hologram_plugins.qq`: how the kernel runs the QQ channel out of process."""

from hologram_plugins.qq import plugin

plugin.run()
