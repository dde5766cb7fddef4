"""How much memory the kernel's SQLite connections may hold: page caches and prepared statements, bounded.

Why this exists (issue 22's soak: the kernel's anonymous memory grew for thousands of turns, and Python's own
heap did not): SQLite's memory is outside what ``tracemalloc`` sees, and in a long soak it grew ~4.5 MB over
800 turns (``sqlite3_status64`` read inside the kernel during ``tools/bench/sweep.py --soak 2000``). Two parts:

* **Page caches.** Each connection keeps up to ``cache_size`` pages (SQLite's default: 2,000 KiB) of its
  file, and the kernel holds seven connections to files that grow by ~20 kB a turn, so each cache fills slowly
  to its bound: ~12 MB. (``across.db``'s connection, added later, had no bound: in the 10,000-turn soak its
  cache was still filling towards 2,000 KiB after thousands of turns, most of the kernel's growth after turn
  1,000 — ``tools/bench/soak_diag.py`` reads each connection's cache inside the kernel.) Most of what they
  cache is written once and rarely read again (the cold store, the vectors, the log's old events); a page not
  cached is one ``pread`` from the OS's page cache (microseconds).
  :func:`limit_cache` sets a smaller bound, :data:`CACHE_KIB`; the two stores a turn only appends a few rows to
  and reads a few rows of by key (``across.db``, ``scenes.db``) get :data:`SMALL_CACHE_KIB`: at 512 KiB theirs
  were the last caches to fill, between soak turns 1,000 and 1,500 (+0.2 MB after the soak's baseline,
  ``tools/bench/soak_diag.py``), and at 128 KiB a turn's writes cost the same CPU (0.62 ms a turn of scene and
  across writes either way, 4,000 soak-like turns).
* **Prepared statements.** Python's ``sqlite3`` keeps the last 128 distinct SQL texts of each connection
  prepared, and ``WHERE id IN (?, ?, …)`` with one placeholder per value is a new text for every count
  from 1 to 500: over a long session the cache filled with 128 statements of up to 500 placeholders each
  (their programs grow with the list). :func:`in_chunks` pads every list to one of a few sizes (powers of
  two, and the chunk size itself) by repeating its last value — ``IN`` is set membership, so a repeated value
  changes no row a ``SELECT``, ``UPDATE`` or ``DELETE`` reaches — so each query form has at most
  :data:`IN_SIZES` texts.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from typing import TypeVar

__all__ = ["CACHE_KIB", "CHUNK", "IN_SIZES", "SMALL_CACHE_KIB", "in_chunks", "limit_cache", "marks"]

T = TypeVar("T")

CACHE_KIB = 512
"""Page cache of each kernel connection, KiB (SQLite's default is 2,000)."""

SMALL_CACHE_KIB = 128
"""Page cache of a connection whose turn work is a few keyed rows (``across.db``, ``scenes.db``), KiB: small
enough that it is full within the first few hundred turns, not thousands of turns later (module docstring)."""

CHUNK = 500
"""Values in one ``IN (…)`` list at most (SQLite allows 32,766 variables; 500 keeps a statement small)."""


def _sizes(chunk: int) -> tuple[int, ...]:
    out, n = [], 1
    while n < chunk:
        out.append(n)
        n *= 2
    return (*out, chunk)


IN_SIZES = _sizes(CHUNK)
"""The lengths an ``IN (…)`` list is padded to: 1, 2, 4, …, 256 and :data:`CHUNK` (10 texts a query form)."""


def limit_cache(db: sqlite3.Connection, kib: int = CACHE_KIB) -> None:
    """Bound `db`'s page cache to `kib` KiB (a negative ``cache_size`` is KiB, whatever the page size)."""
    db.execute(f"PRAGMA cache_size=-{int(kib)}")


def in_chunks(items: Sequence[T], size: int = CHUNK) -> Iterator[list[T]]:
    """`items` in chunks of at most `size`, each padded to the next of :func:`_sizes` (`size`) by repeating
    its last value: the SQL of ``IN ({marks(len(chunk))})`` then takes one of a few texts (module docstring).
    Use only where a repeated value is harmless (``IN`` lists); an empty `items` yields nothing."""
    sizes = IN_SIZES if size == CHUNK else _sizes(size)
    for i in range(0, len(items), size):
        chunk = list(items[i : i + size])
        target = next(n for n in sizes if n >= len(chunk))
        chunk += [chunk[-1]] * (target - len(chunk))
        yield chunk


def marks(n: int) -> str:
    """``?, ?, …`` for an ``IN`` list of `n` values."""
    return ", ".join("?" * n)
