"""Find the line of a key in TOML text, so validation errors can say `file:line`.

`tomllib` does not keep positions, and a full round-trip parser would be a heavy dependency for one
feature. Manifests are small and their structure is shallow (tables, arrays of tables, inline tables), so a
line scanner that tracks the current table header is enough to point at the right line in practice; when it
cannot, callers fall back to the nearest enclosing table or to no line at all.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(r"""^\s*("[^"]*"|'[^']*'|[A-Za-z0-9_.-]+)\s*=""")


def _strip_quotes(key: str) -> str:
    return key[1:-1] if key[:1] in "\"'" else key


def locate(text: str, path: Sequence[str | int]) -> int | None:
    """Best-effort 1-based line of `path` (e.g. ("tools", 1, "name")) in `text`, or None."""
    lines = text.splitlines()
    table: list[str | int] = []
    array_counts: dict[tuple[str | int, ...], int] = {}
    best_line: int | None = None
    best_depth = 0
    for number, line in enumerate(lines, start=1):
        header = _HEADER.match(line)
        if header:
            names: list[str | int] = [_strip_quotes(p.strip()) for p in header.group(2).split(".")]
            if header.group(1) == "[[":
                key = tuple(names)
                array_counts[key] = array_counts.get(key, -1) + 1
                names.append(array_counts[key])
            table = names
            depth = _match_depth(table, path)
            if depth > best_depth:
                best_line, best_depth = number, depth
            continue
        key_match = _KEY.match(line)
        if not key_match:
            continue
        dotted: list[str | int] = [_strip_quotes(k) for k in key_match.group(1).split(".")]
        full = table + dotted
        depth = _match_depth(full, path)
        if depth > best_depth:
            best_line, best_depth = number, depth
        # Keys inside an inline table on this line: `run = { module = "x" }`.
        if depth == len(full) and depth < len(path):
            rest = path[depth:]
            if isinstance(rest[0], str) and re.search(rf"[{{,]\s*{re.escape(rest[0])}\s*=", line):
                best_line, best_depth = number, depth + 1
    return best_line


def _match_depth(candidate: Sequence[str | int], path: Sequence[str | int]) -> int:
    depth = 0
    for a, b in zip(candidate, path, strict=False):
        if a != b:
            break
        depth += 1
    # A header deeper than the path, or diverging before its end, does not locate the path.
    return depth if depth == len(candidate) else 0
