"""The partner a channel names is memory's speaker of the user's words (issue 35, item 2): a turn run through
`Agent.run_turn` with an identity stores the partner on its input event (a real `SessionStore`), memory's record
of that event (`record_of`) carries it, and L3's extractor says the partner said it, not "user". An input stored
before identities existed (no partner in its data) still reads, with the speaker "user".

Mutation check (done): `record_of` not passing the event's partner turns
``test_a_turns_partner_is_the_speaker_of_its_input`` red (the triple's subject is "user").
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from hologram.agent import Agent, ToolRegistry
from hologram.agent.identity import TurnIdentity
from hologram.memory.graph.extract import DeterministicExtractor
from hologram.memory.session_records import record_of
from hologram.sessions import SessionStore
from hologram.stages import FunctionHook, StageDispatcher


def test_a_turns_partner_is_the_speaker_of_its_input(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions.db")
    stages = StageDispatcher()
    seen: list[dict[str, object]] = []  # what the hook's view said of who the turn is from
    hook = FunctionHook("canned", "on_input", lambda v: seen.append(v) or {"respond": "ok"})  # no LLM needed
    stages.register("on_input", "canned", hook)
    agent = Agent(llm=None, store=store, tools=ToolRegistry(), stages=stages)
    identity = TurnIdentity("qqbridge", "web", "0.3.1", partner="alice")
    result = asyncio.run(agent.run_turn("I love pottery.", session_id="g1", identity=identity))
    assert result.ended_by == "respond"  # the turn ran through the loop, its input persisted by it
    assert [(v["channel"], v["client"], v["partner"]) for v in seen] == [("qqbridge", "web", "alice")]
    stored = store.events("g1")[0]
    assert stored.kind == "input" and stored.channel == "qqbridge"
    assert stored.data == {"text": "I love pottery.", "client": "web", "client_version": "0.3.1", "partner": "alice"}
    record = record_of(stored)
    assert record is not None and record.partner == "alice" and record.channel == "qqbridge"
    triples = DeterministicExtractor().extract(record)
    assert triples and {t.subject for t in triples} == {"alice"}, triples


def test_an_old_input_without_identity_reads_as_before(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions.db")
    store.create_session("cli", "old")
    store.append("old", "input", {"text": "I love pottery."}, turn="t", channel="cli")
    record = record_of(store.events("old")[0])
    assert record is not None and record.partner is None
    assert {t.subject for t in DeterministicExtractor().extract(record)} == {"user"}
