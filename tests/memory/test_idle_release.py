"""What the kernel holds of a session's history is bounded in bytes and released when the session goes idle
(issue 41): `SessionLog` holds decoded events up to ``[memory] log_cache_bytes`` in all, the least recently used
sessions going first; `SessionMemory` releases an idle session's tail and log ``[memory] release_idle_s`` after
its last turn. Either way what was dropped is read back from ``sessions.db`` on next use, the same events.

Mutation checks (done): the eviction loop of `SessionLog._read` bounded by count again (``len(self._held) > 64``)
turns `test_the_log_evicts_by_bytes_and_reads_back_from_disk` and the two after it red; `trim` not subtracting
what it drops turns `test_trim_gives_back_its_bytes` red; ignoring `_running` in `_release_if_idle` turns
`test_a_running_turn_is_never_released` red.
"""

from __future__ import annotations

import asyncio
from typing import Any

from hologram.agent import Agent, ToolRegistry
from hologram.llm import ChatRequest, ChatResult, Message, ToolCall
from hologram.memory.session_memory import SessionMemory
from hologram.sessions import SessionStore
from hologram.sessions.log import SessionLog, event_bytes
from hologram.stages import StageDispatcher

BIG = "长的回答 a long answer " * 5_000  # ~100 KB of text in one event, as a long turn's answer is


def filled(store: SessionStore, sid: str, answer: str = BIG, results: int = 20) -> None:
    store.create_session("cli", sid)
    store.append(sid, "input", {"text": f"question of {sid}"})
    for i in range(results):
        store.append(sid, "output", {"text": f"tool output {i} of {sid}"})
    store.append(sid, "response", {"content": answer})


def test_the_log_evicts_by_bytes_and_reads_back_from_disk(tmp_path: Any) -> None:
    store = SessionStore(tmp_path / "s.db")
    filled(store, "a")
    filled(store, "b")
    one = sum(event_bytes(e) for e in store.events("a"))
    assert one > 100_000  # the answer's string is most of it
    log = SessionLog(store, max_bytes=int(one * 1.5))  # room for one such session, not two
    first = log.events("a")
    assert log.held("a") and log.size == one
    log.events("b")
    assert log.held("b") and not log.held("a")  # least recently used out: the bytes, not a count, decide
    assert log.size <= log.max_bytes
    again = log.events("a")  # read back from sessions.db: the same events
    assert [(e.seq, e.kind, e.data) for e in again] == [(e.seq, e.kind, e.data) for e in first]
    assert log.after("a", again[5].seq) == list(again[6:])
    store.close()


def test_many_small_sessions_fit_where_a_count_would_have_dropped_them(tmp_path: Any) -> None:
    store = SessionStore(tmp_path / "s.db")
    for i in range(100):  # more than the old 64-session count
        filled(store, f"s{i}", answer="short", results=1)
    log = SessionLog(store, max_bytes=1024 * 1024)
    for i in range(100):
        log.events(f"s{i}")
    assert all(log.held(f"s{i}") for i in range(100))
    assert log.size == sum(event_bytes(e) for i in range(100) for e in store.events(f"s{i}"))
    store.close()


def test_the_session_in_use_stays_whole_above_the_bound(tmp_path: Any) -> None:
    store = SessionStore(tmp_path / "s.db")
    filled(store, "a")
    filled(store, "b")
    log = SessionLog(store, max_bytes=1)
    assert len(log.events("a")) == 22
    assert len(log.events("b")) == 22 and log.held("b") and not log.held("a")
    store.close()


def test_trim_gives_back_its_bytes(tmp_path: Any) -> None:
    store = SessionStore(tmp_path / "s.db")
    filled(store, "a")
    log = SessionLog(store)
    events = log.events("a")
    log.trim("a", events[-3].seq)  # memory sealed all but the last three
    assert log.size == sum(event_bytes(e) for e in events[-3:])
    assert log.events("a") == events[-3:]
    log.forget("a")
    assert log.size == 0
    store.close()


class Answers:
    """A plain answer per request; keeps what it was sent."""

    def __init__(self) -> None:
        self.requests: list[ChatRequest] = []

    async def complete(self, request: ChatRequest, on_delta: Any = None) -> ChatResult:
        self.requests.append(request)
        return ChatResult(f"answer {len(self.requests)}", None, (), None, "stop")


def agent_for(mem: SessionMemory, llm: Answers) -> Agent:
    return Agent(llm=llm, store=mem.store, tools=ToolRegistry(), stages=StageDispatcher(), memory=mem)


async def released(mem: SessionMemory, count: int) -> None:
    """Until `count` sessions were released (the timer fires in this loop; no fixed sleep decides)."""
    async with asyncio.timeout(30):
        while mem.released < count:
            await asyncio.sleep(0.01)


def history(request: ChatRequest) -> list[tuple[str, str]]:
    return [(m.role, str(m.content)) for m in request.messages if isinstance(m, Message) and m.role != "system"]


def test_an_idle_session_is_released_and_its_next_turn_reads_it_back(mem: SessionMemory) -> None:
    mem.release_idle_s = 0.05
    llm = Answers()
    agent = agent_for(mem, llm)

    async def run() -> None:
        await agent.run_turn("first question", session_id="s")
        assert mem.log.held("s") and "s" in mem._sessions  # held while it may go on
        await released(mem, 1)
        assert not mem.log.held("s") and "s" not in mem._sessions and mem.log.size == 0
        status = mem.status()  # what `hologram status` shows of it
        assert status["sessions_released"] == 1 and status["log_bytes"] == 0 and status["sessions_indexed"] == 0
        await agent.run_turn("second question", session_id="s")  # read back from the log on disk

    asyncio.run(run())
    kept = SessionMemory(mem.store, mem.cold, None, release_idle_s=None)  # the same turns, nothing released
    reference = Answers()
    other = agent_for(kept, reference)
    for sid in ("t",):
        asyncio.run(other.run_turn("first question", session_id=sid))
        asyncio.run(other.run_turn("second question", session_id=sid))
    assert history(llm.requests[1]) == history(reference.requests[1])
    assert ("user", "first question") in history(llm.requests[1])
    assert ("assistant", "answer 1") in history(llm.requests[1])


def test_a_running_turn_is_never_released(mem: SessionMemory) -> None:
    mem.release_idle_s = 0.05
    llm = Answers()
    agent = agent_for(mem, llm)

    async def run() -> None:
        await agent.run_turn("first", session_id="s")
        mem.turn_started("s")  # another turn of the session began before the release was due
        await asyncio.sleep(0)
        ended = mem._ended["s"]
        mem._release_if_idle("s", ended)  # the planned release, as its timer would run it
        assert mem.released == 0 and mem.log.held("s")
        mem.turn_ended("s")
        await released(mem, 1)
        assert not mem.log.held("s")

    asyncio.run(run())


def test_a_session_in_use_by_a_search_is_released_after_it(mem: SessionMemory) -> None:
    """A release that falls while something else holds the session (a search, a read) waits for it and then runs.
    Mutation check (done): releasing whatever the lock says turns this red (released under the holder)."""
    mem.release_idle_s = 0.05
    agent = agent_for(mem, Answers())

    async def run() -> None:
        await agent.run_turn("first", session_id="s")
        state = mem._sessions["s"]
        async with state.lock:  # as `search` holds it
            mem._release_if_idle("s", mem._ended["s"])
            assert mem.released == 0 and "s" in mem._sessions
        await released(mem, 1)
        assert "s" not in mem._sessions and not mem.log.held("s")

    asyncio.run(run())


class ToolLoop(Answers):
    """`steps` requests of a turn answered with a tool call (to a tool nobody has: the agent answers it with an
    error and asks again), then a plain answer: a long tool loop in a few requests. Records, at each request,
    whether session "a" is still held."""

    def __init__(self, mem: SessionMemory, steps: int) -> None:
        super().__init__()
        self.mem, self.steps, self.step, self.a_held = mem, steps, 0, []

    async def complete(self, request: ChatRequest, on_delta: Any = None) -> ChatResult:
        self.a_held.append(self.mem.log.held("a") or "a" in self.mem._sessions)
        self.requests.append(request)
        self.step += 1
        if self.step <= self.steps:
            return ChatResult("", None, (ToolCall(f"c{len(self.requests)}", "nowhere", "{}"),), None, "tool_calls")
        self.step = 0
        return ChatResult(f"answer {len(self.requests)}", None, (), None, "stop")


def test_a_long_turns_session_is_released_as_it_ends_and_read_back_intact(mem: SessionMemory) -> None:
    """A turn that made `release_at_end_requests` requests has its session released as it ends, not
    ``release_idle_s`` later, so another session's turn does not run among what it holds (issue 41); its next
    turn reads it back, the same history as a session never released. Mutation check (done): `turn_ended`
    always waiting `release_idle_s` turns this red (a still held when b asks)."""
    mem.release_idle_s = 3600.0  # the timer never decides here
    mem.release_at_end_requests = 3
    llm = ToolLoop(mem, steps=2)  # three requests a turn
    agent = agent_for(mem, llm)

    async def run() -> None:
        await agent.run_turn("first of a", session_id="a")
        assert len(llm.requests) == 3 and all(llm.a_held)  # held all through its own turn
        await released(mem, 1)
        await agent.run_turn("first of b", session_id="b")
        assert llm.a_held[3:] == [False, False, False]  # let go before b's first request
        await released(mem, 2)  # b's turn was long too
        await agent.run_turn("second of a", session_id="a")  # read back from the log on disk

    asyncio.run(run())
    kept = SessionMemory(mem.store, mem.cold, None, release_idle_s=None)  # the same turns, nothing released
    reference = ToolLoop(kept, steps=2)
    other = agent_for(kept, reference)
    asyncio.run(other.run_turn("first of a", session_id="t"))
    asyncio.run(other.run_turn("second of a", session_id="t"))
    sent, expected = history(llm.requests[6]), history(reference.requests[3])
    assert sent == expected and ("user", "first of a") in sent and ("assistant", "answer 3") in sent


def test_a_short_turns_session_keeps_its_timer(mem: SessionMemory) -> None:
    """Turns under `release_at_end_requests` requests (a chat's) wait ``release_idle_s`` as before: chats taking
    turns are not read back at every turn. Mutation check (done): the bound ignored turns this red (b released
    as its short turn ended)."""
    mem.release_idle_s = 3600.0
    llm = ToolLoop(mem, steps=2)
    agent = agent_for(mem, llm)

    async def run() -> None:
        await agent.run_turn("first of a", session_id="a")
        assert len(llm.requests) == 3 < mem.release_at_end_requests  # the path: a turn of three requests
        await agent.run_turn("first of b", session_id="b")
        assert all(llm.a_held) and mem.log.held("a")  # a kept through b's turn
        mem.release_at_end_requests = 3  # now a turn of three requests is long: a's next one goes at its end
        await agent.run_turn("second of a", session_id="a")
        await released(mem, 1)
        assert mem.released == 1 and not mem.log.held("a") and mem.log.held("b") and "b" in mem._sessions
        assert mem._turn_requests == {}  # nothing counted is kept once a turn ended

    asyncio.run(run())
