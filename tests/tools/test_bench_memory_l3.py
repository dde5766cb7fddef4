"""tools/bench/memory_stream.py's L3 protocol on a conversation small enough to reason about by hand.

The LoCoMo figures (`memory.py --protocol stream --l3`) are only as good as the harness's accounting: that
cooling really runs on the conversation's clock, that "L3 off" really loses what L3 holds, and that an
evidence turn the L3 note carries counts as in context — and as reachable *only* through L3. Here one fact
is said in session 1 among filler, pruned to L2 by the small budget, cooled into a real Kùzu graph at
session 2's start (four days later on the conversation's clock), and asked about after session 3.
BM25 only (no embedder), the product's SessionMemory and GraphMemory, no stand-ins.
"""

from __future__ import annotations

from bench.memory_stream import L3Result, StreamTurn, report_l3, run_stream, run_stream_l3

DAY = 86_400.0
START = 1_700_000_000.0
FACT = "Melanie: my sister Priscilla adopted a greyhound called Biscuit from the Lisbon shelter."
FILLER = [
    "the weather was grey again and the bus was late so I walked the long way past the market",
    "we cooked a big pot of lentil soup and talked about the garden and the new fence",
    "work was busy with meetings about the budget and nobody agreed on the schedule",
    "I finally fixed the squeaky door and then watched an old film about sailors",
    "the kids played football in the park until it got dark and cold outside",
    "my phone battery died twice today so I bought a new charger at the station",
]


def _conversation() -> list[StreamTurn]:
    turns: list[StreamTurn] = []
    for session in (1, 2, 3):
        start = START + (session - 1) * 4 * DAY
        texts = [FACT] if session == 1 else []
        texts += [f"{'Caroline' if i % 2 else 'Melanie'}: {FILLER[(i + session) % len(FILLER)]} ({i})"
                  for i in range(40)]  # fmt: skip
        turns += [StreamTurn(f"D{session}:{i + 1}", text, start + 60.0 * i) for i, text in enumerate(texts)]
    return turns


QUESTION = ("What is the name of the greyhound Priscilla adopted from the Lisbon shelter?", {"D1:1"})


def _run(budget: int = 600) -> L3Result:
    conversation = [("t", _conversation(), [QUESTION])]
    return run_stream_l3(conversation, [budget], None, pinned=2, dev_split=frozenset())


def test_a_fact_cooled_into_l3_is_lost_with_recall_off_and_carried_by_the_note_with_it_on() -> None:
    """Mutation-checked: with ClockedColdStore's put/touch on the wall clock (`now` ignored) nothing is idle
    72 h at session 2, nothing cools, and `moved`/`in_l3` fail; with `carried` left empty (the note not
    counted) `on` and `only_l3` fail; with SessionMemory's L3 mask removed (``in_l3`` all false in
    ``_prepare``) the run fails: what L3 holds would be pruned back into L2."""
    result = _run()
    clock = result.rows[(600, "clock")]
    assert result.moved[(600, "clock")] > 0, "cooling at the session boundary moved nothing"
    assert clock.in_l3 == [1.0], "the fact's turn should be held by L3 at question time"
    assert clock.off == [0.0], "with L3 recall off the fact must be gone from the request"
    assert clock.on == [1.0], "with L3 recall on the note must carry the fact's turn"
    assert clock.only_l3 == 1 and clock.coverage == [1.0]
    assert clock.note_tokens[0] > 0 and clock.recall_ms[0] > 0
    forced = result.rows[(600, "forced")]
    assert result.l2_left[(600, "forced")] == 0, "forced cooling leaves nothing in L2"
    assert forced.on == [1.0]


def test_without_cooling_the_same_fact_is_in_context_and_the_report_prints_both(capsys: object) -> None:
    """The no-cooling column is today's stream (L2 auto-recall brings the fact back), and the report lays
    the two side by side."""
    conversation = [("t", _conversation(), [QUESTION])]
    baseline = run_stream(conversation, [600], None, pinned=2, dev_split=frozenset())
    assert baseline.recall[600] == [1.0]
    report_l3(_run(), baseline, [600])
    out = capsys.readouterr().out  # type: ignore[attr-defined]
    assert "   600 |   clock |      1.000 |  0.000 |  1.000 |       1 |" in out
