"""Recall from L3 (issue 15 item 3): what was cooled into the memory graph comes back in the request that
needs it — as triples with their source, or as its own text when it yielded no triple — by the session's
scorer (route 1) and by the entities the input names, across sessions (route 2); within its share of the
budget; the active scene preferred; ``[memory.graph] recall = false`` and the ``memory_recall`` tool.

Real SessionStore, ColdStore and Kùzu database in a tmp dir; cooling through ``GraphMemory.distill``.

Mutation checks (done, file copied to /tmp and back): L3 events not among the ranking's candidates
(``extra = in_cold & strong`` always) turns the route-1 passage test red; no retry delay after a failed open turns
``test_a_graph_another_process_holds_is_a_warning_and_memory_works_on`` red; no hub rule turns
``test_a_hub_s_facts_come_back_only_when_the_input_shares_a_word_with_them`` red; ``forget_session`` doing
nothing turns ``test_a_deleted_session_s_facts_leave_l3`` red; route 1 off (``_l3_recall`` passing no
``session_hits``) turns ``test_route_1_a_cooled_passage_without_triples_comes_back_as_its_text`` red; route 2
off (``mentions`` returning []) turns ``test_route_2_a_fact_from_another_session_comes_back_by_name`` red;
ignoring the scene in ``rank`` turns ``test_the_active_scene_changes_the_order`` red; ``render`` ignoring the
budget turns ``test_the_note_stays_within_its_budget`` red.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from hologram.agent.tools import ToolInvocation
from hologram.config.settings import MemorySettings
from hologram.memory.graph import GraphStore
from hologram.memory.graph.recall import HEADER, MEMORY_RECALL_NAME
from hologram.memory.session_memory import SessionMemory, record_of
from hologram.memory.text.tokens import estimate_tokens

from .test_l3_membership import WINDOW, Kernelish, ids_of, open_memory, turn
from .test_session_memory import EN_TOPICS, long_session, window_for

BOOK = "Melanie: My favorite book is Charlotte's Web, I read it every summer."
POTTERY = "Melanie: I love pottery, I made a blue bowl last week."
HIKING = "Melanie: I love hiking in the Alps with my sister."


def say(k: Kernelish, sid: str, *texts: str) -> list[str]:
    """Inputs told in `sid` and answered; returns the inputs' event ids."""
    if not k.store.exists(sid):
        k.store.create_session("cli", sid)
    out = []
    for text in texts:
        seq = k.store.append(sid, "input", {"text": text})
        k.store.append(sid, "response", {"content": "Noted.", "reasoning": None})
        out.append(ids_of(k.mem, sid)[seq])
    return out


async def cool_all(k: Kernelish, sid: str) -> list[str]:
    """Every event of `sid` into L2 (as prunes would) and then into L3 (cooling forced now)."""
    records = [r for e in k.store.events(sid) if (r := record_of(e)) is not None and r.id not in k.cold]
    k.cold.put(records)
    report = await k.graph.distill(idle_hours=0)
    assert not report.failed and set(report.moved) >= {r.id for r in records}
    return [r.id for r in records]


def note_of(prepared: object) -> str:
    note = getattr(prepared, "note", None)
    return str(note.content) if note is not None else ""


def l3_part(prepared: object) -> str:
    """The L3 note inside the request's one memory note (it comes after what the prune reports)."""
    note = note_of(prepared)
    return note[note.index(HEADER) :] if HEADER in note else ""


def test_route_1_a_cooled_passage_without_triples_comes_back_as_its_text(tmp_path: Path) -> None:
    async def run() -> None:
        k = open_memory(tmp_path)
        long_session(k.store, "s1", turns=30)
        await turn(k.mem, "s1", EN_TOPICS[0])
        wifi = next(i for s, i in ids_of(k.mem, "s1").items() if "BLUE-HERON-42" in str(k.store.events("s1")[s].data))
        assert wifi in k.cold
        await k.graph.distill(idle_hours=0)
        assert wifi in k.mem.l3_ids("s1") and wifi not in k.cold
        store = await k.graph.store()
        assert store is not None and store.triples_of_events([wifi]) == [], "no triple: only its text can recall it"
        question = "What was the wifi password of the lake house?"
        k.store.append("s1", "input", {"text": question})
        prepared = await k.mem.prepare("s1", question, window_tokens=WINDOW, fixed_tokens=0)
        note = note_of(prepared)
        assert wifi in prepared.l3_events and "BLUE-HERON-42" in note
        assert "UTC" in note and "session s1" not in note, "its time; this session's own passage names no session"
        assert wifi not in {ids_of(k.mem, "s1")[s] for s in prepared.seqs}, "in the note, not the history"
        assert prepared.kept_tokens + estimate_tokens(note) <= prepared.budget_tokens + 200
        # route 1 competes in the request's one ranking (like L2), not only within the note's share
        k.graph.settings = MemorySettings.model_validate({"graph": {"recall_share": 0.01}})
        narrow = await k.mem.prepare("s1", question, window_tokens=WINDOW, fixed_tokens=0)
        assert wifi in narrow.l3_events and "BLUE-HERON-42" in note_of(narrow)
        await k.close()

    asyncio.run(run())


def test_route_1_a_cooled_fact_comes_back_as_its_triple_with_its_source(tmp_path: Path) -> None:
    async def run() -> None:
        k = open_memory(tmp_path)
        (book,) = say(k, "s1", BOOK)
        say(k, "s1", *EN_TOPICS)
        await cool_all(k, "s1")
        question = "Which book does Melanie love to read in summer?"
        k.store.append("s1", "input", {"text": question})
        prepared = await k.mem.prepare("s1", question, window_tokens=WINDOW, fixed_tokens=0)
        note = note_of(prepared)
        assert "Melanie | favorite book | Charlotte's Web" in note
        assert "said: “Melanie: My favorite book is Charlotte's Web" in note, "with its source block"
        assert book in prepared.l3_events
        await k.close()

    asyncio.run(run())


def test_route_2_a_fact_from_another_session_comes_back_by_name(tmp_path: Path) -> None:
    async def run() -> None:
        k = open_memory(tmp_path)
        (book,) = say(k, "old", BOOK)
        await cool_all(k, "old")
        say(k, "new", "Hello there!")
        question = "Do you remember anything about Melanie?"
        k.store.append("new", "input", {"text": question})
        prepared = await k.mem.prepare("new", question, window_tokens=WINDOW, fixed_tokens=0)
        note = note_of(prepared)
        assert "Melanie | favorite book | Charlotte's Web" in note and "session old" in note
        assert prepared.l3_events == [book]
        # a question naming nothing the graph knows brings nothing
        k.store.append("new", "input", {"text": "What is the weather like?"})
        other = await k.mem.prepare("new", "What is the weather like?", window_tokens=WINDOW, fixed_tokens=0)
        assert other.l3_events == [] and "long-term memory" not in note_of(other)
        await k.close()

    asyncio.run(run())


def test_route_2_reads_chinese_names(tmp_path: Path) -> None:
    async def run() -> None:
        k = open_memory(tmp_path)
        say(k, "old", "阿梅: 我上个月搬到杭州了，在阿里巴巴工作。")
        await cool_all(k, "old")
        store = await k.graph.store()
        assert store is not None and store.counts().triples >= 1
        found = await k.graph.recall("阿梅最近怎么样？", session="new", budget_tokens=500)
        assert any("阿梅" in h.text and "阿里巴巴" in h.text for h in found.hits), found
        await k.close()

    asyncio.run(run())


class Scene:
    """A real SceneHint: the events seen in one scene."""

    def __init__(self, events: Sequence[str]) -> None:
        self.id = "scene-test"
        self._events = set(events)

    def holds(self, event_ids: Sequence[str]) -> np.ndarray:
        return np.array([e in self._events for e in event_ids], dtype=bool)


def test_the_active_scene_changes_the_order(tmp_path: Path) -> None:
    async def run() -> None:
        k = open_memory(tmp_path)
        pottery, hiking = say(k, "old", POTTERY, HIKING)
        await cool_all(k, "old")
        plain = await k.graph.recall("Tell me about Melanie", session="new", budget_tokens=800)
        assert list(dict.fromkeys(h.event for h in plain.hits)) == [hiking, pottery], "same score: the newer first"
        scened = await k.graph.recall("Tell me about Melanie", session="new", budget_tokens=800, scene=Scene([pottery]))
        assert list(dict.fromkeys(h.event for h in scened.hits)) == [pottery, hiking]
        assert scened.hits[0].score > plain.hits[0].score
        await k.close()

    asyncio.run(run())


def test_the_note_stays_within_its_budget(tmp_path: Path) -> None:
    async def run() -> None:
        k = open_memory(tmp_path)
        say(k, "old", *[f"Melanie: I love pottery class number {i} with teacher Anna {i}." for i in range(30)])
        await cool_all(k, "old")
        wide = await k.graph.recall("Melanie's pottery class", session="new", budget_tokens=5000)
        assert len(wide.hits) >= 20
        for budget in (80, 160, 400):
            found = await k.graph.recall("Melanie's pottery class", session="new", budget_tokens=budget)
            assert 0 < found.tokens <= budget and estimate_tokens(found.note) <= budget
            assert len(found.hits) < len(wide.hits)
        # in a request whose history fills its budget: the note gets its share and no more
        k.graph.settings = MemorySettings.model_validate({"graph": {"recall_share": 0.05}})
        say(k, "busy", *[f"{EN_TOPICS[i % len(EN_TOPICS)]} Let me add some detail number {i}. " * 4 for i in range(40)])
        question = "How is Melanie's pottery class going?"
        window = window_for(2000)
        k.store.append("busy", "input", {"text": question})
        full = await k.mem.prepare("busy", question, window_tokens=window, fixed_tokens=0)
        assert full.l3_events and estimate_tokens(l3_part(full)) <= int(2000 * 0.05) + 1
        assert full.kept_tokens > 2000 * 0.8, "the history filled the rest"
        # a new session has little history: what it leaves unused goes to hits that clearly match
        say(k, "new", "hi")
        k.store.append("new", "input", {"text": question})
        fresh = await k.mem.prepare("new", question, window_tokens=window, fixed_tokens=0)
        assert len(fresh.l3_events) > len(full.l3_events)
        assert fresh.kept_tokens + estimate_tokens(l3_part(fresh)) <= 2000 + 5
        await k.close()

    asyncio.run(run())


def test_a_hub_s_facts_come_back_only_when_the_input_shares_a_word_with_them(tmp_path: Path) -> None:
    """A name everyone uses (a speaker with many facts) alone does not say which fact is meant: without a
    shared word nothing of it comes back (it would fill every request naming the speaker)."""

    async def run() -> None:
        k = open_memory(tmp_path)
        say(k, "old", *[f"Melanie: I love pottery class number {i}." for i in range(12)], HIKING)
        await cool_all(k, "old")
        assert (await k.graph.recall("Tell me about Melanie", session="new", budget_tokens=800)).hits == []
        found = await k.graph.recall("Does Melanie still go hiking?", session="new", budget_tokens=800)
        assert found.hits and found.hits[0].text == "Melanie | love | hiking"
        await k.close()

    asyncio.run(run())


def tool_call(mem: SessionMemory, sid: str | None, arguments: dict[str, object]) -> dict[str, object]:
    tool = mem.recall_tool()
    assert tool.name == MEMORY_RECALL_NAME

    async def call() -> dict[str, object]:
        return dict(await tool.handler(arguments, ToolInvocation("call-1", sid)))

    return asyncio.run(call())


def test_recall_off_leaves_requests_alone_and_the_tool_still_answers(tmp_path: Path) -> None:
    k = open_memory(tmp_path, MemorySettings.model_validate({"graph": {"recall": False}}))
    say(k, "old", BOOK)
    asyncio.run(cool_all(k, "old"))
    say(k, "new", "hello")
    k.store.append("new", "input", {"text": "What is Melanie's favorite book?"})
    prepared = asyncio.run(k.mem.prepare("new", "What is Melanie's favorite book?", window_tokens=WINDOW,
                                         fixed_tokens=0))  # fmt: skip
    assert prepared.l3_events == [] and "Charlotte" not in note_of(prepared)
    answer = tool_call(k.mem, "new", {"query": "Melanie book"})
    assert answer["is_error"] is False and "Melanie | favorite book | Charlotte's Web" in str(answer["content"])
    assert tool_call(k.mem, "new", {"query": "Melanie", "hops": 3})["is_error"] is True
    assert tool_call(k.mem, "new", {"query": ""})["is_error"] is True
    assert "nothing in long-term memory" in str(tool_call(k.mem, "new", {"query": "quantum chromodynamics"})["content"])
    asyncio.run(k.close())
    k.mem.graph = None
    assert "not enabled" in str(tool_call(k.mem, "new", {"query": "Melanie"})["content"])


def test_search_and_neighbourhood_carry_their_sources(tmp_path: Path) -> None:
    async def run() -> None:
        k = open_memory(tmp_path)
        (book,) = say(k, "old", BOOK)
        say(k, "other", "Caroline: I went to the support group on Tuesday, it was moving.")
        await cool_all(k, "old")
        await cool_all(k, "other")
        around = await k.graph.neighbourhood("melanie")
        assert [(s.triple.subject, s.triple.predicate, s.triple.value) for s in around] == [
            ("Melanie", "favorite book", "Charlotte's Web")
        ]
        assert around[0].session == "old" and around[0].source_text.startswith("Melanie: My favorite book")
        hits = await k.graph.search("support group")  # a triple's value: the triple carries its block
        assert any(h.kind == "triple" and h.session == "other" and "support group" in h.source_text for h in hits)
        hits = await k.graph.search("what happened on tuesday")  # in no triple: the block itself
        assert [(h.kind, h.session) for h in hits] == [("block", "other")] and "Tuesday" in hits[0].text
        by_name = await k.graph.search("Melanie")
        assert any(h.kind == "triple" and h.event == book and h.source_text.startswith("Melanie:") for h in by_name)
        counts = k.graph.counts()
        assert counts is not None and counts.triples >= 1 and counts.blocks >= 4
        await k.close()

    asyncio.run(run())


def test_a_graph_another_process_holds_is_a_warning_and_memory_works_on(tmp_path: Path) -> None:
    """The lock is per open file: a second store opened here on the same path fails like another process."""
    from hologram.memory.graph import open_graph_store

    async def run() -> None:
        k = open_memory(tmp_path)
        say(k, "old", BOOK)
        moved = await cool_all(k, "old")
        await k.close()
        holder = open_graph_store(tmp_path / "graph.kz")
        try:
            k = open_memory(tmp_path)
            told: list[str] = []
            k.graph.notify = told.append
            opens: list[int] = []
            real_open = k.graph._open_store

            def counted_open() -> GraphStore:  # the real open, counted
                opens.append(1)
                return real_open()

            k.graph._open_store = counted_open  # type: ignore[method-assign]
            say(k, "old", "And another thing about my week.")
            question = "What is Melanie's favorite book?"
            k.store.append("old", "input", {"text": question})
            prepared = await k.mem.prepare("old", question, window_tokens=WINDOW, fixed_tokens=0)
            assert prepared.l3_events == [] and not set(moved) & set(ids_of(k.mem, "old")[s] for s in prepared.seqs)
            assert len(told) == 1 and "open in another process" in told[0] and k.graph.problem == told[0]
            assert k.mem.status()["l3_problem"] == told[0]
            again = await k.mem.prepare("old", question, window_tokens=WINDOW, fixed_tokens=0)
            assert again.l3_events == [] and len(told) == 1, "told once, not per request"
            assert len(opens) == 1, "not retried by every request"
            answer = await k.mem.recall_tool().handler({"query": "Melanie"}, ToolInvocation("c", "old"))
            assert "open in another process" in str(answer["content"]) and answer["is_error"] is False
            with pytest.raises(RuntimeError, match="open in another process"):
                await k.graph.distill(idle_hours=0)
            await k.close()
        finally:
            holder.close()

    asyncio.run(run())


def test_a_deleted_session_s_facts_leave_l3(tmp_path: Path) -> None:
    async def run() -> None:
        k = open_memory(tmp_path)
        say(k, "old", BOOK)
        say(k, "kept", HIKING)
        moved = await cool_all(k, "old")
        await cool_all(k, "kept")
        assert await k.mem.delete("old") == len(moved)
        assert (await k.graph.neighbourhood("Melanie"))[0].triple.value == "hiking"
        assert len(await k.graph.neighbourhood("Melanie")) == 1 and k.cold.l3_of_session("old") == []
        found = await k.graph.recall("What is Melanie's favorite book?", session="new", budget_tokens=500)
        assert "Charlotte" not in found.note
        await k.close()
        k = open_memory(tmp_path)  # after a restart too
        assert len(await k.graph.neighbourhood("Melanie")) == 1 and not k.cold.in_l3(moved).any()
        await k.close()

    asyncio.run(run())


def test_memory_recall_finds_a_passage_of_another_session_by_its_words(tmp_path: Path) -> None:
    """Seen as a newcomer: "My sister Alice lives in Lisbon" told in one session and cooled yields no triple,
    so a request in another session (which reaches other sessions only through named entities) brings nothing
    back, and the model's explicit ``memory_recall`` found nothing either. The tool now also searches L3's
    blocks of every session by their words. Mutation check (done): without the search in
    `SessionMemory.recall_l3` this test fails."""
    k = open_memory(tmp_path)
    say(k, "old", "My sister lives in Lisbon and works as a marine biologist.")
    asyncio.run(cool_all(k, "old"))
    say(k, "new", "hello")
    answer = tool_call(k.mem, "new", {"query": "sister Lisbon"})
    assert answer["is_error"] is False and "lives in Lisbon" in str(answer["content"])
    assert "session old" in str(answer["content"])  # where it came from
    assert "nothing in long-term memory" in str(tool_call(k.mem, "new", {"query": "volcano"})["content"])
    asyncio.run(k.close())
