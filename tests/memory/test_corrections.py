"""Corrections within one session (issue 39 item 3, memory/across/corrections.py): a later statement of the same fact
outranks the earlier one and is shown after it, the earlier marked superseded — found when the input is
indexed, read by the ranking as a flag.

Real SessionStore and index on disk, BM25 only (no embedder; the bench measures the dense side:
tools/bench/memory.py --protocol paraphrase). Mutation checks (done): `Corrections.lift` returning the scores
unchanged turns `test_the_correction_is_sent_where_the_stale_statement_would_be` red (Porto alone is sent);
`observe` ignoring the cue (pairing any shared key) turns `test_keys_and_cues` red; `_load` reading nothing
turns `test_a_released_session_keeps_its_corrections` red.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from hologram.memory.across.corrections import FILE, MARK, Corrections, is_correction, keys_of
from hologram.memory.joined import SEPARATOR
from hologram.memory.session_memory import SessionMemory
from hologram.memory.text import tokenizer
from hologram.sessions import SessionStore

T0 = 1_780_000_000.0
FILLER = [
    "The weather was grey all morning and the bus was late again.",
    "Lunch was a sandwich from the corner shop, nothing special.",
    "Spent the evening sorting old photos into albums.",
    "The neighbours' dog barked for an hour at the postman.",
    "Finished a jigsaw puzzle of a lighthouse, a thousand pieces.",
    "Watched a documentary about octopuses, they are clever.",
]


@pytest.fixture(scope="module", autouse=True)
def _jieba() -> None:
    tokenizer.ensure_segmenter()


def test_keys_and_cues() -> None:
    assert "user|@where" in keys_of("I live in Porto.") and "user|@where" in keys_of("I moved to Lisbon in May.")
    assert keys_of("My phone number is 0791.") & keys_of("Scratch that, my number is now 0792.")
    assert "user|code:ua" in keys_of("The airline rebooked me onto UA 1618.")
    assert keys_of("我的车是一辆红色特斯拉。") & keys_of("我换车了，现在开一辆白色的比亚迪。")
    assert "user|密码" in keys_of("wifi密码又换了一次，现在是moonlight88。")
    assert "alice|@where" in keys_of("I live in Porto.", "alice"), "keys are the speaker's"
    # where one lives, said by the home itself; a house that is merely a mess says nothing of where
    assert "user|@where" in keys_of("Our flat is on Harrow Street, number 12.")
    assert "user|@where" in keys_of("We moved house, the new address is 48 Quarry Lane.")
    assert "user|@where" not in keys_of("Our house is a mess today.")
    assert keys_of("我们住在和平路十二号。") & keys_of("我们搬家了，新地址是石桥巷四十八号。")
    assert is_correction("我们搬家了，新地址是石桥巷四十八号。")
    assert is_correction("I moved to Lisbon") and is_correction("现在是moonlight88")
    assert not is_correction("I live in Porto and love it")
    c = Corrections(None)
    assert c.observe(1, "I live in Porto, near the river.") is None
    assert c.observe(2, "I live in Porto and I love the river.") is None, "no cue: a restatement, not a correction"
    assert c.observe(3, "What is my address?") is None, "a question sets nothing"
    assert c.observe(4, "I moved to Lisbon last week, finally.") == 2, "the latest statement of it"
    assert c.observe(4, "I moved to Lisbon last week, finally.") is None, "seen already"
    group = Corrections(None)
    group.observe(1, "Alice: I live in Porto.")
    assert group.observe(2, "Bob: I moved to Braga.") is None, "another speaker's statement is not corrected"
    assert group.observe(3, "Alice: I moved to Faro now.") == 1


def test_lift_puts_the_correction_just_above() -> None:
    c = Corrections(None)
    c.observe(10, "I live in Porto.")
    c.observe(20, "I moved to Lisbon.")
    scores = np.array([3.0, 0.5, -2.0])
    lifted = c.lift(scores, {10: 0, 20: 1}.get)
    assert lifted[1] > lifted[0] == 3.0 and lifted[2] == -2.0 and scores[1] == 0.5, "a copy, the earlier kept"
    weak = np.array([0.5, 0.2])
    assert c.lift(weak, {10: 0, 20: 1}.get) is weak, "the earlier does not clearly match: nothing lifted"
    assert c.superseded_seqs([10, 20, 30]) == {10}


def _say(mem: SessionMemory, sid: str, text: str, ts: float) -> None:
    mem.store.append(sid, "input", {"text": text}, channel="cli", ts=ts)
    asyncio.run(mem.prepare(sid, text, window_tokens=8000, fixed_tokens=0))
    mem.store.append(sid, "response", {"content": "Okay.", "reasoning": None}, channel="cli", ts=ts + 1)


def _conversation(mem: SessionMemory, sid: str, earlier: str, later: str) -> None:
    ts = T0
    _say(mem, sid, earlier, ts)
    for i in range(40):
        ts += 60
        _say(mem, sid, f"{FILLER[i % len(FILLER)]} ({i})", ts)
    _say(mem, sid, later, ts + 60)
    for i in range(40):
        _say(mem, sid, f"{FILLER[(i + 3) % len(FILLER)]} [{i}]", ts + 120 + 60 * i)


@pytest.mark.parametrize(
    ("earlier", "later", "question", "old", "new"),
    [
        ("I live in Porto, in a flat near the river.", "I moved to Lisbon last week, finally settled.",
         "Where is my home these days? Tell me about Porto.", "Porto", "Lisbon"),
        ("我的车是一辆红色特斯拉，开了三年了。", "我换车了，现在开一辆白色的比亚迪。", "我的车是什么颜色的特斯拉？",
         "特斯拉", "比亚迪"),
    ],
)  # fmt: skip
def test_the_correction_is_sent_where_the_stale_statement_would_be(
    tmp_path: Path, earlier: str, later: str, question: str, old: str, new: str
) -> None:
    """The question matches the stale statement better (it names Porto / 特斯拉); with a budget that holds a
    few turns, the correction comes too, after it in the history, and the earlier is marked superseded."""
    store = SessionStore(tmp_path / "sessions.db")
    mem = SessionMemory.open(tmp_path, store, load_model=False)
    try:
        _conversation(mem, "s", earlier, later)
        prepared = asyncio.run(mem.preview("s", question, window_tokens=900, fixed_tokens=0))
        # each input's text (older inputs are sent joined, a paragraph each: memory/joined.py)
        texts = [t for m in prepared.messages if m.role == "user" for t in str(m.content).split(SEPARATOR)]
        stale = [i for i, t in enumerate(texts) if old in t and new not in t]
        fresh = [i for i, t in enumerate(texts) if new in t]
        assert stale, "the question matches the earlier statement: it is sent"
        assert fresh and fresh[0] > stale[0], "the correction comes too, after it"
        assert texts[stale[0]].startswith(MARK)
        assert not texts[fresh[0]].startswith(MARK)
    finally:
        asyncio.run(mem.aclose())
        store.close()


def test_a_released_session_keeps_its_corrections(tmp_path: Path) -> None:
    """The pairs and keys live beside the session's index: a released session (or a restart) still knows
    that the later statement corrects the earlier, and a correction after it still finds the earlier key."""
    store = SessionStore(tmp_path / "sessions.db")
    mem = SessionMemory.open(tmp_path, store, load_model=False)
    try:
        _say(mem, "s", "I live in Porto, in a flat near the river.", T0)
        _say(mem, "s", "Lunch was a sandwich from the corner shop.", T0 + 60)
        mem.forget("s")
        _say(mem, "s", "I moved to Lisbon last week, finally settled.", T0 + 120)
        state = mem._state("s")
        assert state.corrections.superseded == {1: 5}
        mem.forget("s")
        assert mem._state("s").corrections.superseded == {1: 5}
        assert mem.index_dir is not None and (mem.index_dir / next(iter(mem.index_dir.iterdir())).name / FILE).exists()
    finally:
        asyncio.run(mem.aclose())
        store.close()
