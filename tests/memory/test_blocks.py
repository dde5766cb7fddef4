"""Blocks and stable IDs: every form of the same instant gives the same ID, a missing time gives a fixed one.

Mutation-checked (each mutation made by hand in ``blocks.py``, the named test failed, then reverted):
``normalise_timestamp`` returning ``time.time()`` for None/0 → ``test_missing_or_zero_timestamp_is_a_fixed_sentinel``
and ``test_untimed_event_ids_are_stable_across_rebuilds``; treating every number as seconds →
``test_same_instant_in_any_form_gives_the_same_id``; dropping the ordinal from ``block_id`` →
``test_identical_blocks_in_one_event_get_distinct_ids``; merging reasoning into the response block →
``test_reasoning_is_its_own_block_and_counts``.
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hologram.memory.cold.blocks import NO_TIME, EventRecord, build_event, normalise_timestamp
from hologram.memory.rank.events import event_text
from hologram.memory.text.tokens import estimate_tokens

UTC = timezone.utc


@pytest.mark.parametrize("value", [None, 0, 0.0, -1, -1.5, float("nan"), float("inf"), "", "  ", "garbage", "0", False])
def test_missing_or_zero_timestamp_is_a_fixed_sentinel(value: object) -> None:
    assert normalise_timestamp(value) == NO_TIME  # type: ignore[arg-type]


def test_same_instant_in_common_forms() -> None:
    want = 1_700_000_000_123
    forms: list[object] = [
        1_700_000_000.123,
        1_700_000_000_123,
        1_700_000_000_123_000,
        1_700_000_000_123_000_000,
        "1700000000.123",
        "2023-11-14T22:13:20.123Z",
        "2023-11-14T22:13:20.123+00:00",
        "2023-11-15T06:13:20.123+08:00",
        "2023-11-14T22:13:20.123",  # naive: UTC
        datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=UTC),
        datetime(2023, 11, 14, 22, 13, 20, 123000),
    ]
    assert [normalise_timestamp(f) for f in forms] == [want] * len(forms)  # type: ignore[arg-type]


@settings(max_examples=200, deadline=None)
@given(ms=st.integers(min_value=1, max_value=4_000_000_000_000), text=st.text(max_size=40))
def test_same_instant_in_any_form_gives_the_same_id(ms: int, text: str) -> None:
    dt = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms)
    forms: list[object] = [ms / 1000, ms, ms * 1000, dt, dt.isoformat(), dt.isoformat().replace("+00:00", "Z")]
    if ms >= 100_000_000_000:  # below that, an integer reads as seconds (ms-only forms of 1970-73 are ambiguous)
        ids = {build_event(timestamp=f, input=text or "x").id for f in forms}  # type: ignore[arg-type]
        assert len(ids) == 1
    else:
        assert normalise_timestamp(ms / 1000) == normalise_timestamp(dt) == ms


def test_untimed_event_ids_are_stable_across_rebuilds() -> None:
    a = build_event(timestamp=None, input="hello", response="hi")
    time.sleep(0.01)
    b = build_event(timestamp=0, input="hello", response="hi")
    c = build_event(timestamp="", input="hello", response="hi")
    assert a.id == b.id == c.id
    assert [x.id for x in a.blocks] == [x.id for x in b.blocks] == [x.id for x in c.blocks]
    assert a.ts_ms == NO_TIME


def test_ids_depend_on_content_time_and_origin() -> None:
    base = build_event(timestamp=1_700_000_000, input="ok")
    assert build_event(timestamp=1_700_000_001, input="ok").id != base.id
    assert build_event(timestamp=1_700_000_000, input="ok!").id != base.id
    assert build_event(timestamp=1_700_000_000, input="ok", origin="s:2").id != base.id
    # where it is held, how often it was used, and its vectors are not content
    assert build_event(timestamp=1_700_000_000, input="ok", session="other", channel="web").id == base.id
    assert base.accessed(5.0).id == base.id


def test_identical_blocks_in_one_event_get_distinct_ids() -> None:
    rec = build_event(
        timestamp=1,
        tool_calls=[{"id": "c1", "name": "ls", "arguments": {}}, {"id": "c1", "name": "ls", "arguments": {}}],
    )
    assert len({b.id for b in rec.blocks}) == 2


def test_reasoning_is_its_own_block_and_counts() -> None:
    rec = build_event(timestamp=1_700_000_000, input="what is 2+2", reasoning="add two and two", response="4")
    assert [b.kind for b in rec.blocks] == ["input", "reasoning", "response"]
    assert rec.block("response")[0].text == "4"
    assert "add two and two" in rec.text
    assert rec.text == event_text(input="what is 2+2", reasoning="add two and two", response="4")
    assert rec.tokens == estimate_tokens(rec.text)
    assert rec.terms is not None and "add" in rec.terms.counts
    assert rec.to_memory_event().tokens > build_event(timestamp=1_700_000_000, input="what is 2+2", response="4").tokens


def test_all_block_kinds_and_order() -> None:
    rec = build_event(
        timestamp=1_700_000_000,
        input="show me",
        reasoning="r",
        response="calling",
        tool_calls=[{"id": "c1", "name": "files.read", "arguments": {"path": "a.txt"}}],
        tool_results=[{"call_id": "c1", "name": "files.read", "content": "hello"}],
        media=[{"text": "a cat on a mat", "mime": "image/png", "ref": "arena:12"}],
        channel="web",
        partner="alice",
        scene="chan:web",
    )
    assert [b.kind for b in rec.blocks] == ["input", "reasoning", "response", "tool_call", "tool_result", "media"]
    assert rec.blocks[3].meta == {"call_id": "c1", "name": "files.read"}
    assert rec.blocks[3].text == 'files.read({"path": "a.txt"})'
    assert rec.blocks[5].meta == {"mime": "image/png", "ref": "arena:12"}
    assert "a cat on a mat" in rec.text
    assert rec.ids_consistent()


def test_editing_content_breaks_id_consistency() -> None:
    from dataclasses import replace

    rec = build_event(timestamp=1_700_000_000, input="a", response="b")
    edited = replace(rec, blocks=(rec.blocks[0], replace(rec.blocks[1], text="c")))
    assert not edited.ids_consistent()
    assert not replace(rec, ts_ms=rec.ts_ms + 1).ids_consistent()


def test_sort_key_orders_untimed_events_by_origin() -> None:
    a = build_event(timestamp=None, input="x", origin="s:000002")
    b = build_event(timestamp=None, input="x", origin="s:000001")
    c = build_event(timestamp=5, input="x")
    assert [r.origin for r in sorted([c, a, b], key=EventRecord.sort_key)] == ["s:000001", "s:000002", None]
