"""`hologram up`'s check of the derived caches (``vectors.db``, ``scenes.db``: `hologram.storage.caches`) at start:
a damaged one is kept beside it as ``NAME.damaged-<time>`` — as `hologram doctor --repair` keeps any damaged
database — with one warning line naming it, and its store starts a new one, which fills again as it is used
(vectors computed when a session is next indexed, scenes learned from the next turns).

Why not the doctor's salvage of readable rows: it reads a table by rowid ranges, so ``vectors.db``'s
``WITHOUT ROWID`` table gives nothing back (0 of 100,000 rows, 3.7 s on a 468 MB file), and ``scenes.db``
with one damaged page took 4.6 s — seconds added to a start, for a cache the kernel rebuilds anyway.

It runs in a thread from the start of `up`, beside the kernel's imports, and the memory waits for it before it
opens the caches (`CacheCheck.wait`), so no turn ever reads a damaged cache that the check could have found.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from hologram.storage.caches import CACHES, cache_files, cache_problem
from hologram.storage.dbfile import set_aside

__all__ = ["CacheCheck", "check_caches"]

log = logging.getLogger("hologram.doctor")


def check_caches(data_dir: Path) -> list[str]:
    """Check each derived cache of `data_dir`; set the damaged ones aside. Returns the warning of each (logged)."""
    warnings = []
    for path in cache_files(data_dir):
        problem = cache_problem(path)
        if problem is None:
            continue
        aside = set_aside(path)
        warning = f"{path} was damaged ({problem}); kept as {aside.name}, a new one is started: {CACHES[path.name]}"
        log.warning("%s", warning)
        warnings.append(warning)
    return warnings


class CacheCheck:
    """`check_caches` in a thread, started as early as `up` can (after the log file opens)."""

    def __init__(self, data_dir: Path) -> None:
        self._warnings: list[str] = []
        self._thread = threading.Thread(target=self._run, args=(data_dir,), name="hologram-cache-check", daemon=True)
        self._thread.start()

    def _run(self, data_dir: Path) -> None:
        try:
            self._warnings = check_caches(data_dir)
        except Exception:  # a check that fails must not stop the start: the stores still check at open
            log.exception("checking the derived caches failed")

    def wait(self) -> list[str]:
        """Until the check is done; its warnings (each already logged)."""
        self._thread.join()
        return self._warnings
