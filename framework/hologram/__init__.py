"""Hologram: a self-hosted agent kernel built as a declarative plugin graph."""

from hologram._version import __version__

__all__ = ["__version__"]
