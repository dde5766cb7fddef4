"""`python -m hologram_plugins.rss`: how the kernel runs this plugin out of process."""

from hologram_plugins.rss import plugin

plugin.run()
