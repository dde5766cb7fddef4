"""Default paths and option choices, in a module that imports nothing heavy: the CLI's parser shows them in
every command's ``--help``, and building the parser must not import the lock or the kernel (`hologram
--version` ≤ 0.15 s)."""

import os
from pathlib import Path

DEFAULT_LOCK = Path("hologram.lock")  # `hologram build` writes it, `hologram up` reads it
DEFAULT_DATA_DIR = Path(".hologram")  # sessions, memory, logs and the control socket
GRAPH_FORMATS = ("text", "dot", "mermaid")  # `hologram graph --format` (hologram/plan/diagnostics.py renders them)
LOCK_NAME = DEFAULT_LOCK.name  # the lock's name inside the per-user directory


def user_dir() -> Path:
    """The per-user Hologram (`--user`): its lock and data in ``$XDG_DATA_HOME/hologram``, by the XDG base
    directory rules (unset, empty or relative: ``~/.local/share``), so one agent per person runs from any
    directory and as a systemd user service."""
    base = os.environ.get("XDG_DATA_HOME", "")
    root = Path(base) if os.path.isabs(base) else Path.home() / ".local" / "share"
    return root / "hologram"
