"""Scenes on a turn's path: the turn asks for its scene before the first request and hands it to memory, and
records its events in the scene when it ends; ``turn/start`` validates ``scene`` and ``partner``.

A real agent (the provider chain against the strict mock, real SessionStore, ColdStore and scenes.db in a
temp dir). `RecordingMemory` is a real SessionMemory whose ``prepare`` keeps the scene it was given.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hologram.agent import Agent, KernelTool, ToolInvocation, ToolRegistry
from hologram.agent.service import TurnService
from hologram.agent.turn_scene import previous_turn_tools
from hologram.api import params as params_api
from hologram.api import turn as api
from hologram.config.settings import AgentSettings, SceneSettings
from hologram.llm import ProviderChain
from hologram.memory.cold.store import ColdStore
from hologram.memory.scenes.scene_hint import SceneHint
from hologram.memory.scenes.store import SCENES_DB, SceneStore
from hologram.memory.session_memory import SessionMemory
from hologram.memory.session_records import Prepared, record_of
from hologram.rpc import RpcError
from hologram.rpc.errors import INVALID_PARAMS
from hologram.sessions import Event, SessionStore
from hologram.stages import StageDispatcher
from mock_llm import MockLLM
from tests.kit.providers import provider

from ..agent.helpers import calls

NOON = time.mktime((2026, 3, 2, 13, 0, 0, 0, 0, -1))
OBJ = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}


class RecordingMemory(SessionMemory):
    """A real SessionMemory whose prepare records the scene it is handed."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.scenes_seen: list[SceneHint | None] = []

    async def prepare(
        self, sid: str, query: str, *, window_tokens: int, fixed_tokens: int, scene: SceneHint | None = None
    ) -> Prepared:
        self.scenes_seen.append(scene)
        return await super().prepare(sid, query, window_tokens=window_tokens, fixed_tokens=fixed_tokens, scene=scene)


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[RecordingMemory]:
    store = SessionStore(tmp_path / "sessions.db")
    cold = ColdStore(tmp_path / "cold.db")
    mem = RecordingMemory(store, cold, None)
    # a fixed clock: two turns a moment apart must not straddle a time-of-day boundary (18:00)
    mem.scenes = SceneStore.open(tmp_path / SCENES_DB, SceneSettings(), clock=lambda: NOON)
    yield mem
    mem.scenes.close()
    cold.close()
    store.close()


def agent_for(memory: SessionMemory, mock: MockLLM) -> Agent:
    async def shell(arguments: dict[str, Any], invocation: ToolInvocation) -> str:
        return "ok"

    tools = ToolRegistry()
    tools.add_kernel_tool(KernelTool("shell", "run it", shell, OBJ))
    chain = ProviderChain([provider(mock, "p1", max_retries=0)])
    return Agent(
        llm=chain,
        store=memory.store,
        tools=tools,
        stages=StageDispatcher(),
        memory=memory,
        settings=AgentSettings(system_prompt="be brief"),
    )


def turn_ids(memory: SessionMemory, sid: str, turn: str) -> set[str]:
    return {r.id for e in memory.store.events(sid) if e.turn == turn and (r := record_of(e)) is not None}


def test_a_declared_scene_is_created_by_the_first_turn_and_handed_to_the_next(
    memory: RecordingMemory, deepseek: MockLLM
) -> None:
    """Mutation check (done): not calling ``scene.end`` in `_finish` leaves scenes.db empty (count 0); not
    calling ``scene.begin`` hands the second turn's prepare None."""
    deepseek.script([{"content": "hi"}, {"content": "again"}])
    agent = agent_for(memory, deepseek)
    key = "chan:qq/peer:group_1"
    first = asyncio.run(agent.run_turn("hello group", session_id="s1", scene=key))
    assert memory.scenes is not None and memory.scenes.count() == 1
    scene = memory.scenes.list()[0]
    assert scene.key == key
    first_ids = turn_ids(memory, "s1", first.turn_id)
    assert len(first_ids) == 2  # the input and the response
    assert memory.scenes.events_of(scene.id) == first_ids
    assert memory.scenes_seen == [None]  # the first turn: the scene did not exist yet
    second = asyncio.run(agent.run_turn("what did I say?", session_id="s1", scene=key))
    active = memory.scenes_seen[-1]
    assert active is not None and active.id == scene.id
    assert active.holds(sorted(first_ids)).all()
    assert memory.scenes.list()[0].strength == pytest.approx(2.0, abs=1e-3)
    assert memory.scenes.events_of(scene.id) == first_ids | turn_ids(memory, "s1", second.turn_id)


def test_a_learned_scene_uses_the_previous_turns_tools_and_this_turns_tools(
    memory: RecordingMemory, deepseek: MockLLM
) -> None:
    """Two turns with the same partner and the same tool make a scene (the second occurrence); the third turn
    is in it — its features carry the tools the previous turn used, so it is found before it called any.

    Mutation check (done): observing without this turn's tools (``self.tools`` → ``[]`` in `TurnScene.end`)
    gives a scene without ``shell``, and the assertion on its tools fails."""
    tool_turn: list[dict[str, Any]] = [{"tool_calls": calls(("c1", "shell", '{"x": 1}'))}, {"content": "done"}]
    deepseek.script([*tool_turn, *tool_turn, {"content": "third"}])
    agent = agent_for(memory, deepseek)
    one = asyncio.run(agent.run_turn("deploy the payment service", session_id="a", partner="alice"))
    assert memory.scenes is not None and memory.scenes.count() == 0  # evidence only
    two = asyncio.run(agent.run_turn("deploy the payment service again", session_id="a", partner="alice"))
    assert memory.scenes.count() == 1
    scene = memory.scenes.list()[0]
    assert scene.features.tools == {"shell"} and scene.features.partner == "alice"
    both = turn_ids(memory, "a", one.turn_id) | turn_ids(memory, "a", two.turn_id)
    assert memory.scenes.events_of(scene.id) == both
    asyncio.run(agent.run_turn("deploy the payment service once more", session_id="a", partner="alice"))
    active = memory.scenes_seen[-1]
    assert active is not None and active.id == scene.id
    assert active.holds(sorted(both)).all()


def test_the_previous_turns_tools_come_from_its_stored_responses() -> None:
    def ev(seq: int, turn: str | None, kind: str, names: tuple[str, ...] = ()) -> Event:
        data = {"tool_calls": [{"id": f"c{seq}{n}", "name": n, "arguments": "{}"} for n in names]}
        return Event(seq, "s", kind, 0.0, data if kind == "response" else {"text": "x"}, turn)

    events = [
        ev(1, "t1", "input"),
        ev(2, "t1", "response", ("old",)),
        ev(3, "t2", "input"),
        ev(4, "t2", "response", ("shell", "browser")),
        ev(5, "t2", "tool_result"),
        ev(6, "t2", "response", ("shell",)),
        ev(7, "t3", "input"),
    ]
    assert previous_turn_tools(events, "t3") == ["shell", "browser"]
    assert previous_turn_tools(events[:2], "t2") == ["old"]
    assert previous_turn_tools(events[:1], "t1") == []


def test_a_broken_scene_store_never_fails_the_turn(memory: RecordingMemory, deepseek: MockLLM) -> None:
    deepseek.script([{"content": "fine"}])
    assert memory.scenes is not None
    memory.scenes.close()  # every call now raises sqlite3.ProgrammingError
    result = asyncio.run(agent_for(memory, deepseek).run_turn("hi", session_id="s", scene="chan:qq"))
    assert result.output == "fine"
    memory.scenes = SceneStore.open(memory.scenes.path, SceneSettings())  # for the fixture's close


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"text": "x", "scene": "qq/group_1"}, "scene"),
        ({"text": "x", "scene": "chan:qq/peer:a b"}, "scene"),
        ({"text": "x", "scene": ""}, "scene"),
        ({"text": "x", "scene": 3}, "scene"),
        ({"text": "x", "partner": ""}, "partner"),
        ({"text": "x", "partner": "p" * 129}, "partner"),
    ],
)
def test_turn_start_rejects_a_bad_scene_or_partner_naming_the_field(
    memory: RecordingMemory, deepseek: MockLLM, params: dict[str, Any], field: str
) -> None:
    """Mutation check (done): without `StartParams.__post_init__` the malformed keys start a turn."""
    service = TurnService(agent_for(memory, deepseek))
    with pytest.raises(RpcError) as caught:
        asyncio.run(service.start(None, params))
    assert caught.value.code == INVALID_PARAMS
    assert caught.value.message.startswith(f"turn/start: {field}: ")
    if field == "scene" and isinstance(params["scene"], str) and params["scene"]:
        assert "chan:<name>[/peer:<id>]" in caught.value.message


def test_turn_start_takes_a_good_scene_and_partner() -> None:
    p = params_api.StartParams.parse(api.TURN_START, {"text": "x", "scene": "chan:qq/peer:群1", "partner": "bob"})
    assert (p.scene, p.partner) == ("chan:qq/peer:群1", "bob")
    assert params_api.StartParams.parse(api.TURN_START, {"text": "x"}).scene is None


def test_a_plugin_declares_its_scene_through_kernel_turns(memory: RecordingMemory, deepseek: MockLLM) -> None:
    """``kernel.turns`` start (what a channel plugin calls) takes the same two fields as the control socket."""
    deepseek.script([{"content": "hi group"}])
    service = TurnService(agent_for(memory, deepseek))
    start = service.facility_methods()["start"]

    async def go() -> None:
        answer = await start("qq", text="hello", session="p1", scene="chan:qq/peer:group_7", partner="group_7")
        assert answer["session"] == "p1"
        await asyncio.gather(*service.hub._turns)  # the queued turn, to its end

    asyncio.run(go())
    assert memory.scenes is not None and [s.key for s in memory.scenes.list()] == ["chan:qq/peer:group_7"]


def test_without_a_scene_store_a_declared_scene_is_accepted_and_ignored(tmp_path: Path, deepseek: MockLLM) -> None:
    """``[memory.scenes] enabled = false``: memory has no scene store; a turn that declares one runs as any."""
    store = SessionStore(tmp_path / "sessions.db")
    cold = ColdStore(tmp_path / "cold.db")
    mem = RecordingMemory(store, cold, None)
    deepseek.script([{"content": "fine"}])
    result = asyncio.run(agent_for(mem, deepseek).run_turn("hi", session_id="s", scene="chan:qq/peer:g"))
    assert result.output == "fine" and mem.scenes_seen == [None]
    assert not (tmp_path / SCENES_DB).exists()
    cold.close()
    store.close()
