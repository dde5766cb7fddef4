"""`MemoryInspector`: counts and search across sessions over a real session store and cold store (BM25 only,
no model: the same path a kernel takes until its embedder has loaded).

Mutation checks (done): making `search` ignore the cold store when it names the layer (always "l1"), or
scoring without the session segments (another session's turn then counts as a neighbour and its events
rank above the mean), each turn `test_search_ranks_across_sessions_and_names_the_layer` red.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from hologram.memory.inspection import MemoryInspector
from hologram.memory.session_memory import SessionMemory
from hologram.memory.session_records import record_of
from hologram.rpc import RpcError
from hologram.sessions import SessionStore
from tests.kit.loop import run

# no graph and no scenes (memory.graph, memory.scenes None): zeros, never an error
NO_L3 = {"l3_events": 0, "l3_triples": 0, "l3_blocks": 0, "l3_entities": 0, "scenes": 0, "l3_problem": None}


def memory_in(tmp_path: Path) -> SessionMemory:
    store = SessionStore.in_data_dir(tmp_path)
    return SessionMemory.open(tmp_path, store, load_model=False)


def chat(memory: SessionMemory, said: str, answered: str) -> str:
    store = memory.store
    sid = store.create_session("test")
    store.append(sid, "input", {"text": said}, turn="t1")
    store.append(sid, "response", {"content": answered}, turn="t1")
    return sid


def test_stats_count_sessions_and_layers(tmp_path: Path) -> None:
    memory = memory_in(tmp_path)
    inspector = MemoryInspector(memory)
    assert run(inspector.stats()) == {"sessions": 0, "l1": 0, "l2": 0, **NO_L3}
    a = chat(memory, "hello there", "hi")
    chat(memory, "second chat", "yes")
    [first, _] = memory.store.events(a)
    record = record_of(first)
    assert record is not None
    memory.cold.put([record])  # one event of session a moved to L2
    assert run(inspector.stats()) == {"sessions": 2, "l1": 3, "l2": 1, **NO_L3}
    run(memory.aclose())


def test_search_ranks_across_sessions_and_names_the_layer(tmp_path: Path) -> None:
    memory = memory_in(tmp_path)
    inspector = MemoryInspector(memory)
    chat(memory, "what should I cook tonight", "try a mushroom risotto with parmesan")
    walrus = chat(memory, "my walrus is called Bartholomew", "Bartholomew is a fine name for a walrus")
    chat(memory, "今天北京的天气怎么样", "北京今天晴，气温二十度")
    for _ in range(3):
        chat(memory, "unrelated small talk", "indeed")

    hits = run(inspector.search("Bartholomew the walrus"))["hits"]
    assert hits and {h["session"] for h in hits} == {walrus}, hits
    assert all(h["layer"] == "L1" for h in hits)
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)

    [event] = [e for e in memory.store.events(walrus) if e.kind == "response"]
    record = record_of(event)
    assert record is not None
    memory.cold.put([record])
    hits = run(inspector.search("Bartholomew the walrus"))["hits"]
    assert {h["event_id"]: h["layer"] for h in hits}[record.id] == "L2"

    zh = run(inspector.search("北京天气"))["hits"]
    assert zh and "北京" in zh[0]["text"], zh
    assert run(inspector.search("nothing like this anywhere xyzzy"))["hits"] == []
    assert len(run(inspector.search("walrus", limit=1))["hits"]) == 1
    run(memory.aclose())


def test_search_sees_new_events_and_long_text_is_cut(tmp_path: Path) -> None:
    memory = memory_in(tmp_path)
    inspector = MemoryInspector(memory)
    chat(memory, "first", "one")
    assert run(inspector.search("zanzibar"))["hits"] == []
    chat(memory, "zanzibar " + "spice " * 300, "noted")
    [hit] = [h for h in run(inspector.search("zanzibar"))["hits"] if h["kind"] == "input"]
    assert hit["text"].startswith("zanzibar") and len(hit["text"]) == 500
    run(memory.aclose())


@pytest.mark.parametrize(("text", "limit"), [("", 5), ("  ", 5), (None, 5), ("x", 0), ("x", 201), ("x", True)])
def test_search_refuses_bad_params(tmp_path: Path, text: object, limit: object) -> None:
    memory = memory_in(tmp_path)
    with pytest.raises(RpcError) as caught:
        run(MemoryInspector(memory).search(text, limit))
    assert caught.value.code == -32602
    asyncio.run(memory.aclose())
