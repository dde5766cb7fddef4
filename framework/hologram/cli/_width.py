"""Text laid out for a terminal by display width: a CJK character takes two columns, a combining mark none.

Why not ``len``: a table of memory hits mixes English and Chinese, and padding by code points leaves every
Chinese row's columns shifted right by the number of wide characters in it. Widths follow Unicode's East Asian
Width (``W``/``F`` are two columns); control characters are shown as a space so a stored newline cannot break a
row.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

ELLIPSIS = "…"


def char_width(ch: str) -> int:
    if unicodedata.combining(ch):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def width(text: str) -> int:
    """Columns `text` takes in a terminal."""
    return sum(char_width(ch) for ch in text)


def one_line(text: str) -> str:
    """`text` on one line: newlines, tabs and other control characters become single spaces."""
    return " ".join("".join(" " if unicodedata.category(ch)[0] == "C" else ch for ch in text).split())


def cut(text: str, columns: int) -> str:
    """`text` in at most `columns` columns, ending with an ellipsis when something was left out."""
    if width(text) <= columns:
        return text
    out, used = [], 0
    for ch in text:
        w = char_width(ch)
        if used + w > columns - 1:
            break
        out.append(ch)
        used += w
    return "".join(out) + ELLIPSIS


def pad(text: str, columns: int) -> str:
    """`text` followed by spaces up to `columns` columns."""
    return text + " " * max(0, columns - width(text))


def table(rows: Sequence[Sequence[str]], *, total: int | None = None) -> list[str]:
    """Rows as lines, columns padded to their widest cell by display width; the last column is free text, cut
    so each line fits in `total` columns (None: never cut)."""
    if not rows:
        return []
    cells = [[one_line(c) for c in row] for row in rows]
    last = len(cells[0]) - 1
    widths = [max(width(row[i]) for row in cells) for i in range(last)]
    room = None if total is None else max(10, total - sum(widths) - 2 * last)
    lines = []
    for row in cells:
        head = "  ".join(pad(cell, widths[i]) for i, cell in enumerate(row[:last]))
        tail = row[last] if room is None else cut(row[last], room)
        lines.append((head + "  " + tail if last else tail).rstrip())
    return lines
