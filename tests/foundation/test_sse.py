"""`hologram.base.sse`, the one SSE parser (the LLM streams and the turn API over HTTP both use it).

Mutation checks (done): not joining data lines with LF, resetting ``last_id`` at each dispatch, and accepting a
``retry`` that is not all digits each turned a test here red.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from hologram.base.sse import SseEvent, SseParser, sse_events


def parse(raw: list[str], *, dispatch_incomplete: bool = False) -> list[SseEvent]:
    async def lines() -> AsyncIterator[str]:
        for line in raw:
            yield line

    async def collect() -> list[SseEvent]:
        return [e async for e in sse_events(lines(), dispatch_incomplete=dispatch_incomplete)]

    return asyncio.run(collect())


def test_comments_skipped_crlf_accepted_multi_line_data_joined_and_a_cut_off_event_dropped() -> None:
    raw = [": keepalive", "id: 7\r", 'data: {"a":', "data: 1}", "", "", "data: x", "", "id: 9", "data: cut"]
    events = parse(raw)
    assert [(e.id, e.data) for e in events] == [("7", '{"a":\n1}'), (None, "x")]
    assert events[1].last_id == "7", "the last event id persists to later events"


def test_an_incomplete_last_event_is_kept_when_asked() -> None:
    """Some OpenAI-compatible servers end with ``data: [DONE]`` and no blank line."""
    assert [e.data for e in parse(["data: a", "", "data: [DONE]"], dispatch_incomplete=True)] == ["a", "[DONE]"]


def test_event_names_default_to_message_and_do_not_leak_into_the_next_event() -> None:
    events = parse(["event: ping", "data: 1", "", "data: 2", ""])
    assert [(e.event, e.data) for e in events] == [("ping", "1"), ("message", "2")]


def test_retry_only_digits_and_ids_with_nul_ignored() -> None:
    parser = SseParser()
    for line in ("retry: 1000", "retry: 5s", "id: ok", "id: b\0d", "data:nospace", ""):
        last = parser.feed(line)
    assert last == SseEvent("nospace", "message", "ok", "ok", 1000)
    assert parser.retry_ms == 1000


def test_a_field_without_colon_and_empty_data_follow_the_rules() -> None:
    """``data`` alone is an empty data line (dispatched as ""); a block of only comments dispatches nothing."""
    assert [e.data for e in parse(["data", "", ": only a comment", "", "data:", "data:", ""])] == ["", "\n"]
