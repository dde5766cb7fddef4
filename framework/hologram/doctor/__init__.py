"""`hologram doctor`: check every file of a data directory, and recover damaged databases.

* `check` — each file's state (ok / damaged / warning) and why;
* `salvage` — what can still be read from a damaged SQLite file (pure Python);
* `repair` — a new file built from it through the owning store, the damaged one kept beside it.
"""

from hologram.doctor.check import FileReport, check_data_dir
from hologram.doctor.repair import RepairResult, repair

__all__ = ["FileReport", "RepairResult", "check_data_dir", "repair"]
