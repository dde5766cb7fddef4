"""The request's older history in fewer messages (issue 39 item 1, memory/joined.py and memory/rank/fit.py's
`fit_messages`): the inputs ranking picked from before the recent window are joined into one user message per
run, each still a paragraph of its own with its speaker and date; a tool call and its results, responses with
reasoning and the recent window stay one message each; the budget charges the overhead per message sent, so
the same budget carries more events — and never more tokens than it has.

Real SessionStore and ColdStore on disk; every request checked by the strict mock's validator (OpenAI, and
DeepSeek in thinking mode).

Mutation checks (done): joining inside the recent window too (``event.seq < recent_from`` dropped in
`join_older`) turns ``test_older_inputs_join_and_the_rest_stays_as_it_is`` red; letting a response with tool
calls join turns it red; `fit_messages` charging every event whole (``roles=None`` in `SessionMemory`) turns
``test_the_saved_overhead_buys_more_events`` red; dropping the per-message overhead of a run
(``extra = 0`` in `_fill_joined`) turns ``test_a_joined_request_stays_within_its_budget`` red.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from itertools import pairwise

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hologram.llm import Message
from hologram.memory import session_memory
from hologram.memory.across.dated import dated
from hologram.memory.joined import SEPARATOR, join_older
from hologram.memory.rank.fit import fit_messages
from hologram.memory.session_memory import SessionMemory
from hologram.sessions import Event

from .test_fit_properties import History, index_of
from .test_session_memory import assert_valid, window_for

DAY1 = datetime(2026, 5, 11, 9, 0).timestamp()
DAY2 = DAY1 + 86400
LAST = "Bob: Work was busy, meeting number 119 ran late and the train was full again."


def _event(seq: int, kind: str, ts: float, **data: object) -> Event:
    call = {"call_of": 4, "call_id": "c1"} if kind == "tool_result" else {}
    return Event(seq=seq, session="s", kind=kind, ts=ts, data=dict(data), **call)  # type: ignore[arg-type]


HISTORY = [
    _event(1, "input", DAY1, text="Alice: We adopted a puppy, Toby."),
    _event(2, "input", DAY1 + 60, text="Bob: Mine is called Rex."),  # (the response between was not kept)
    _event(3, "response", DAY1 + 65, content="Let me look that up.", reasoning=None),
    _event(
        4,
        "response",
        DAY1 + 70,
        content="Checking.",
        reasoning=None,
        tool_calls=[{"id": "c1", "name": "search", "arguments": "{}"}],
    ),
    _event(5, "tool_result", DAY1 + 71, name="search", content="Toby: a beagle"),
    _event(6, "input", DAY2, text="Alice: Toby learned to sit."),
    _event(7, "input", DAY2 + 10, text="Bob: Good boy!"),
    _event(8, "response", DAY2 + 20, content="Nice.", reasoning=None),
    _event(9, "response", DAY2 + 30, content="Very nice.", reasoning=None),
    _event(10, "response", DAY2 + 40, content="Thought it through.", reasoning="deep"),
    _event(20, "input", DAY2 + 600, text="Alice: How is Toby?"),  # the recent window from here
    _event(21, "input", DAY2 + 610, text="Bob: Still sitting."),
]


def test_older_inputs_join_and_the_rest_stays_as_it_is() -> None:
    messages, joined = join_older(dated(HISTORY), recent_from=20, roles=("user",))
    assert [m.role for m in messages] == ["user", "assistant", "assistant", "tool", "user", "assistant",
                                          "assistant", "assistant", "user", "user"]  # fmt: skip
    assert (
        messages[0].content == f"[2026-05-11 Mon] Alice: We adopted a puppy, Toby.{SEPARATOR}Bob: Mine is called Rex."
    )
    assert messages[4].content == f"[2026-05-12 Tue] Alice: Toby learned to sit.{SEPARATOR}Bob: Good boy!"
    # the call and its result untouched, the tool message right after the call it answers
    assert messages[2].tool_calls[0].id == "c1" and messages[2].content == "Checking."
    assert messages[3].tool_call_id == "c1" and messages[3].content == "Toby: a beagle"
    # the recent window: one message per event, even two inputs in a row
    assert [m.content for m in messages[-2:]] == ["Alice: How is Toby?", "Bob: Still sitting."]
    assert joined == 2

    both, joined_both = join_older(dated(HISTORY), recent_from=20)
    assert both[1:4] == messages[1:4], "a plain response before a call stays apart from it"
    assert both[5] == Message.assistant(f"Nice.{SEPARATOR}Very nice.")  # plain responses join
    assert both[6].reasoning_content == "deep", "a response with reasoning stays whole (DeepSeek replays it)"
    assert joined_both == 3


def _ask(mem: SessionMemory, sid: str, text: str, window: int) -> session_memory.Prepared:
    prepared = asyncio.run(mem.preview(sid, text, window_tokens=window, fixed_tokens=0))
    assert_valid(prepared)  # the strict mock accepts it
    return prepared


GARDEN = ["roses", "tomatoes", "the hedge", "the pond", "basil", "the lawn", "tulips", "the apple tree"]


def _long(mem: SessionMemory) -> str:
    """A LoCoMo-like session: 120 turns of two people's news, each answered "Noted.", a third of them about
    the garden; prepared turn by turn as the kernel does, so most of it is in L2."""
    sid = mem.store.create_session("cli", "g")
    for i in range(120):
        who = ("Alice", "Bob")[i % 2]
        if i % 3 == 0:
            text = f"{who}: In the garden today I looked after {GARDEN[i // 3 % len(GARDEN)]}, day {i}."
        else:
            text = f"{who}: Work was busy, meeting number {i} ran late and the train was full again."
        mem.store.append(sid, "input", {"text": text}, ts=DAY1 + 600 * i)
        asyncio.run(mem.prepare(sid, text, window_tokens=window_for(400), fixed_tokens=0))
        mem.store.append(sid, "response", {"content": "Noted.", "reasoning": None}, ts=DAY1 + 600 * i + 1)
    return sid


def test_a_joined_request_stays_within_its_budget(mem: SessionMemory) -> None:
    sid = _long(mem)
    joined = 0
    for budget in (300, 500, 700, 1000, 1500):
        prepared = _ask(mem, sid, "What did I look after in the garden?",
                        window_for(budget))  # fmt: skip
        sent = [m for m in prepared.messages if isinstance(m.content, str)]
        joined += len(prepared.seqs) - len(prepared.messages)
        assert prepared.kept_tokens <= prepared.budget_tokens, budget
        texts = "\n".join(str(m.content) for m in sent)
        for event in mem.store.events(sid):
            if event.seq in prepared.seqs and event.kind == "input":
                assert event.data["text"] in texts, "every event behind the messages is in them"
        assert prepared.messages[-2:] == [Message.user(LAST), Message.assistant("Noted.")], "the recent window"
    assert joined >= 10, "older inputs were joined"


def test_the_saved_overhead_buys_more_events(mem: SessionMemory, monkeypatch: pytest.MonkeyPatch) -> None:
    sid = _long(mem)
    question = "What did I look after in the garden?"
    joined = _ask(mem, sid, question, window_for(600))
    monkeypatch.setattr(session_memory, "JOIN_ROLES", ())
    alone = _ask(mem, sid, question, window_for(600))
    assert len(alone.messages) == len(alone.seqs), "without joining: one message per event"
    assert len(joined.seqs) > len(alone.seqs), "the overhead saved bought more events"
    garden = {e.seq for e in mem.store.events(sid) if "garden" in str(e.data.get("text", ""))}
    assert len(garden & set(joined.seqs)) > len(garden & set(alone.seqs)), "more of the turns that answer"


#: LoCoMo-like histories: costs of 4-40 tokens (the overhead included), few call groups, so that a request keeps
#: many events and meets the budget's edge often.
SHORT = st.lists(
    st.tuples(
        st.integers(4, 40), st.one_of(st.none(), st.none(), st.none(), st.integers(0, 5)), st.integers(-2, 2).map(float)
    ),
    min_size=1,
    max_size=80,
)


@settings(max_examples=300)
@given(SHORT, st.integers(0, 700), st.integers(1, 12), st.data())
def test_what_fit_messages_keeps_fits_as_it_is_sent(
    history: History, budget: int, pinned: int, data: st.DataObject
) -> None:
    """For any history (inputs and responses alternating, call groups among them), candidates, explicit
    recalls and budget: the kept events cost, as they are sent — each run of older inputs one message, its
    overhead (4) once, a separator (1) per input joined — no more than the budget (unless the newest alone is
    over it), and so does each run of plain responses; whole call groups; the newest candidate always kept; nothing joined from the recent window."""
    index = index_of(history)
    n = len(history)
    scores = np.array([s for _, _, s in history])
    candidates = index.whole_units(np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n))))
    recall = data.draw(st.lists(st.sampled_from([False] * 9 + [True]), min_size=n, max_size=n))  # a few
    forced = candidates & np.array(recall) if data.draw(st.booleans()) else None
    got = fit_messages(index, scores, candidates, budget, pinned_recent=pinned, forced=forced,
                       roles=index.roles, overhead=4, separator=1)  # fmt: skip
    keep = got.keep
    assert not (keep & ~candidates).any()
    for members in index.units:
        assert len({bool(keep[m]) for m in members if candidates[m]}) <= 1
    if candidates.any():
        newest = int(np.flatnonzero(candidates)[-1])
        assert keep[newest] and got.recent_from <= newest
    kept = np.flatnonzero(keep).tolist()
    roles = index.roles
    joined = sum(
        1
        for a, b in pairwise(kept)
        if b < got.recent_from and roles[a] == roles[b] > 0  # inputs with inputs, plain responses with responses
    )
    cost = np.array([c for c, _, _ in history])
    if not got.over:
        assert int(cost[keep].sum()) - 3 * joined <= budget
