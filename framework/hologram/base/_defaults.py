"""Default paths and option choices, in a module that imports nothing heavy: the CLI's parser shows them in
every command's ``--help``, and building the parser must not import the lock or the kernel (`hologram
--version` ≤ 0.15 s)."""

from pathlib import Path

DEFAULT_LOCK = Path("hologram.lock")  # `hologram build` writes it, `hologram up` reads it
DEFAULT_DATA_DIR = Path(".hologram")  # sessions, memory, logs and the control socket
GRAPH_FORMATS = ("text", "dot", "mermaid")  # `hologram graph --format` (hologram/plan/diagnostics.py renders them)
