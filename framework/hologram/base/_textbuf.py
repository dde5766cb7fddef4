"""A streamed text kept as a few blocks, not as the list of its deltas.

A model's answer arrives a few characters at a time: a 120 KB answer is ~30k deltas. Kept as a list until the
answer ends (the stream's accumulator, the turn's partial answer, the open item's text: three lists of the same
strings), those ~30k small strings live for the whole answer, allocated one by one between the turn's
short-lived objects (each delta's parsed chunk, its event, its JSON), and hold the allocator's pools and arenas
that those objects used (issue 41: the kernel's pymalloc arenas after long turns). `TextBuffer` joins every
`BLOCK_PIECES` deltas into one string (a block of a few KB, which the C allocator holds, not pymalloc), so at most
that many deltas are alive at a time. (`io.StringIO` would not do: it keeps a reference to every string written.)
"""

from __future__ import annotations

BLOCK_PIECES = 256
"""Deltas joined into one block: ~1-3 KB of text, beyond pymalloc's 512-byte objects."""


class TextBuffer:
    """Text appended piece by piece and read back whole (`text`); true once anything non-empty was appended."""

    __slots__ = ("_blocks", "_length", "_pieces")

    def __init__(self) -> None:
        self._blocks: list[str] = []
        self._pieces: list[str] = []
        self._length = 0

    def append(self, text: str) -> None:
        if not text:
            return
        self._pieces.append(text)
        self._length += len(text)
        if len(self._pieces) >= BLOCK_PIECES:
            self._blocks.append("".join(self._pieces))
            self._pieces.clear()

    def __len__(self) -> int:
        return self._length

    def __bool__(self) -> bool:
        return self._length > 0

    def text(self) -> str:
        return "".join(self._blocks) + "".join(self._pieces)
