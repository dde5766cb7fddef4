"""Scene-aware recall through real turns (issue 15 item 4, "recall prefers memory from the active scene"):
what was said in one declared scene and then cooled into L3 comes first when a later turn — in another
session — declares that scene again; the other scene's memory comes first in the other scene.

Real agent on the strict mock, real SessionStore, ColdStore, Kùzu graph and scenes.db in a temp dir; the
facts reach L3 by cooling (``GraphMemory.distill``); the order is read from the request the model was sent.

Mutation check (done): `_Turn._request_messages` not passing ``scene=`` to prepare makes the pottery club's
question get the hikers' fact first (same score, the newer first), and the first assertion fails.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from hologram.agent import Agent, ToolRegistry
from hologram.config.settings import AgentSettings, SceneSettings
from hologram.llm import ProviderChain
from hologram.memory.scenes.store import SCENES_DB, SceneStore
from hologram.memory.session_records import record_of
from hologram.stages import StageDispatcher
from mock_llm import MockLLM
from tests.kit.providers import provider

from .test_l3_membership import Kernelish, open_memory

POTTERY = "Melanie: I love pottery, I made a blue bowl last week."
HIKING = "Melanie: I love hiking in the Alps with my sister."
CLUB = "chan:qq/peer:pottery_club"
HIKERS = "chan:qq/peer:hikers"


def agent_for(k: Kernelish, mock: MockLLM) -> Agent:
    chain = ProviderChain([provider(mock, "p1", max_retries=0)])
    return Agent(
        llm=chain, store=k.store, tools=ToolRegistry(), stages=StageDispatcher(), memory=k.mem,
        settings=AgentSettings(system_prompt="be brief"),
    )  # fmt: skip


def system_text(body: Any) -> str:
    return "\n".join(str(m.get("content") or "") for m in body["messages"] if m.get("role") == "system")


def test_the_declared_scene_puts_its_own_memory_first(tmp_path: Path, deepseek: MockLLM) -> None:
    async def run() -> tuple[str, str, str]:
        k = open_memory(tmp_path)
        k.mem.scenes = SceneStore.open(tmp_path / SCENES_DB, SceneSettings())
        agent = agent_for(k, deepseek)
        deepseek.script([{"content": "Noted."}] * 2 + [{"content": "She likes things."}] * 3)
        await agent.run_turn(POTTERY, session_id="club", scene=CLUB)
        await agent.run_turn(HIKING, session_id="hike", scene=HIKERS)
        records = [r for sid in ("club", "hike") for e in k.store.events(sid) if (r := record_of(e)) is not None]
        k.cold.put(records)  # as prunes would, then cooled into L3 now
        report = await k.graph.distill(idle_hours=0)
        assert not report.failed and set(report.moved) >= {r.id for r in records}
        question = "Tell me about Melanie"
        await agent.run_turn(question, session_id="ask-club", scene=CLUB)
        await agent.run_turn(question, session_id="ask-hike", scene=HIKERS)
        await agent.run_turn(question, session_id="ask-none")
        notes = [system_text(r.body) for r in deepseek.requests[-3:]]
        assert k.mem.scenes is not None
        k.mem.scenes.close()
        await k.close()
        return notes[0], notes[1], notes[2]

    club, hike, none = asyncio.run(run())
    for note in (club, hike, none):
        assert "pottery" in note and "hiking" in note, note  # both facts recalled from L3 every time
    assert club.index("pottery") < club.index("hiking"), club
    assert hike.index("hiking") < hike.index("pottery"), hike
    assert none.index("hiking") < none.index("pottery"), none  # no scene: same score, the newer first
