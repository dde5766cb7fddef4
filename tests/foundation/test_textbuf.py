"""`hologram.base._textbuf.TextBuffer`: a streamed answer kept as one buffer reads back exactly what was appended,
and does not keep the deltas themselves alive."""

from __future__ import annotations

import weakref

from hologram.base._textbuf import BLOCK_PIECES, TextBuffer
from hologram.llm.stream import StreamAccumulator


class _Str(str):
    """A str that can be weakly referenced (to see whether the buffer keeps it)."""


def test_a_text_buffer_reads_back_what_was_appended_byte_for_byte() -> None:
    pieces = ["line 1\r\n", "第二行\n", "", "\r", "emoji 🙂 ", "end"]
    buffer = TextBuffer()
    assert not buffer and len(buffer) == 0 and buffer.text() == ""
    buffer.append("")
    assert not buffer  # nothing but empty deltas: still nothing said
    for piece in pieces:
        buffer.append(piece)
    assert buffer and buffer.text() == "".join(pieces) and len(buffer) == len("".join(pieces))  # no \r\n translation


def test_at_most_a_block_of_deltas_is_kept_alive() -> None:
    """Every `BLOCK_PIECES` deltas are joined into one string: the deltas themselves are not kept (a long answer's
    ~30k small strings pinned the allocator's arenas, issue 41). Mutation check (done): `append` never joining
    (the pieces kept in a list) turns this red."""
    buffer = TextBuffer()
    refs = []
    for i in range(BLOCK_PIECES * 3):
        delta = _Str(f"第{i % 10}")
        refs.append(weakref.ref(delta))
        buffer.append(delta)
    del delta
    alive = sum(ref() is not None for ref in refs)
    assert alive == 0, f"{alive} deltas still referenced"
    assert (
        buffer.text() == "".join(f"第{i % 10}" for i in range(BLOCK_PIECES * 3)) and len(buffer) == 2 * BLOCK_PIECES * 3
    )


def test_the_stream_accumulator_joins_its_content_and_reasoning() -> None:
    acc = StreamAccumulator()
    assert not acc.has_output and acc.reasoning_text() is None
    for i in range(2000):
        acc.add_content(f"{i % 10}字")
    acc.add_reasoning("why")
    assert acc.has_output and acc.text() == "".join(f"{i % 10}字" for i in range(2000))
    assert acc.reasoning_text() == "why"
