"""docs/authoring.md's table of the built-in plugins' stage hooks (stage → plugins in order, with their ``order``)
is what the built-ins' lock says: a plugin author reads their hook's place from it, so a built-in that starts
hooking a stage must show up there.

Mutation check (done): a `[stages] on_input = { order = 10 }` added to manifests/notes.toml turns it red, naming
the row (``on_input``: ``notes (10)`` in the lock, ``none`` on the page).
"""

from __future__ import annotations

import re
from pathlib import Path

from hologram.base.protocol import STAGE_NAMES
from hologram.plan.lock import Sources, build, read_lock

PAGE = Path(__file__).resolve().parents[2] / "docs" / "authoring.md"
MARKER = "<!-- the built-ins' hooks, per stage: tests/docs/test_builtin_stages.py holds this table to their lock -->"


def documented() -> dict[str, str]:
    text = PAGE.read_text(encoding="utf-8")
    table = text[text.index(MARKER) :].split("\n\n", 1)[0]
    return {m[1]: m[2].strip() for m in re.finditer(r"^\| `(\w+)` \| (.*) \|$", table, re.M)}


def test_the_table_of_the_builtins_hooks_is_their_lock(tmp_path: Path) -> None:
    lock_path = tmp_path / "hologram.lock"
    build(lock_path, Sources(builtins=True, installed=False))
    lock = read_lock(lock_path)
    orders = {p.name: p.stages for p in lock.plugins}
    rows = {}
    for stage in STAGE_NAMES:
        names = lock.stages.get(stage, ())
        rows[stage] = ", ".join(f"{name} ({orders[name][stage].order})" for name in names) or "none"
    assert documented() == rows
