"""`python -m hologram_plugins.reminders`: how the kernel runs this plugin out of process."""

from hologram_plugins.reminders import plugin

plugin.run()
