"""hologram-weather: an example Hologram plugin (docs/authoring.md). The program is ``__main__.py``."""
