"""The single source of the package version (read by hatchling at build time)."""

__version__ = "0.1.0"
