"""The figures the guards hold the product to, read from docs/guards.md — one place, for people and tests.

A bound is a row ``| `name` | number | ... |`` of the table there; the import allow-list is the ``text`` block
under the heading ``## Imports of `hologram --version```. A test failing here names the file and the row.
"""

from __future__ import annotations

import re
from pathlib import Path

GUARDS_MD = Path(__file__).resolve().parents[2] / "docs" / "guards.md"
IMPORTS_HEADING = "## Imports of `hologram --version`"


def bound(name: str) -> float:
    """The documented bound ``name`` (a row of the table in docs/guards.md)."""
    for line in GUARDS_MD.read_text(encoding="utf-8").splitlines():
        match = re.match(rf"\|\s*`{re.escape(name)}`\s*\|\s*([0-9][0-9,._]*)\s*\|", line)
        if match:
            return float(match.group(1).replace(",", "").replace("_", ""))
    raise AssertionError(f"{GUARDS_MD}: no row | `{name}` | NUMBER | in its table; add it")


def allowed_imports(heading: str = IMPORTS_HEADING) -> set[str]:
    """The modules a command may import (docs/guards.md, the text block under `heading`; by default
    `hologram --version`'s)."""
    text = GUARDS_MD.read_text(encoding="utf-8")
    if heading not in text:
        raise AssertionError(f"{GUARDS_MD}: no heading {heading!r}; the import allow-list lives under it")
    block = re.search(r"```text\n(.*?)```", text.split(heading, 1)[1], re.S)
    if block is None:
        raise AssertionError(f"{GUARDS_MD}: no ```text block under {heading!r}")
    return {line.split("#")[0].strip() for line in block.group(1).splitlines()} - {""}
