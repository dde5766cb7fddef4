"""Memory across sessions (issue 39 item 2, memory/across/store.py): what the person said in one session reaches the
request of another session of the same person that needs it — no tool call, after a restart — and never the
conversation of another person or a group.

Real SessionStore, ColdStore and across.db on disk (BM25 only: no embedder in these tests; the bench measures
the dense side, tools/bench/memory_cross.py).

Mutation checks (done): dropping the person test in ``AcrossStore.search`` (``meta.person != person``) turns
``test_another_persons_words_are_never_recalled`` red; dropping the group test in
``SessionMemory._across_hits`` turns ``test_a_group_gets_nothing_from_other_sessions`` red; sorting the note
best first instead of by time turns ``test_the_later_statement_is_shown_after_the_earlier`` red.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from hologram.memory.across.store import HEADER, MIN_SCORE, AcrossStore, person_of
from hologram.memory.session_memory import SessionMemory
from hologram.memory.session_records import Prepared
from hologram.sessions import SessionStore

DAY = 86400.0
T0 = 1_780_000_000.0


def _open(tmp_path: Path) -> SessionMemory:
    store = SessionStore(tmp_path / "sessions.db")
    return SessionMemory.open(tmp_path, store, load_model=False)


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[SessionMemory]:
    memory = _open(tmp_path)
    yield memory
    asyncio.run(memory.aclose())
    memory.store.close()


def say(
    mem: SessionMemory, sid: str, text: str, *, ts: float, partner: str | None = None, channel: str = "cli"
) -> Prepared:
    """One turn: the input stored (with its speaker), the request prepared, an answer stored."""
    data: dict[str, object] = {"text": text}
    if partner is not None:
        data["partner"] = partner
    mem.store.append(sid, "input", data, channel=channel, ts=ts)
    prepared = asyncio.run(mem.prepare(sid, text, window_tokens=4000, fixed_tokens=0))
    mem.store.append(sid, "response", {"content": "Noted.", "reasoning": None}, channel=channel, ts=ts + 1)
    return prepared


def note_of(prepared: Prepared) -> str:
    return str(prepared.note.content) if prepared.note is not None else ""


def test_a_fact_told_in_one_session_reaches_a_new_sessions_request(tmp_path: Path) -> None:
    mem = _open(tmp_path)
    say(mem, "s1", "By the way, my car's licence plate is 沪B62817, the blue one.", ts=T0)
    say(mem, "s1", "Remind me to water the ferns tomorrow.", ts=T0 + 60)
    asyncio.run(mem.aclose())
    mem.store.close()
    again = _open(tmp_path)  # a restart: what was said is read back from across.db
    try:
        prepared = say(again, "s2", "What is the licence plate of my car?", ts=T0 + 2 * DAY)
        note = note_of(prepared)
        assert HEADER in note and "沪B62817" in note and "session s1" in note and "2026-" in note
        assert len(prepared.across) == 1, "only the input that matches, not the ferns"
        quiet = say(again, "s3", "Hello there, how are you today?", ts=T0 + 3 * DAY)
        assert quiet.across == [] and HEADER not in note_of(quiet), "nothing when the input does not need it"
    finally:
        asyncio.run(again.aclose())
        again.store.close()


def test_chinese_fact_across_sessions(mem: SessionMemory) -> None:
    say(mem, "a", "顺便说一下，我女儿的钢琴老师姓欧阳，每周六上课。", ts=T0)
    prepared = say(mem, "b", "我女儿的钢琴老师姓什么？", ts=T0 + DAY)
    assert "欧阳" in note_of(prepared) and prepared.across


def test_another_persons_words_are_never_recalled(mem: SessionMemory) -> None:
    say(mem, "qq:private:1", "My bank PIN hint is the colour of the old tram.", ts=T0, partner="1", channel="qq")
    say(mem, "qq:private:2-old", "I like jazz.", ts=T0, partner="2", channel="qq")  # both have other sessions
    say(mem, "cli0", "Good morning.", ts=T0)
    other = say(mem, "qq:private:2", "What is my bank PIN hint?", ts=T0 + DAY, partner="2", channel="qq")
    assert other.across == [] and "tram" not in note_of(other), "another QQ user never sees it"
    owner = say(mem, "cli1", "What is my bank PIN hint?", ts=T0 + DAY)
    assert owner.across == [], "nor the owner's own chats"
    same = say(mem, "qq:private:1b", "What is my bank PIN hint?", ts=T0 + 2 * DAY, partner="1", channel="qq")
    assert "tram" in note_of(same), "the same person in another session does"


def test_a_group_gets_nothing_from_other_sessions(mem: SessionMemory) -> None:
    say(mem, "qq:private:7", "My passport number is K7781234.", ts=T0, partner="7", channel="qq")
    say(mem, "qq:group:9", "Anyone up for lunch?", ts=T0 + DAY, partner="8", channel="qq")
    asked = say(mem, "qq:group:9", "What is my passport number?", ts=T0 + DAY + 60, partner="7", channel="qq")
    assert asked.across == [] and "K7781234" not in note_of(asked), "the group would read it"


def test_the_later_statement_is_shown_after_the_earlier(mem: SessionMemory) -> None:
    say(mem, "x", "My gym locker code is 4417.", ts=T0 + 5 * DAY)
    say(mem, "y", "My gym locker code is 9902 now, they changed the locks.", ts=T0 + 9 * DAY)
    say(mem, "w", "My gym locker code is 1234 — my first one.", ts=T0)
    note = note_of(say(mem, "z", "What is my gym locker code?", ts=T0 + 10 * DAY))
    assert note.index("1234") < note.index("4417") < note.index("9902"), note


def test_a_deleted_sessions_words_leave(mem: SessionMemory) -> None:
    say(mem, "gone", "My locker at the pool is number 317.", ts=T0)
    asyncio.run(mem.delete("gone"))
    assert say(mem, "next", "Which locker at the pool is mine?", ts=T0 + DAY).across == []


def test_a_damaged_store_is_set_aside_and_refilled(tmp_path: Path) -> None:
    (tmp_path / "across.db").write_bytes(b"not a database at all" * 300)
    memory = _open(tmp_path)
    try:
        say(memory, "p", "My dentist is Dr Okonkwo on Elm Street.", ts=T0)
        prepared = say(memory, "q", "Who is my dentist?", ts=T0 + DAY)
        assert "Okonkwo" in note_of(prepared)
        assert any(p.name.startswith("across.db.damaged-") for p in tmp_path.iterdir())
    finally:
        asyncio.run(memory.aclose())
        memory.store.close()


def test_scores_are_absolute_not_relative(tmp_path: Path) -> None:
    """With two stored inputs, neither is recalled for an unrelated query just for being the better one."""
    from hologram.memory.across.store import Said
    from hologram.memory.text.tfidf import TermVector

    store = AcrossStore(tmp_path / "a.db")
    store.add([Said("e1", "s1", 1, 1000, "owner", "I adopted a grey cat named Pixel."),
               Said("e2", "s1", 3, 2000, "owner", "The boiler makes a clicking noise.")])  # fmt: skip
    assert store.search(TermVector.from_text("what's the weather like"), None, person="owner", session="s2") == []
    hits = store.search(TermVector.from_text("my cat's name"), None, person="owner", session="s2")
    assert [h.id for h in hits] == ["e1"] and hits[0].score >= MIN_SCORE
    assert person_of("qq", "5") == "qq:5" and person_of("web", None) == "owner"
    store.close()


def test_the_same_words_said_in_many_sessions_are_one_line(tmp_path: Path) -> None:
    """A sentence the person says in many sessions is one line of the note (its newest time), and the slots it
    took go to other statements: before, it and its copies filled all MAX_HITS lines (tools/bench/memory_cross.py).
    Also after a restart (the wording is read back from across.db). Mutation check (done): `_repeat` always
    False turns this red (six copies of the cat line, the boiler line left out)."""
    from hologram.memory.across.store import MAX_HITS, Said
    from hologram.memory.text.tfidf import TermVector

    store = AcrossStore(tmp_path / "a.db")
    copies = [Said(f"c{i}", f"s{i}", 1, 1000 + i, "owner", "My cat sleeps all day, the lazy cat!") for i in range(8)]
    store.add([*copies, Said("b", "s9", 1, 500, "owner", "My cat hates the boiler's noise.")])
    for reopened in (False, True):
        if reopened:
            store.close()
            store = AcrossStore(tmp_path / "a.db")
        hits = store.search(TermVector.from_text("my cat"), None, person="owner", session="new")
        assert len(hits) <= MAX_HITS
        assert [h.id for h in hits if h.id.startswith("c")] == ["c7"], "one line, the newest copy"
        assert "b" in [h.id for h in hits]
    store.close()


def test_an_upgraded_data_directory_recalls_what_earlier_sessions_said(tmp_path: Path) -> None:
    """Inputs stored before across.db existed come from the session log, once (memory/across/across_backfill.py).
    Mutation check (done): `backfill` returning at once turns this red."""
    from hologram.memory.across.across_backfill import backfill

    store = SessionStore(tmp_path / "sessions.db")
    store.append("old", "input", {"text": "My locksmith is called Branko, he lives on Ivy Lane."}, ts=T0)
    store.append("old", "response", {"content": "Noted.", "reasoning": None}, ts=T0 + 1)
    store.close()
    memory = _open(tmp_path)  # starts the backfill in a thread; run it here too (idempotent) to wait for it
    try:
        assert memory.across is not None
        backfill(memory.across, tmp_path / "sessions.db")
        assert memory.across.backfilled()
        assert backfill(memory.across, tmp_path / "sessions.db") == 0, "once per across.db"
        prepared = say(memory, "new", "Who is my locksmith?", ts=T0 + DAY)
        assert "Branko" in note_of(prepared)
    finally:
        asyncio.run(memory.aclose())
        memory.store.close()


def test_l3_facts_of_another_person_are_never_recalled(tmp_path: Path) -> None:
    """The same privacy rule for L3's entity route (facts cooled into the graph, recalled by a name the input
    says): only from sessions of the same person. Real Kùzu. Mutation check (done): `_same_person` returning its
    hits unfiltered turns this red."""
    from .test_l3_membership import open_memory
    from .test_l3_recall import cool_all

    async def run() -> None:
        k = open_memory(tmp_path)
        k.mem.across = AcrossStore(tmp_path / "across.db")
        fact = "Melanie: My favorite book is Charlotte's Web, I read it every summer."
        for sid, partner, text in (("qq:private:1", "1", fact), ("qq:private:2", "2", "Hi!"),
                                   ("qq:private:1b", "1", "Hello again.")):  # fmt: skip
            k.store.append(sid, "input", {"text": text, "partner": partner}, channel="qq")
            await k.mem.prepare(sid, text, window_tokens=4000, fixed_tokens=0)  # the inputs reach across.db
            k.store.append(sid, "response", {"content": "Noted.", "reasoning": None}, channel="qq")
        await cool_all(k, "qq:private:1")
        question = "Do you remember anything about Melanie?"
        asked: dict[str, str] = {}
        for sid, partner in (("qq:private:2", "2"), ("qq:private:1b", "1")):
            k.store.append(sid, "input", {"text": question, "partner": partner}, channel="qq")
            prepared = await k.mem.prepare(sid, question, window_tokens=4000, fixed_tokens=0)
            asked[sid] = note_of(prepared)
        assert "Charlotte's Web" not in asked["qq:private:2"], "another person's fact"
        assert "Melanie | favorite book | Charlotte's Web" in asked["qq:private:1b"], "the same person's"
        searched = await k.mem.recall_l3("qq:private:2", "Charlotte's Web book", budget_tokens=1200)
        assert "Charlotte" not in searched.note, "nor through memory_recall"
        mine = await k.mem.recall_l3("qq:private:1b", "Charlotte's Web book", budget_tokens=1200)
        assert "Charlotte" in mine.note
        k.mem.across.close()
        await k.close()

    asyncio.run(run())


def test_my_x_names_the_speaker_in_l3(tmp_path: Path) -> None:
    """Facts of "my X" are stored under the speaker (`user | 车牌号 | 沪B62817`), a key no question says: the input's
    first person now names the speaker's entity, so the entity route brings the fact to a new session (L3 alone
    here: no across.db). Mutation check (done): without the `speaks_of_self` step in `_l3_ranked` this is red."""
    from .test_l3_membership import open_memory
    from .test_l3_recall import cool_all
    from .test_l3_recall import say as say_l3

    async def run() -> None:
        k = open_memory(tmp_path)
        say_l3(k, "old", "我的车牌号是沪B62817。", "My favorite book is Dune.", "The weather was fine.")
        await cool_all(k, "old")
        say_l3(k, "new", "Hello!")
        for question, fact in (("我的车牌号是多少？", "沪B62817"), ("Which is my favorite book again?", "Dune")):
            k.store.append("new", "input", {"text": question})
            prepared = await k.mem.prepare("new", question, window_tokens=4000, fixed_tokens=0)
            assert fact in note_of(prepared), (question, note_of(prepared))
        await k.close()

    asyncio.run(run())


def test_recall_off_closes_the_store_and_the_backfill_opens_nothing(tmp_path: Path) -> None:
    """``[memory.across] recall = false``: attach closes the store right after `SessionMemory.open` started the
    backfill thread; the thread must then neither fail nor open the file again (an fd the kernel never closes)."""
    from hologram.memory.across.across_backfill import backfill

    store = AcrossStore(tmp_path / "across.db")
    store.close()
    assert backfill(store, tmp_path / "sessions.db") == 0
    assert store.pending("fp") == [] and store.remove_session("s") == 0 and not store.loaded


def test_a_statement_told_just_before_a_restart_is_embedded_by_the_request(tmp_path: Path) -> None:
    """Its vector was not computed before the kernel stopped (the background indexing never ran): the next
    request embeds the few such statements itself before it searches, so a paraphrase sharing no word with the
    fact still finds it. Mutation check (done): ``ACROSS_EMBED_NOW = 0`` turns this red."""
    from hologram.memory.embed.embedder import load_embedder

    embedder = load_embedder()
    if embedder is None:
        pytest.skip("no embedder installed")
    store = SessionStore(tmp_path / "sessions.db")
    store.append("s1", "input", {"text": "Our daughter Mila takes violin lessons every Thursday."}, ts=T0)
    store.close()
    memory = _open(tmp_path)
    memory.embedder = embedder
    try:
        assert memory.across is not None
        from hologram.memory.across.across_backfill import backfill

        backfill(memory.across, tmp_path / "sessions.db")  # stored, with no vector
        assert memory.across.unembedded() == 1
        prepared = say(memory, "s2", "On which weekday does my kid practise her string instrument?", ts=T0 + DAY)
        assert "Mila" in note_of(prepared) and memory.across.unembedded() == 0
    finally:
        asyncio.run(memory.aclose())
        memory.store.close()


def test_the_earlier_line_is_marked_superseded_when_the_rules_can_tell() -> None:
    """In the note, a statement a later one corrects (a shared key, a cue: memory/across/corrections.py) is marked; an
    unrelated earlier line is not. Mutation check (done): `_superseded` returning [] turns this red."""
    from hologram.memory.across.store import SUPERSEDED, AcrossHit, render
    from hologram.memory.text import tokenizer

    tokenizer.ensure_segmenter()
    hits = [
        AcrossHit("a", "s1", 1, 1_000, "My new phone number is 07911 123456.", 0.5),
        AcrossHit("b", "s1", 2, 2_000, "I adopted a cat called Nori.", 0.4),
        AcrossHit("c", "s2", 1, 9_000, "Scratch that, I changed carriers, my number is now 07922 654321.", 0.6),
        AcrossHit("d", "s3", 1, 5_000, "我的车是一辆红色特斯拉。", 0.3),
        AcrossHit("e", "s4", 1, 8_000, "我换车了，现在开一辆白色的比亚迪。", 0.3),
    ]
    lines = render(hits, 2000).note.splitlines()[1:]
    marked = [line for line in lines if SUPERSEDED in line]
    assert len(marked) == 2 and "07911" in marked[0] and "特斯拉" in marked[1], lines
    assert lines.index(marked[0]) < next(i for i, line in enumerate(lines) if "07922" in line)


def test_a_correction_less_close_than_restated_comes_when_the_rules_read_it(tmp_path: Path) -> None:
    """Across sessions: "Our flat is on Harrow Street" … (another session) "we moved house, the new address is 48 Quarry Lane":
    the pair's vectors are at cosine ~0.35 for the int8 USE, below :data:`RESTATED`, so only the rules (a shared
    key, a correction cue) bring the later one along — ranked above the earlier, shown after it, the earlier
    marked superseded. A later statement just as close that corrects nothing (no shared key) does not come.
    Vectors are set by hand to those cosines, so this holds whatever embedder is installed. Mutation checks
    (done): `_keyed_corrections` returning [] turns this red; dropping the cue pre-filter's rule check (every
    candidate kept) turns the unrelated line's assertion red."""
    import numpy as np

    from hologram.memory.across.store import KEYED_RESTATED, RESTATED, SUPERSEDED, Said, render

    store = AcrossStore(tmp_path / "across.db")
    told = [
        Said("a", "s1", 1, 1_000, "", "Our flat is on Harrow Street, number 12."),
        Said("b", "s2", 1, 5_000, "", "We moved house, the new address is 48 Quarry Lane."),
        Said("c", "s3", 1, 6_000, "", "We switched to a new broadband deal, it is much faster now."),
    ]
    store.add(told)
    cos = (KEYED_RESTATED + RESTATED) / 2
    assert KEYED_RESTATED < cos < RESTATED
    earlier = np.zeros(8, dtype=np.float32)
    earlier[0] = 1.0
    later = np.zeros(8, dtype=np.float32)  # b and c alike: as close to a, and far from the query
    later[0], later[1] = cos, float(np.sqrt(1 - cos**2))
    query = np.zeros(8, dtype=np.float32)
    query[0], query[1] = 0.8, -0.6
    store.set_vectors("fp", [("a", earlier), ("b", later), ("c", later.copy())])
    from hologram.memory.embed.vectors import DenseVector
    from hologram.memory.text.tfidf import TermVector

    hits = store.search(
        TermVector.from_text("Where do we live?"), DenseVector("fp", query), person=told[0].person, session="new"
    )
    ids = [h.id for h in hits]
    assert "a" in ids and "b" in ids, ids
    assert "c" not in ids, ids
    assert ids.index("b") < ids.index("a")  # ranked above the earlier statement
    lines = render(hits, 2000).note.splitlines()[1:]
    stale = next(line for line in lines if "Harrow" in line)
    assert SUPERSEDED in stale and lines.index(stale) < next(i for i, x in enumerate(lines) if "Quarry" in x)
    store.close()


def test_what_waits_for_a_vector_is_found_by_seeks_not_a_scan(tmp_path: Path) -> None:
    """`pending` (asked after every turn) names the told inputs with no vector of the current model — none yet,
    or another model's — and never the others; it seeks in an index instead of reading every input the person
    ever said, so its cost does not grow with the store (the 10,000-turn soak's late turns). Mutation check
    (done): the old ``fp IS NULL OR fp != ?`` query turns the plan assertion red."""
    import numpy as np

    from hologram.memory.across import store as across_store
    from hologram.memory.across.store import Said

    store = AcrossStore(tmp_path / "a.db")
    store.add([Said(f"e{i}", "s1", i, 1000 + i, "owner", f"My cat number {i} is called Pixel{i}.") for i in range(6)])
    told = {i for i, _ in store.pending("m1")}
    assert told, "nothing told waits for a vector"
    store.set_vectors("m1", [(i, np.ones(8, dtype=np.float32)) for i in sorted(told)[:-1]])
    assert [i for i, _ in store.pending("m1")] == [sorted(told)[-1]]  # the one not embedded yet
    assert {i for i, _ in store.pending("m2")} == told  # another model: all of them again
    assert store._db is not None
    plan = store._db.execute("EXPLAIN QUERY PLAN " + across_store._PENDING, ("m1", 64)).fetchall()
    steps = [str(row[-1]) for row in plan]
    assert all(not step.startswith("SCAN") for step in steps), steps
    assert sum("said_fp" in step for step in steps) == 3, steps
    store.close()
