"""Data directories for the `hologram memory` tests, written by the real stores the kernel uses (no kernel
needed): sessions in English and Chinese, one event in cold context (L2), a learnt scene, and an L3 graph
written through `GraphStore.move` as cooling writes it."""

from __future__ import annotations

from pathlib import Path

from hologram.config.settings import SceneSettings
from hologram.memory.scenes.store import SceneStore, features_of
from hologram.memory.session_memory import SessionMemory
from hologram.memory.session_records import record_of
from hologram.sessions import SessionStore
from tests.kit.loop import run

SOURCE_TEXT = 'Caroline said: I love pottery; my "best" friend Mel lives in 北京.'
SOURCE_TS_MS = 1_700_000_000_000
TRIPLES = {("Caroline", "likes", "pottery"), ("Caroline", 'has "best" friend', "Mel"), ("Mel", "lives in", "北京")}


def seed(data: Path) -> dict[str, str]:
    """Two sessions (English, Chinese), one event of the first moved to L2, one scene learnt from two turns
    in the same situation; returns the session ids."""
    data.mkdir(parents=True, exist_ok=True)
    store = SessionStore.in_data_dir(data)
    memory = SessionMemory.open(data, store, load_model=False)
    en = store.create_session("cli")
    store.append(en, "input", {"text": "the walrus named Bartholomew likes saffron pancakes"}, turn="t1")
    store.append(en, "response", {"content": "noted: saffron pancakes"}, turn="t1")
    zh = store.create_session("cli")
    store.append(zh, "input", {"text": "我的猫叫做小橘子，它喜欢晒太阳"}, turn="t1")
    store.append(zh, "response", {"content": "记下了"}, turn="t1")
    first = record_of(store.events(en)[0])
    assert first is not None
    memory.cold.put([first])
    run(memory.aclose())
    store.close()
    scenes = SceneStore.open(data / "scenes.db", SceneSettings())
    at = 1_700_000_000.0
    for i in range(2):  # a scene is born on the second occurrence of a situation
        f = features_of(channel="qq", partner="alice", tools=(), text="pottery class", ts=at + i)
        scenes.observe(f, [f"ev_{i}"])
    assert scenes.count() == 1
    scenes.close()
    return {"en": en, "zh": zh}


def seed_graph(data: Path, session: str) -> None:
    """A real Kùzu graph in `data`, written through `GraphStore.move` as cooling writes it: one event's block
    and three triples read from it (one with quotes and a Chinese value)."""
    from hologram.memory.graph import GraphBlock, Triple, open_graph_store

    block = GraphBlock("blk_caroline_0", "ev_caroline", 0, "text", SOURCE_TEXT, "{}", session, SOURCE_TS_MS)
    triples = [
        Triple("Caroline", "likes", "pottery", "ev_caroline", block.id, valid_at=block.ts_ms),
        Triple("Caroline", 'has "best" friend', "Mel", "ev_caroline", block.id, confidence=0.9),
        Triple("Mel", "lives in", "北京", "ev_caroline", block.id),
    ]
    with open_graph_store(data / "graph.kz") as store:
        report = store.move([block], triples, now=1_700_000_000.0)
    assert report.moved == ("ev_caroline",) and report.triples == 3
