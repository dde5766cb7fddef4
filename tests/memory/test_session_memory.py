"""SessionMemory: L1 = session log minus L2, prune → demote, coldcontext_query → back in L1, overflow path.

Everything runs on a real SessionStore and a real ColdStore in a tmp dir. The message lists are checked with
the strict mock's validator (no normalising in between), so an orphan result or an unanswered call after
pruning would be the 400 a vendor returns.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from mock_llm.validate import validate

from hologram.agent.tools import ToolInvocation
from hologram.llm import Message
from hologram.llm.wire import STANDARD_MESSAGE_FIELDS, message_to_wire
from hologram.memory import session_memory as sm
from hologram.memory.cold.overflow import OverflowGuard, PromptTooLargeError
from hologram.memory.cold.store import ColdStore
from hologram.memory.session_memory import Prepared, SessionMemory, record_of
from hologram.sessions import Event, SessionStore, messages_from_events

from .embedders import BagOfWordsEmbedder

WIFI = "By the way, the wifi password for the lake house is BLUE-HERON-42, write it down."
PASSPORT = "我的护照号码是 E12345678，下个月去东京要用。"
ICELAND = "We planned a volcano trip to Iceland in March, hiking near Fagradalsfjall."

EN_TOPICS = [
    "Can you suggest a recipe for a quick tomato pasta with basil and garlic?",
    "How is the football season going for the local team this year?",
    "Please summarise the quarterly sales report for the northern region.",
    "What is a good stretching routine after running ten kilometres?",
    "Explain how a binary search tree keeps its keys ordered.",
    "Draft an email to the landlord about the broken heating in the flat.",
]
ZH_TOPICS = [
    "今天上海的天气怎么样，需要带伞吗？",
    "帮我写一段Python代码，读取CSV文件并计算平均值。",
    "最近股票市场波动很大，应该怎么配置资产？",
    "推荐几本关于中国历史的好书。",
    "周末想去爬山，北京附近有什么好地方？",
]


def _fill(store: SessionStore, sid: str, i: int) -> None:
    """One turn: input, a response calling two tools, their results, a final answer (5 events)."""
    topic = (EN_TOPICS + ZH_TOPICS)[i % (len(EN_TOPICS) + len(ZH_TOPICS))]
    store.append(sid, "input", {"text": f"{topic} (turn {i})"})
    calls = [
        {"id": f"c{i}a", "name": "search", "arguments": f'{{"q": "{topic[:20]}"}}'},
        {"id": f"c{i}b", "name": "notes", "arguments": '{"op": "list"}'},
    ]
    seq = store.append(
        sid, "response", {"content": None, "reasoning": f"I should look this up: {topic[:30]}", "tool_calls": calls}
    )
    store.add_result(sid, seq, f"c{i}a", {"name": "search", "content": f"results about {topic} " * 3})
    store.add_result(sid, seq, f"c{i}b", {"name": "notes", "content": "no notes yet"})
    store.append(sid, "response", {"content": f"Here is what I found on {topic}", "reasoning": "summarise"})
    store.append(sid, "output", {"text": "delivered"})  # no message: never moves, never counted


def long_session(store: SessionStore, sid: str = "s1", turns: int = 40) -> str:
    """~5 events a turn; the wifi fact first, the Iceland trip (with a tool call) and the passport later,
    each far from the others so that neighbour smoothing does not carry one along with another."""
    store.create_session("cli", sid)
    store.append(sid, "input", {"text": WIFI})
    store.append(sid, "response", {"content": "Noted: BLUE-HERON-42 for the lake house wifi.", "reasoning": "ok"})
    for i in range(turns):
        if i == min(8, turns - 1):
            store.append(sid, "input", {"text": ICELAND})
            seq = store.append(
                sid,
                "response",
                {
                    "content": "",
                    "reasoning": "weather",
                    "tool_calls": [{"id": "ice", "name": "weather", "arguments": "{}"}],
                },
            )
            store.add_result(
                sid, seq, "ice", {"name": "weather", "content": "Iceland in March: cold, snow, volcano active"}
            )
        if i == min(16, turns - 1):
            store.append(sid, "input", {"text": PASSPORT})
            store.append(sid, "response", {"content": "好的，我记住了。", "reasoning": "记住护照号码"})
        _fill(store, sid, i)
    return sid


def total_tokens(mem: SessionMemory, sid: str) -> int:
    return sum(r.tokens + sm.MESSAGE_OVERHEAD for e in mem.l1_events(sid) if (r := record_of(e)) is not None)


def window_for(tokens: int) -> int:
    """The window whose history budget (80 %, nothing fixed) is `tokens`."""
    return int(tokens / 0.8) + 1


def body(messages: Sequence[Message], fields: frozenset[str]) -> dict[str, Any]:
    """The request body as the adapters send it, minus `normalise_history` (which would hide a bad pairing)."""
    wire = [{k: v for k, v in message_to_wire(m).items() if k in fields} for m in messages]
    return {"model": "m", "messages": wire, "stream": False}


def assert_valid(prepared: Prepared) -> None:
    msgs = prepared.request_messages("You are helpful.")
    assert validate(body(msgs, STANDARD_MESSAGE_FIELDS), "openai") is None
    deepseek = STANDARD_MESSAGE_FIELDS | {"reasoning_content"}
    assert validate(body(msgs, deepseek), "deepseek", thinking_default=True) is None  # reasoning on tool calls


def text_of(event: Event) -> str:
    return str(event.data.get("text") or event.data.get("content") or "")


def assert_invariants(mem: SessionMemory, sid: str) -> None:
    everything = mem.store.events(sid)
    l1 = mem.l1_events(sid)
    l1_seqs = [e.seq for e in l1]
    assert l1_seqs == sorted(l1_seqs)  # time (log) order
    records = {e.seq: record_of(e) for e in everything}
    cold_seqs = {s for s, r in records.items() if r is not None and r.id in mem.cold}
    assert set(l1_seqs) | cold_seqs == {e.seq for e in everything}  # nothing lost
    assert not set(l1_seqs) & cold_seqs  # one holder
    assert {r.id for r in records.values() if r is not None and r.id in mem.cold} == set(mem.cold.ids())
    # call groups: a response with calls and all its results are on the same side
    for e in everything:
        if e.kind == "response" and e.data.get("tool_calls"):
            members = [e.seq] + [x.seq for x in everything if x.kind == "tool_result" and x.call_of == e.seq]
            assert len(members) == 1 + len(e.data["tool_calls"])
            sides = {s in cold_seqs for s in members}
            assert len(sides) == 1, f"group of #{e.seq} split"


def test_long_session_keeps_relevant_and_recent_demotes_the_rest(mem: SessionMemory) -> None:
    sid = long_session(mem.store, turns=40)
    events = mem.store.events(sid)
    assert len(events) >= 200
    full = total_tokens(mem, sid)
    window = window_for(full // 4)

    prepared = asyncio.run(
        mem.prepare(sid, "what was the wifi password of the lake house?", window_tokens=window, fixed_tokens=0)
    )

    assert prepared.pruned and prepared.note is not None
    assert prepared.kept_tokens <= prepared.budget_tokens < full
    l1 = mem.l1_events(sid)
    assert any(WIFI in text_of(e) for e in l1), "the relevant old event was demoted"
    memory_events = [e for e in events if e.kind != "output"]
    for e in memory_events[-10:]:
        assert e in l1, f"recent event #{e.seq} demoted"
    assert not any(ICELAND in text_of(e) for e in l1)  # irrelevant and old: moved
    assert_invariants(mem, sid)
    assert prepared.messages == messages_from_events(l1)
    assert_valid(prepared)
    # the note: how many, a snippet of what moved, how to bring it back
    note = prepared.note.content or ""
    assert f"{len(prepared.pruned)} earlier event(s)" in note and "coldcontext_query" in note
    first_moved = mem.cold.peek(prepared.pruned[:1])[0]
    assert " ".join(first_moved.text.split())[:30] in note
    assert prepared.pruned == [r.id for r in mem.cold.peek(prepared.pruned)]  # time order
    assert [e.seq for e in events if (r := record_of(e)) is not None and r.id in prepared.pruned] == (
        prepared.pruned_seqs
    )


def test_chinese_query_keeps_the_chinese_event(mem: SessionMemory) -> None:
    sid = long_session(mem.store, turns=40)
    window = window_for(total_tokens(mem, sid) // 4)
    prepared = asyncio.run(mem.prepare(sid, "我的护照号码是多少？", window_tokens=window, fixed_tokens=0))
    assert prepared.pruned
    assert any(PASSPORT in text_of(e) for e in mem.l1_events(sid))
    assert_invariants(mem, sid)
    assert_valid(prepared)


def test_nothing_moves_while_history_fits(mem: SessionMemory) -> None:
    sid = long_session(mem.store, turns=5)
    prepared = asyncio.run(mem.prepare(sid, "hello", window_tokens=1_000_000, fixed_tokens=2_000))
    assert prepared.pruned == [] and prepared.note is None
    assert prepared.messages == messages_from_events(mem.store.events(sid))
    assert len(mem.cold) == 0


def test_the_log_is_read_incrementally_yet_the_history_is_the_whole_log(
    mem: SessionMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SessionMemory keeps the events it has read and asks the store only for newer ones (a whole-log read
    and decode was O(session), three times per LLM request).
    Mutation checks (done): reading the whole log every time, with or without keeping what was read, turns
    the ``after`` assert red; the messages assert guards the other way to get it wrong (events twice or lost)."""
    sid = long_session(mem.store, turns=5)
    asked: list[int] = []
    read = mem.store.events

    def events(session: str, *, after: int = 0) -> list[Event]:
        asked.append(after)
        return read(session, after=after)

    monkeypatch.setattr(mem.store, "events", events)
    asyncio.run(mem.prepare(sid, "hello", window_tokens=1_000_000, fixed_tokens=2_000))
    last = read(sid)[-1].seq
    _fill(mem.store, sid, 99)
    asked.clear()
    prepared = asyncio.run(mem.prepare(sid, "hello", window_tokens=1_000_000, fixed_tokens=2_000))
    assert asked and all(after >= last for after in asked), asked  # only what was appended since
    assert prepared.messages == messages_from_events(read(sid))
    assert mem.cold_ids(sid) == [] and [e.seq for e in mem.l1_events(sid)] == [e.seq for e in read(sid)]


def test_fixed_tokens_shrink_the_budget(mem: SessionMemory) -> None:
    sid = long_session(mem.store, turns=10)
    full = total_tokens(mem, sid)
    window = window_for(full)  # the history alone just fits ...
    assert not asyncio.run(mem.prepare(sid, "hello", window_tokens=window, fixed_tokens=0)).pruned
    # ... but not with a system prompt and tool schemas of a third of it
    prepared = asyncio.run(mem.prepare(sid, "hello", window_tokens=window, fixed_tokens=full // 3))
    assert prepared.pruned and prepared.kept_tokens <= full - full // 3
    assert_invariants(mem, sid)


def recall(mem: SessionMemory, sid: str | None, query: str) -> dict[str, Any]:
    handler = mem.kernel_tool().handler

    async def call() -> dict[str, Any]:
        return dict(await handler({"query": query, "limit": 3}, ToolInvocation("call-1", sid)))

    return asyncio.run(call())


def test_coldcontext_query_brings_an_event_back_at_its_original_position(mem: SessionMemory) -> None:
    sid = long_session(mem.store, turns=40)
    window = window_for(total_tokens(mem, sid) // 4)
    query = "what was the wifi password of the lake house?"
    asyncio.run(mem.prepare(sid, query, window_tokens=window, fixed_tokens=0))
    ice = next(e for e in mem.store.events(sid) if ICELAND in text_of(e))
    assert ice not in mem.l1_events(sid)

    out = recall(mem, sid, "volcano trip Iceland March")

    assert out["is_error"] is False and "Fagradalsfjall" in out["content"]
    l1 = mem.l1_events(sid)
    assert ice in l1
    before = [e.seq for e in l1 if e.seq < ice.seq]
    after = [e.seq for e in l1 if e.seq > ice.seq]
    assert [e.seq for e in l1] == [*before, ice.seq, *after]  # at its place in time
    assert_invariants(mem, sid)
    # the next prepare of this turn (same input), even a much tighter one, must not send it straight back ...
    tight = window_for(20)  # room for the newest event only
    again = asyncio.run(mem.prepare(sid, query, window_tokens=tight, fixed_tokens=0))
    assert again.pruned and ice in mem.l1_events(sid)
    assert_valid(again)
    # ... but after the next user input it is scored (and here pruned) like any event
    mem.store.append(sid, "input", {"text": "thanks, what about the lake house wifi again?"})
    asyncio.run(mem.prepare(sid, query, window_tokens=tight, fixed_tokens=0))
    assert ice not in mem.l1_events(sid)
    assert_invariants(mem, sid)


def test_recalled_tool_result_brings_its_call_along(mem: SessionMemory) -> None:
    sid = long_session(mem.store, turns=40)
    window = window_for(total_tokens(mem, sid) // 4)
    prepared = asyncio.run(mem.prepare(sid, "lake house wifi", window_tokens=window, fixed_tokens=0))
    out = recall(mem, sid, "Iceland in March: cold, snow, volcano active")
    assert out["is_error"] is False
    events = mem.store.events(sid)
    result = next(e for e in events if e.kind == "tool_result" and e.call_id == "ice")
    call = next(e for e in events if e.seq == result.call_of)
    l1 = mem.l1_events(sid)
    assert result in l1 and call in l1
    assert_invariants(mem, sid)
    assert prepared.pruned
    later = asyncio.run(mem.prepare(sid, "lake house wifi", window_tokens=window, fixed_tokens=0))
    assert_valid(later)


def test_failed_reinsert_leaves_cold_context_unchanged(
    mem: SessionMemory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sid = long_session(mem.store, turns=40)
    window = window_for(total_tokens(mem, sid) // 4)
    asyncio.run(mem.prepare(sid, "lake house wifi", window_tokens=window, fixed_tokens=0))
    before_ids, before_blocks = mem.cold.ids(), mem.cold.block_ids()
    assert before_ids

    # the log can no longer be read: the re-insert check fails, so nothing may leave L2
    def unreadable(session: str, after: int = 0) -> list[Event]:
        raise OSError("disk I/O error")

    with monkeypatch.context() as patch:
        patch.setattr(mem.store, "events", unreadable)
        out = recall(mem, sid, "volcano trip Iceland March")
    assert out["is_error"] is True and "unchanged" in out["content"]
    assert mem.cold.ids() == before_ids and mem.cold.block_ids() == before_blocks
    assert recall(mem, sid, "volcano trip Iceland March")["is_error"] is False  # readable again: it works
    assert len(mem.cold.ids()) < len(before_ids)

    # a record that is not this session's log entry is refused (nothing removed either)
    other = SessionMemory(SessionStore(tmp_path / "other.db"), mem.cold, None)
    long_session(other.store, sid="s2", turns=1)
    now_ids = mem.cold.ids()
    forged = mem.cold.peek(now_ids[:1])
    with pytest.raises(LookupError):
        other.reinsert_for("s2")(forged)
    assert mem.cold.ids() == now_ids
    other.store.close()


def test_tool_without_session_is_an_error(mem: SessionMemory) -> None:
    sid = long_session(mem.store, turns=40)
    asyncio.run(mem.prepare(sid, "wifi", window_tokens=window_for(total_tokens(mem, sid) // 4), fixed_tokens=0))
    before = mem.cold.ids()
    out = recall(mem, None, "Iceland")
    assert out["is_error"] is True
    assert mem.cold.ids() == before


def test_the_tool_recalls_only_from_the_calling_session(mem: SessionMemory) -> None:
    """Recalling another session's event into this L1 would leave that session's history claiming it."""
    for sid in ("s1", "s2"):
        long_session(mem.store, sid=sid, turns=40)
        window = window_for(total_tokens(mem, sid) // 4)
        asyncio.run(mem.prepare(sid, "lake house wifi", window_tokens=window, fixed_tokens=0))
    theirs = mem.cold_ids("s2")
    assert next(e for e in mem.store.events("s2") if ICELAND in text_of(e)) not in mem.l1_events("s2")
    out = recall(mem, "s1", "volcano trip Iceland March")
    assert out["is_error"] is False and "Fagradalsfjall" in out["content"]
    assert next(e for e in mem.store.events("s1") if ICELAND in text_of(e)) in mem.l1_events("s1")
    assert mem.cold_ids("s2") == theirs
    assert set(mem.cold_ids("s1")) | set(theirs) == set(mem.cold.ids())  # nothing else left L2


def test_a_failed_move_to_cold_context_leaves_the_history_whole(
    mem: SessionMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The put is durable before the history forgets anything: when it fails, the request fails and L1 is
    the whole log still (it is derived from L2 membership)."""
    sid = long_session(mem.store, turns=40)
    window = window_for(total_tokens(mem, sid) // 4)

    def full(records: object, **kwargs: object) -> None:
        raise OSError("disk full")

    with monkeypatch.context() as patch:
        patch.setattr(mem.cold, "put", full)
        with pytest.raises(OSError, match="disk full"):
            asyncio.run(mem.prepare(sid, "lake house wifi", window_tokens=window, fixed_tokens=0))
    assert mem.l1_events(sid) == list(mem.store.events(sid)) and mem.cold.ids() == []
    prepared = asyncio.run(mem.prepare(sid, "lake house wifi", window_tokens=window, fixed_tokens=0))
    assert prepared.pruned and set(prepared.pruned) == set(mem.cold.ids())  # the disk is back: it moves
    assert_invariants(mem, sid)


def test_overflow_recovers_at_most_twice_then_raises(mem: SessionMemory) -> None:
    sid = long_session(mem.store, turns=40)
    full = total_tokens(mem, sid)
    window = window_for(full) // 2  # the history is ~1.6 x this window
    guard = OverflowGuard(window)
    assert guard.needs_recovery(full)

    first = asyncio.run(mem.recover(sid, "lake house wifi", window_tokens=window, fixed_tokens=0, guard=guard))
    assert first.pruned and first.note is not None and "outgrew the context window" in (first.note.content or "")
    assert first.kept_tokens <= first.budget_tokens
    assert_invariants(mem, sid)
    assert_valid(first)

    # the provider still says "too long": same path, and it always sends less than before
    second = asyncio.run(
        mem.recover(sid, "lake house wifi", window_tokens=window, fixed_tokens=0, guard=guard, provider_error=True)
    )
    assert second.pruned and second.kept_tokens < first.kept_tokens
    assert_invariants(mem, sid)
    assert_valid(second)
    assert any(WIFI in text_of(e) for e in mem.l1_events(sid))

    cold_before = mem.cold.ids()
    with pytest.raises(PromptTooLargeError, match="start a new session"):
        asyncio.run(mem.recover(sid, "lake house wifi", window_tokens=window, fixed_tokens=0, guard=guard))
    assert mem.cold.ids() == cold_before  # the third attempt moves nothing


def test_newest_event_alone_over_budget_is_reported(mem: SessionMemory) -> None:
    sid = long_session(mem.store, turns=3)
    mem.store.append(sid, "input", {"text": "paste: " + "lorem ipsum dolor " * 2000})
    prepared = asyncio.run(mem.prepare(sid, "summarise the paste", window_tokens=2_000, fixed_tokens=0))
    assert prepared.over_budget
    l1 = mem.l1_events(sid)
    assert l1[-1].seq == mem.store.events(sid)[-1].seq  # the floor of one: the newest stays
    assert_invariants(mem, sid)
    assert_valid(prepared)


# -- vectors --------------------------------------------------------------------------------------------


def test_index_embeds_off_the_loop_and_vectors_travel_to_cold(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions.db")
    cold = ColdStore(tmp_path / "cold.db")
    embedder = BagOfWordsEmbedder()
    mem = SessionMemory(store, cold, embedder)
    sid = long_session(store, turns=20)
    window = window_for(total_tokens(mem, sid) // 3)

    async def go() -> tuple[int, Prepared]:
        added = await mem.index(sid)
        return added, await mem.prepare(sid, "lake house wifi", window_tokens=window, fixed_tokens=0)

    added, prepared = asyncio.run(go())
    assert added == sum(1 for e in store.events(sid) if (r := record_of(e)) is not None and r.text.strip())
    assert threading.get_ident() not in embedder.threads  # never on the loop's thread
    assert prepared.pruned
    moved = cold.peek(prepared.pruned)
    assert all(r.dense is not None and r.dense.fingerprint == BagOfWordsEmbedder.fingerprint for r in moved)
    assert asyncio.run(mem.index(sid)) == 0  # cached by event: nothing to redo
    # new events get vectors on the next run only, and prepare does not wait for them (BM25 meanwhile)
    store.append(sid, "input", {"text": "another question about the lake house"})
    embedder.slow_for = "another question"

    async def slow_model() -> None:
        await mem.prepare(sid, "lake house", window_tokens=window, fixed_tokens=0)  # returns while ...
        task = mem._sessions[sid].index_task
        assert task is not None and not task.done()  # ... the new event's vector is still being computed
        embedder.gate.set()
        assert await task == 1

    asyncio.run(slow_model())
    assert_invariants(mem, sid)
    cold.close()
    store.close()


def test_open_never_waits_for_the_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()
    embedder = BagOfWordsEmbedder()

    def slow_loader(*prefer: object) -> BagOfWordsEmbedder:
        release.wait(10)
        return embedder

    monkeypatch.setattr(sm, "load_embedder", slow_loader)
    store = SessionStore(tmp_path / "sessions.db")
    mem = SessionMemory.open(tmp_path, store)
    assert (tmp_path / "cold.db").exists()
    sid = long_session(store, turns=20)
    window = window_for(total_tokens(mem, sid) // 3)
    # the model is still "loading": prepare works, TF-IDF only
    assert mem.embedder is None
    prepared = asyncio.run(mem.prepare(sid, "lake house wifi", window_tokens=window, fixed_tokens=0))
    assert prepared.pruned and embedder.calls == 0
    release.set()
    assert mem.embedder_ready.wait(10) and mem.embedder is embedder

    async def later() -> None:
        await mem.prepare(sid, "lake house wifi", window_tokens=window, fixed_tokens=0)
        state = mem._sessions[sid]
        assert state.index_task is not None  # scheduled in the background after prepare
        await state.index_task

    asyncio.run(later())
    assert embedder.calls >= 1  # the background index (the query is embedded only when a prune is due)
    index = mem._sessions[sid].index
    assert (
        index.pending(10**6) == [] and index.fingerprint == BagOfWordsEmbedder.fingerprint
    )  # every passage has its vector now
    asyncio.run(mem.aclose())
    store.close()


def test_open_with_the_installed_model(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions.db")
    mem = SessionMemory.open(tmp_path, store)
    assert mem.embedder_ready.wait(120)
    if mem.embedder is None:
        pytest.skip("no embedding model installed")
    sid = long_session(store, turns=20)
    window = window_for(total_tokens(mem, sid) // 3)

    async def go() -> Prepared:
        await mem.index(sid)
        return await mem.prepare(sid, "湖边小屋的无线网络密码是什么？", window_tokens=window, fixed_tokens=0)

    prepared = asyncio.run(go())
    assert prepared.pruned
    assert any(WIFI in text_of(e) for e in mem.l1_events(sid))  # Chinese query, English evidence: dense
    assert_invariants(mem, sid)
    asyncio.run(mem.aclose())
    store.close()


def test_provider_context_error_always_sends_less(mem: SessionMemory) -> None:
    """Our estimate said the history fits (prepare already pruned to 80 %), the provider disagrees: the first
    recovery must still shrink L1, else the retry would draw the same error."""
    sid = long_session(mem.store, turns=40)
    window = window_for(total_tokens(mem, sid) // 2)
    fitted = asyncio.run(mem.prepare(sid, "lake house wifi", window_tokens=window, fixed_tokens=0))
    assert fitted.pruned
    guard = OverflowGuard(window)
    assert not guard.needs_recovery(fitted.kept_tokens)
    retry = asyncio.run(
        mem.recover(sid, "lake house wifi", window_tokens=window, fixed_tokens=0, guard=guard, provider_error=True)
    )
    assert retry.pruned and retry.kept_tokens <= 0.75 * fitted.kept_tokens
    assert retry.note is not None and guard.recoveries == 1
    assert_invariants(mem, sid)
    assert_valid(retry)
