"""The person's people by more than one name (issue 39 item 3, memory/across/aliases.py): "my wife Elena" makes
"Elena" and "my wife" (and 老婆, spouse…) one person for the search over other sessions and L3's entity route.

Real SessionStore and across.db on disk, BM25 only (no embedder: a question that shares no word with its fact
finds it only through the alias). Mutation checks (done): `expansion` returning "" turns
`test_a_fact_about_my_wife_is_found_by_her_name` and the Chinese one red; `AcrossStore.names` ignoring the
person turns `test_another_persons_alias_is_not_used` red; without the expansion in `_l3_ranked`,
`test_l3_entity_route_reaches_the_alias` is red.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from hologram.memory.across.aliases import expansion, named, relations_in
from hologram.memory.session_memory import SessionMemory
from hologram.memory.text import tokenizer
from hologram.sessions import SessionStore

T0 = 1_780_000_000.0
DAY = 86_400.0


@pytest.fixture(scope="module", autouse=True)
def _jieba() -> None:
    tokenizer.ensure_segmenter()


def test_named_and_expansion() -> None:
    assert named("Oh, my wife Elena loves it here.") == [("wife", "Elena")]
    assert named("Elena is my wife, we met in 2010.") == [("wife", "Elena")]
    assert named("My wife's name is Elena.") == [("wife", "Elena")]
    assert named("我老婆叫小雨，她在医院上班。") == [("wife", "小雨")]
    assert named("我老婆叫我去买菜。") == [], "not a name: 叫 as 'asks'"
    assert named("My kid Theo starts school.") == [], "son or daughter: ambiguous, not recorded"
    assert "spouse" in expansion("When is my wife's birthday?", {}) and "Elena" in expansion(
        "my wife", {"wife": "Elena"}
    )
    assert "wife" in expansion("What does Elena like?", {"wife": "Elena"})
    assert "老婆" in expansion("小雨喜欢什么？", {"wife": "小雨"})
    assert expansion("What is the capital of Peru?", {"wife": "Elena"}) == ""
    assert relations_in("my sisters") == {"sister"}


def _say(mem: SessionMemory, sid: str, text: str, ts: float, partner: str | None = None) -> None:
    data: dict[str, object] = {"text": text}
    if partner is not None:
        data["partner"] = partner
    mem.store.append(sid, "input", data, channel="qq" if partner else "cli", ts=ts)
    asyncio.run(mem.prepare(sid, text, window_tokens=4000, fixed_tokens=0))
    mem.store.append(sid, "response", {"content": "Okay.", "reasoning": None}, channel="cli", ts=ts + 1)


def _asked(mem: SessionMemory, sid: str, question: str, partner: str | None = None) -> str:
    if partner is not None:
        mem.store.append(sid, "input", {"text": question, "partner": partner}, channel="qq", ts=T0 + 9 * DAY)
    prepared = asyncio.run(mem.preview(sid, question, window_tokens=4000, fixed_tokens=0))
    return str(prepared.note.content) if prepared.note is not None else ""


@pytest.mark.parametrize(
    ("alias", "fact", "question", "answer"),
    [
        ("We had dinner with my wife Elena's parents on Sunday.", "My wife is allergic to shellfish.",
         "Is there any food Elena can't eat?", "shellfish"),
        ("Elena, my wife, starts her new job on Monday.", "Elena collects vintage fountain pens.",
         "What is my spouse's hobby?", "fountain pens"),
        ("我老婆叫小雨，她在医院上班。", "我老婆对花粉过敏，春天很难受。", "小雨最怕什么？", "花粉"),
    ],
)  # fmt: skip
def test_a_fact_about_my_wife_is_found_by_her_name(
    tmp_path: Path, alias: str, fact: str, question: str, answer: str
) -> None:
    """Told in two sessions — who she is, then a fact under the other name —, asked in a third after a
    restart by the name the fact does not use."""
    store = SessionStore(tmp_path / "sessions.db")
    mem = SessionMemory.open(tmp_path, store, load_model=False)
    _say(mem, "s1", alias, T0)
    _say(mem, "s2", fact, T0 + DAY)
    _say(mem, "s2", "The weather was grey and the bus was late again.", T0 + DAY + 60)
    asyncio.run(mem.aclose())
    store.close()
    store = SessionStore(tmp_path / "sessions.db")
    mem = SessionMemory.open(tmp_path, store, load_model=False)
    try:
        note = _asked(mem, "s3", question)
        assert answer in note, note
        assert "bus was late" not in note
    finally:
        asyncio.run(mem.aclose())
        store.close()


def test_another_persons_alias_is_not_used(tmp_path: Path) -> None:
    """Aliases are the person's: who one QQ user's wife is says nothing about another user's."""
    store = SessionStore(tmp_path / "sessions.db")
    mem = SessionMemory.open(tmp_path, store, load_model=False)
    try:
        _say(mem, "a1", "My wife Elena loves the opera.", T0, partner="alice")
        _say(mem, "b1", "My wife is allergic to shellfish.", T0 + 60, partner="bob")
        assert mem.across is not None
        assert mem.across.names("qq:alice") == {"wife": "Elena"} and mem.across.names("qq:bob") == {}
        assert "shellfish" not in _asked(mem, "b2", "Is there any food Elena can't eat?", partner="bob")
    finally:
        asyncio.run(mem.aclose())
        store.close()


def test_l3_entity_route_reaches_the_alias(tmp_path: Path) -> None:
    """L3's entity route gets the other names too: a fact cooled into the graph under "Elena" comes for a
    question about "my wife" in a new session (the triple's form in the note, not the across-sessions quote).
    Real Kùzu. Mutation check (done): without the expansion in `SessionMemory._l3_ranked` this is red."""
    from hologram.memory.across.store import AcrossStore

    from .test_l3_membership import open_memory
    from .test_l3_recall import cool_all

    async def run() -> None:
        k = open_memory(tmp_path)
        k.mem.across = AcrossStore(tmp_path / "across.db")
        for text in ("Elena, my wife, works nights at the hospital.", "Elena adores orchids, white ones."):
            k.store.append("old", "input", {"text": text})
            await k.mem.prepare("old", text, window_tokens=4000, fixed_tokens=0)
            k.store.append("old", "response", {"content": "Noted.", "reasoning": None})
        await cool_all(k, "old")
        question = "Which flowers would my spouse want?"
        k.store.append("new", "input", {"text": question})
        prepared = await k.mem.prepare("new", question, window_tokens=4000, fixed_tokens=0)
        note = str(prepared.note.content) if prepared.note is not None else ""
        assert "Elena | adores | orchids" in note, note
        k.mem.across.close()
        await k.close()

    asyncio.run(run())


def test_a_deleted_sessions_alias_leaves(tmp_path: Path) -> None:
    """Who "my wife" is, told in a session the person deletes, is forgotten with it (and stays forgotten after a
    restart); a store from before the alias kept its session gets the column."""
    import sqlite3

    from hologram.memory.across.store import AcrossStore, Said

    path = tmp_path / "across.db"
    old = sqlite3.connect(path)  # the table as it was first released: no session column
    old.execute("CREATE TABLE alias (person TEXT NOT NULL, relation TEXT NOT NULL, name TEXT NOT NULL, "
                "ts_ms INTEGER NOT NULL, PRIMARY KEY (person, relation))")  # fmt: skip
    old.execute("INSERT INTO alias VALUES ('owner', 'sister', 'Imogen', 1)")
    old.commit()
    old.close()
    store = AcrossStore(path)
    store.add([Said("e1", "s1", 1, 1000, "owner", "My wife Elena is a nurse.")])
    assert store.names("owner") == {"sister": "Imogen", "wife": "Elena"}
    assert store.remove_session("s1") == 1
    assert store.names("owner") == {"sister": "Imogen"}
    store.close()
    again = AcrossStore(path)
    assert again.names("owner") == {"sister": "Imogen"}
    again.close()
