"""The built-in plugins shipped with Hologram, one sub-package each."""
