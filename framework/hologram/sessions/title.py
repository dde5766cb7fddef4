"""A new session's title, made from its first input (issue 41): every client's session list (the page, `hologram
sessions`, an editor over ACP) showed "(untitled)" for every session, since only an explicit ``sessions/rename``
gave one. The kernel sets it when the first turn of a new session starts, so all clients see the same title,
and ``sessions/rename`` still replaces it.

The title is the first line of the input that has something in it, whitespace collapsed, cut at
`TITLE_CHARS` characters (at a word boundary when there is one near the end, so an English title does not stop
mid-word; Chinese has no spaces and is cut at the count) with "…". A turn of input parts takes its text parts,
or the first file's name; an image alone gives no title (there is nothing to read it from).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

TITLE_CHARS = 60  # what a session list shows in one line; `sessions/rename` allows up to 200
_WORD_BACK = 20  # how far back from the cut a space may be to cut there instead


def title_from_input(text: str | None, parts: Sequence[Mapping[str, Any]] | None = None) -> str:
    """The title a session gets from its first input; "" when the input has no text to take it from."""
    source = text or ""
    if not source.strip() and parts:
        texts = [str(p.get("text") or "") for p in parts if p.get("type") == "text"]
        source = "\n".join(t for t in texts if t.strip())
        if not source:
            source = next((str(p.get("name") or "") for p in parts if p.get("type") == "file"), "")
    line = next((" ".join(ln.split()) for ln in source.splitlines() if ln.strip()), "")
    if len(line) <= TITLE_CHARS:
        return line
    cut = line[:TITLE_CHARS]
    space = cut.rfind(" ")
    if space >= TITLE_CHARS - _WORD_BACK:
        cut = cut[:space]
    return cut.rstrip(" ,.;:!?，。；：！？、") + "…"
