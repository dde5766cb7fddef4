"""One ranking over L1 ∪ L2 (issue 11): what was pruned long ago comes back in the request when a later input
needs it — with no tool call — at its time position, with its call group, never twice, and counted as an
access so cooling sees it.

Real SessionStore and ColdStore on disk; requests checked by the strict mock's validator.

Mutation checks (done): scoring only L1 (``candidates = ~in_cold`` in ``SessionMemory._prepare``) turns
``test_a_fact_pruned_long_ago_is_in_the_request_that_needs_it`` and the pairing test red; making every
passage the whole text (``PASSAGE_WORDS = 10**6``) turns ``test_a_fact_said_in_passing_in_a_long_message``
red; dropping the once-per-turn guard in ``_first_accesses`` turns the access test red, and so does
``touch`` without ``once=True`` (issue 39: a count per turn).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from hologram.memory.cold.store import ColdStore
from hologram.memory.session_memory import SessionMemory, record_of
from hologram.sessions import SessionStore

from .long_messages import FACT_QUESTION, many_topics, with_fact
from .test_session_memory import EN_TOPICS, ICELAND, assert_valid, long_session, window_for


def turn(mem: SessionMemory, sid: str, text: str, window: int, answer: str = "Noted.") -> list[int]:
    """One turn as the kernel runs it: input stored, request prepared, answer stored. Returns the seqs sent."""
    mem.store.append(sid, "input", {"text": text})
    prepared = asyncio.run(mem.prepare(sid, text, window_tokens=window, fixed_tokens=0))
    assert_valid(prepared)
    mem.store.append(sid, "response", {"content": answer, "reasoning": None})
    return prepared.seqs


def seq_of(mem: SessionMemory, sid: str, needle: str) -> int:
    return next(e.seq for e in mem.store.events(sid) if needle in str(e.data.get("text", "")))


def event_id(mem: SessionMemory, sid: str, seq: int) -> str:
    record = record_of(next(e for e in mem.store.events(sid) if e.seq == seq))
    assert record is not None
    return record.id


def test_a_fact_pruned_long_ago_is_in_the_request_that_needs_it(mem: SessionMemory) -> None:
    sid = long_session(mem.store, turns=30)
    window = window_for(600)
    turn(mem, sid, EN_TOPICS[0], window)  # the long history is pruned against an unrelated input ...
    wifi = seq_of(mem, sid, "BLUE-HERON-42")
    assert event_id(mem, sid, wifi) in mem.cold, "the fact moved to L2"
    for topic in EN_TOPICS[1:]:
        assert wifi not in turn(mem, sid, topic, window)  # ... and stays out while nothing needs it

    mem.store.append(sid, "input", {"text": "What was the wifi password of the lake house?"})
    prepared = asyncio.run(mem.prepare(sid, "What was the wifi password of the lake house?", window_tokens=window,
                                       fixed_tokens=0))  # fmt: skip
    assert wifi in prepared.seqs and event_id(mem, sid, wifi) in prepared.recalled
    assert event_id(mem, sid, wifi) in mem.cold, "sent from L2, still held by L2 (one holder)"
    assert prepared.note is not None and "Recalled from cold context" in str(prepared.note.content)
    assert prepared.kept_tokens <= prepared.budget_tokens
    assert any("BLUE-HERON-42" in str(m.content) for m in prepared.messages)


def test_a_recalled_tool_call_keeps_its_time_position_and_its_result(mem: SessionMemory) -> None:
    sid = long_session(mem.store, turns=30)
    window = window_for(600)
    turn(mem, sid, EN_TOPICS[0], window)
    events = mem.store.events(sid)
    result = next(e for e in events if e.kind == "tool_result" and e.call_id == "ice")
    call = next(e for e in events if e.seq == result.call_of)
    assert event_id(mem, sid, result.seq) in mem.cold and event_id(mem, sid, call.seq) in mem.cold

    question = "Is the volcano in Iceland active in March, with snow?"
    mem.store.append(sid, "input", {"text": question})
    prepared = asyncio.run(mem.prepare(sid, question, window_tokens=window, fixed_tokens=0))
    assert result.seq in prepared.seqs and call.seq in prepared.seqs, "the call group comes back whole"
    assert prepared.seqs == sorted(prepared.seqs), "every event at its place in time"
    assert_valid(prepared)  # the strict validator: no orphan result, no unanswered call


def test_recall_never_doubles_what_l1_already_holds(mem: SessionMemory) -> None:
    sid = long_session(mem.store, turns=30)
    window = window_for(600)
    for topic in EN_TOPICS[:3]:
        turn(mem, sid, topic, window)
    mem.store.append(sid, "input", {"text": ICELAND})
    prepared = asyncio.run(mem.prepare(sid, ICELAND, window_tokens=window, fixed_tokens=0))
    assert prepared.recalled, "this input does bring something back"
    assert len(set(prepared.seqs)) == len(prepared.seqs)
    assert set(prepared.recalled) <= set(mem.cold.ids()), "only L2's events count as recalled"
    l1 = {e.seq for e in mem.l1_events(sid)}
    assert not l1 & set(prepared.recalled_seqs)


def test_a_recalled_event_counts_one_access_per_session(mem: SessionMemory) -> None:
    """Its count once per session (issue 39: counting every turn kept events recalled often out of L3 forever),
    its last access every turn (an event in use is not idle)."""
    sid = long_session(mem.store, turns=30)
    window = window_for(600)
    turn(mem, sid, EN_TOPICS[0], window)
    wifi = event_id(mem, sid, seq_of(mem, sid, "BLUE-HERON-42"))
    assert mem.cold.access(wifi) == (0, None)
    question = "What was the wifi password of the lake house?"
    mem.store.append(sid, "input", {"text": question})
    for _ in range(3):  # three requests in one turn (tool steps): one access
        assert wifi in asyncio.run(mem.prepare(sid, question, window_tokens=window, fixed_tokens=0)).recalled
    count, last = mem.cold.access(wifi)
    assert count == 1 and last is not None
    turn(mem, sid, question, window)  # a new turn that needs it again: no more count, a later time
    again = mem.cold.access(wifi)
    assert again[0] == 1 and again[1] is not None and again[1] >= last


def test_a_recalled_event_is_not_rewritten_turn_after_turn(mem: SessionMemory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Within ``TOUCH_AGAIN_S`` of its last written access, an event recalled again is not written again (the
    soak's same L2 events won every turn, and each turn's touch rewrote rows all over cold.db, issue 39 item 7);
    after it, it is. Mutation-checked: without the skip in ``_first_accesses`` the second turn writes it."""
    sid = long_session(mem.store, turns=30)
    window = window_for(600)
    turn(mem, sid, EN_TOPICS[0], window)
    wifi = event_id(mem, sid, seq_of(mem, sid, "BLUE-HERON-42"))
    written: list[list[str]] = []
    touch = mem.cold.touch
    monkeypatch.setattr(mem.cold, "touch", lambda ids, **kw: (written.append(list(ids)), touch(ids, **kw))[1])
    question = "What was the wifi password of the lake house?"
    seqs = turn(mem, sid, question, window)
    assert seq_of(mem, sid, "BLUE-HERON-42") in seqs and any(wifi in w for w in written)
    first = mem.cold.access(wifi)
    written.clear()
    seqs = turn(mem, sid, question, window)  # recalled again, a moment later
    assert seq_of(mem, sid, "BLUE-HERON-42") in seqs, "still recalled"
    assert not any(wifi in w for w in written) and mem.cold.access(wifi) == first
    monkeypatch.setattr("hologram.memory.session_memory.TOUCH_AGAIN_S", 0.0)
    turn(mem, sid, question, window)  # past the interval: written again
    assert any(wifi in w for w in written)


def test_preview_changes_nothing(mem: SessionMemory) -> None:
    sid = long_session(mem.store, turns=30)
    window = window_for(600)
    turn(mem, sid, EN_TOPICS[0], window)
    cold_before = mem.cold.ids()
    wifi = event_id(mem, sid, seq_of(mem, sid, "BLUE-HERON-42"))
    shown = asyncio.run(mem.preview(sid, "the lake house wifi password?", window_tokens=window, fixed_tokens=0))
    assert wifi in shown.recalled
    assert mem.cold.ids() == cold_before and mem.cold.access(wifi) == (0, None)


def test_a_fact_said_in_passing_in_a_long_message_comes_back(mem: SessionMemory) -> None:
    """Every turn is as long as the one holding the fact and talks about the same subjects: the message is
    found by its passage that says the fact, not by its average."""
    sid = "s1"
    mem.store.create_session("cli", sid)
    window = window_for(1200)  # the 10 pinned recent events and about two long messages
    turn(mem, sid, with_fact(0), window)
    holder = seq_of(mem, sid, "ceramic frog")
    for i in range(1, 25):
        turn(mem, sid, many_topics(i), window)
    assert event_id(mem, sid, holder) in mem.cold
    question = FACT_QUESTION
    mem.store.append(sid, "input", {"text": question})
    prepared = asyncio.run(mem.prepare(sid, question, window_tokens=window, fixed_tokens=0))
    assert holder in prepared.seqs, "the long message with the fact is in the request"


def test_a_long_message_is_scored_by_its_best_passage_not_its_average(mem: SessionMemory) -> None:
    """With the installed embedding model: averaged over the whole message the fact's topic drowns (the
    holder is *not* the closest message), by its best passage it is the closest."""
    from hologram.memory.embed.embedder import load_embedder

    embedder = load_embedder()
    if embedder is None:
        pytest.skip("no embedding model installed")
    mem.embedder = embedder
    sid = "s1"
    mem.store.create_session("cli", sid)
    texts = [with_fact(0), *(many_topics(i) for i in range(1, 8))]
    for text in texts:
        mem.store.append(sid, "input", {"text": text})
    asyncio.run(mem.index(sid))
    state = mem._sessions[sid]
    assert state.index.passages > len(texts), "long messages are split into passages"
    question = FACT_QUESTION
    query = asyncio.run(mem._query(sid, state, question, now=0, current_input=None))
    by_passage, mask = state.index._cosine(query)
    assert mask.all()
    whole = embedder.embed(texts) @ query.dense
    assert int(whole.argmax()) != 0, "the test's premise: by its average the holder is not the closest"
    assert int(by_passage.argmax()) == 0, "by its best passage it is"


def test_vectors_survive_a_restart_and_a_damaged_cache_is_set_aside(tmp_path: Path) -> None:
    """After a restart the session index is rebuilt from the log, its vectors read back from vectors.db:
    nothing is embedded again. A smashed vectors.db costs only the recomputation."""
    from hologram.memory.embed.vector_cache import VECTORS_DB, VectorCache

    from .embedders import BagOfWordsEmbedder

    def memory() -> SessionMemory:
        return SessionMemory(
            SessionStore(tmp_path / "sessions.db"), ColdStore(tmp_path / "cold.db"), BagOfWordsEmbedder(),
            vectors=VectorCache(tmp_path / VECTORS_DB),
        )  # fmt: skip

    first = memory()
    sid = long_session(first.store, turns=10)
    computed = asyncio.run(first.index(sid))
    assert computed > 0 and computed == first._sessions[sid].index.passages
    asyncio.run(first.aclose())

    again = memory()
    assert asyncio.run(again.index(sid)) == 0, "read back, not embedded again"
    assert isinstance(again.embedder, BagOfWordsEmbedder) and again.embedder.calls == 0
    assert again._sessions[sid].index.pending(10**6) == []
    asyncio.run(again.aclose())

    (tmp_path / VECTORS_DB).write_bytes(b"not a database at all" * 100)
    third = memory()
    assert asyncio.run(third.index(sid)) == computed, "computed again from a fresh cache"
    assert list(tmp_path.glob(f"{VECTORS_DB}.damaged-*")), "the damaged file was kept aside, not deleted"
    asyncio.run(third.aclose())


def test_coldcontext_query_searches_by_text_time_range_and_tool(mem: SessionMemory) -> None:
    """The explicit search, over this session's L2 with the request ranking: by text, by time, by tool —
    and what it finds moves back to L1."""
    from datetime import datetime, timezone

    from hologram.agent.tools import ToolInvocation

    sid = long_session(mem.store, turns=30)
    window = window_for(600)
    turn(mem, sid, EN_TOPICS[0], window)
    handler = mem.kernel_tool().handler

    def call(**arguments: object) -> dict[str, object]:
        return dict(asyncio.run(handler(dict(arguments), ToolInvocation("c", sid))))

    assert call()["is_error"] is True, "nothing to search by"
    bad = call(since="last tuesday")
    assert bad["is_error"] is True and "ISO" in str(bad["content"]), "the error says the format"
    future = datetime.now(timezone.utc).replace(year=datetime.now().year + 1).isoformat()
    assert "Nothing" in str(call(query="wifi", since=future)["content"]), "a range with nothing in it"

    weather = call(tool="weather")
    assert weather["is_error"] is False and "Iceland in March" in str(weather["content"])
    events = mem.store.events(sid)
    result = next(e for e in events if e.kind == "tool_result" and e.call_id == "ice")
    l1 = {e.seq for e in mem.l1_events(sid)}
    assert result.seq in l1 and result.call_of in l1, "moved back with its call"

    found = call(query="lake house wifi password")
    assert "BLUE-HERON-42" in str(found["content"])


def test_memory_keeps_only_the_recently_used_sessions(tmp_path: Path) -> None:
    """A kernel serving many chats must not grow with every chat it saw: beyond `max_sessions` the least
    recently used session's index is forgotten, and rebuilt from the log — the same request — when used."""
    store = SessionStore(tmp_path / "sessions.db")
    mem = SessionMemory(store, ColdStore(tmp_path / "cold.db"), None, max_sessions=3)
    window = window_for(600)
    first = long_session(store, sid="s0", turns=30)
    before = asyncio.run(mem.preview(first, "the lake house wifi", window_tokens=window, fixed_tokens=0))
    for i in range(1, 6):
        sid = long_session(store, sid=f"s{i}", turns=2)
        asyncio.run(mem.preview(sid, "hello", window_tokens=window, fixed_tokens=0))
    assert len(mem._sessions) == 3 and "s0" not in mem._sessions
    after = asyncio.run(mem.preview(first, "the lake house wifi", window_tokens=window, fixed_tokens=0))
    assert after.seqs == before.seqs and "s0" in mem._sessions
    mem.cold.close()
    store.close()
