"""The kernel layer: the process that owns the supervisor, the event ring, the control socket and the lock.

It assembles itself by registration (`Kernel.add_control_method`, `add_facility_method`, `add_event_listener`,
`on_lock_changed`); the supervisor below it knows nothing of this package (it must not import from it).

- `core`: `Kernel`, the data directory and the log file.
- `control`: the control socket (server and the CLI's clients).
- `watch`: `hologram up --watch`, rebuilding the lock and restarting changed plugins.
"""

from hologram.kernel.core import (
    DEFAULT_DATA_DIR,
    Kernel,
    make_private,
    open_log_file,
    plugin_specs,
    prepare_data_dir,
)

__all__ = ["DEFAULT_DATA_DIR", "Kernel", "make_private", "open_log_file", "plugin_specs", "prepare_data_dir"]
