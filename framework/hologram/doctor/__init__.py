"""`hologram doctor`: check every file of a data directory, and recover damaged databases.

* `check` — each file's state (ok / damaged / warning) and why;
* `salvage` — what can still be read from a damaged SQLite file (pure Python);
* `repair` — a new file built from it and migrated by the owning store, the damaged one kept beside it.

Import from the modules (``from hologram.doctor.repair import repair``): the package re-exports nothing, so
``hologram.doctor.repair`` is always the module.
"""
