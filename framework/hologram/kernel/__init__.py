"""The kernel layer: the process that owns the supervisor, the event ring, the control socket and the lock.

It assembles itself by registration (`Kernel.add_control_method`, `add_facility_method`, `add_event_listener`,
`on_lock_changed`); the supervisor below it knows nothing of this package (it must not import from it).

- `core`: `Kernel` and the data directory.
- `logfile`: the log file of a start, rotated by size.
- `control`: the control socket (server and the CLI's clients).
- `watch`: `hologram up --watch`, rebuilding the lock and restarting changed plugins.

Importing the package does not import `core` (the agent, the supervisor, the LLM stack): the CLI's clients
need only `control`, and `hologram ask` starts a new process per turn. The names below load on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hologram.kernel.core import (
        DEFAULT_DATA_DIR,
        Kernel,
        make_private,
        plugin_specs,
        prepare_data_dir,
    )
    from hologram.kernel.logfile import open_log_file

__all__ = ["DEFAULT_DATA_DIR", "Kernel", "make_private", "open_log_file", "plugin_specs", "prepare_data_dir"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        module = "hologram.kernel.logfile" if name == "open_log_file" else "hologram.kernel.core"
        return getattr(importlib.import_module(module), name)
    raise AttributeError(f"module 'hologram.kernel' has no attribute {name!r}")
