"""Scenes end to end: a real `hologram up` (the strict mock as the model), two turns through the control socket
that declare the same scene — the first creates it in ``<data>/scenes.db``, the second joins it — each turn's
memory events tagged with it; a malformed key is an RPC error naming the field and the grammar.

Mutation check (done): `TurnHub._run` not passing ``scene=params.scene`` to the turn leaves scenes.db without
the declared scene (the two turns, with no tools and one partner, leave evidence and then a *learned* scene,
whose key is NULL), and the key assertion fails.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from hologram.clients import TurnClient
from hologram.config.settings import SceneSettings
from hologram.memory.scenes.scene_features import time_of_day
from hologram.memory.scenes.store import SCENES_DB, SceneStore
from hologram.memory.session_records import record_of
from hologram.rpc import RpcError
from hologram.sessions import Event
from mock_llm import MockLLM

from .kernel import E2EKernel

pytestmark = pytest.mark.slow

KEY = "chan:qq/peer:group_1"


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory, mock: MockLLM) -> Iterator[E2EKernel]:
    k = E2EKernel(tmp_path_factory.mktemp("scenes"), [mock])
    k.start()
    yield k
    k.stop()


def memory_ids(kernel: E2EKernel, session: str) -> dict[str, set[str]]:
    """The memory event ids (``record_of(event).id``) of each turn of `session`, from the kernel's own log."""
    out: dict[str, set[str]] = {}
    for e in kernel.events(session)["events"]:
        event = Event(e["seq"], session, e["kind"], e["ts"], e["data"], e["turn"], call_id=e["call_id"])
        record = record_of(event)
        if record is not None and e["turn"]:
            out.setdefault(e["turn"], set()).add(record.id)
    return out


def scenes_db(data: Path) -> tuple[list[tuple[str, str | None, float]], dict[str, set[str]]]:
    """What scenes.db holds, read by a second connection while the kernel runs (WAL: readers never block)."""
    with sqlite3.connect(f"file:{data / SCENES_DB}?mode=ro", uri=True) as db:
        scenes = [(str(i), k, float(s)) for i, k, s in db.execute("SELECT id, key, strength FROM scenes")]
        tags: dict[str, set[str]] = {}
        for scene, event in db.execute("SELECT scene, event FROM scene_events"):
            tags.setdefault(str(scene), set()).add(str(event))
    return scenes, tags


def test_two_turns_declaring_one_scene_create_and_join_it(kernel: E2EKernel, mock: MockLLM) -> None:
    mock.reset()
    mock.script([{"content": "hello group"}, {"content": "still here"}])

    async def go() -> list[str]:
        turns = []
        async with await TurnClient.connect(kernel.data, client="qq") as client:
            for text in ("hi all", "anyone there?"):
                stream = await client.start(text, session="qq-group-1", scene=KEY, partner="group_1")
                ended = await stream.result()
                assert ended.stop_reason == "answer", ended
                turns.append(ended.turn)
        return turns

    first, second = asyncio.run(go())
    scenes, tags = scenes_db(kernel.data)
    assert [(key, round(strength, 3)) for _, key, strength in scenes] == [(KEY, 2.0)]
    ids = memory_ids(kernel, "qq-group-1")
    assert len(ids[first]) == 2 and len(ids[second]) == 2  # input and response of each
    assert tags[scenes[0][0]] == ids[first] | ids[second]


def test_two_turns_with_one_partner_and_no_declaration_make_a_learned_scene(kernel: E2EKernel, mock: MockLLM) -> None:
    """No key: the scene is learned — the first turn leaves evidence, the second (same channel, partner, tools
    and time of day) creates it from both."""
    mock.reset()
    mock.script([{"content": "sure"}, {"content": "again"}])

    async def go() -> list[str]:
        turns = []
        async with await TurnClient.connect(kernel.data, client="cli") as client:
            for text in ("plan the garden beds", "plan the garden paths"):
                ended = await (await client.start(text, session="garden", partner="bob")).result()
                assert ended.stop_reason == "answer", ended
                turns.append(ended.turn)
        return turns

    first, second = asyncio.run(go())
    inputs = [e["ts"] for e in kernel.events("garden")["events"] if e["kind"] == "input"]
    if len({time_of_day(ts) for ts in inputs}) > 1:
        pytest.skip("the two turns straddled a time-of-day boundary (06:00, 12:00, 18:00, 00:00)")
    scenes, tags = scenes_db(kernel.data)
    learned = [(sid, strength) for sid, key, strength in scenes if key is None]
    assert len(learned) == 1 and round(learned[0][1], 3) == 2.0
    ids = memory_ids(kernel, "garden")
    assert tags[learned[0][0]] == ids[first] | ids[second]


def test_a_malformed_scene_key_is_an_rpc_error_naming_the_field(kernel: E2EKernel) -> None:
    async def go() -> None:
        async with await TurnClient.connect(kernel.data, client="qq") as client:
            with pytest.raises(RpcError, match=r"turn/start: scene: 'qq:group_1' is not a scene key: write chan:"):
                await client.start("hi", session="qq-bad", scene="qq:group_1")

    asyncio.run(go())


def test_the_scenes_are_there_after_the_kernel_stopped(kernel: E2EKernel) -> None:
    """Last in the module: stops the kernel and opens scenes.db as `hologram memory scenes` would, offline."""
    kernel.stop()
    store = SceneStore.open(kernel.data / SCENES_DB, SceneSettings())
    try:
        assert sorted(s.key or "" for s in store.list()) == ["", KEY]
    finally:
        store.close()


def test_a_damaged_scenes_db_is_moved_aside_and_the_kernel_serves_on(kernel: E2EKernel, mock: MockLLM) -> None:
    """With the kernel stopped, scenes.db's header is smashed; the kernel starts anyway,
    keeps the damaged file beside a new one, and the next declared turn creates its scene in the new file.

    Mutation check (done): without SceneStore's move-aside branch `hologram up` exits at start ("damaged
    database: the file does not start with the SQLite header")."""
    kernel.stop()  # (stopped already when the whole module runs)
    path = kernel.data / SCENES_DB
    for old in kernel.data.glob(f"{SCENES_DB}.damaged-*"):
        old.unlink()
    SceneStore.open(path, SceneSettings()).close()  # a real file to damage, whatever ran before
    raw = bytearray(path.read_bytes())
    raw[:16] = b"not sqlite at al"
    path.write_bytes(bytes(raw))
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    kernel.start()
    aside = list(kernel.data.glob(f"{SCENES_DB}.damaged-*"))
    assert len(aside) == 1 and aside[0].read_bytes()[:16] == b"not sqlite at al"
    mock.reset()
    mock.script([{"content": "back"}])

    async def go() -> None:
        async with await TurnClient.connect(kernel.data, client="qq") as client:
            ended = await (await client.start("hello again", session="qq-after", scene=KEY)).result()
            assert ended.stop_reason == "answer", ended

    asyncio.run(go())
    scenes, _ = scenes_db(kernel.data)
    assert [(key, strength) for _, key, strength in scenes] == [(KEY, 1.0)]  # a new file: born again
    kernel.stop()
    logs = "".join(p.read_text(errors="replace") for p in (kernel.data / "logs").glob("hologram-*.log"))
    assert "scenes.db was damaged" in logs and "scenes will be learned again" in logs, logs[-2000:]
