"""A turn scored once (hologram/memory/turn_ranking.py): a tool loop's later request fits what its first request
scored, extended by what the loop appended, without scoring again — choosing what a full ranking would, moving
what loses to L2 as a ranked request does, reading the layers afresh — and a new input or a turn that ended
ranks again.

Real SessionStore and ColdStore on disk; each request checked by the strict mock's validator. Whether a request
scored is read from the index's own scoring call (`SessionIndex.scores`, counted).

Mutation checks (done): `_prepare_locked` never taking the turn's ranking — the first three tests red (scored
again); `TurnRanking.holds` ignoring the input — the new-input test red; `turn_ended` keeping the ranking — the
last test red.
"""

from __future__ import annotations

import asyncio

import pytest

from hologram.memory.index.session_index import SessionIndex
from hologram.memory.session_memory import SessionMemory
from hologram.memory.session_records import Prepared

from .test_session_memory import EN_TOPICS, assert_invariants, assert_valid, long_session, window_for

WINDOW = window_for(600)


@pytest.fixture
def rankings(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the index's scoring calls (one per ranked request)."""
    calls: list[int] = []
    scores = SessionIndex.scores

    def counted(self: SessionIndex, *args: object, **kwargs: object) -> object:
        calls.append(1)
        return scores(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(SessionIndex, "scores", counted)
    return calls


def prepare(mem: SessionMemory, sid: str, text: str) -> Prepared:
    prepared = asyncio.run(mem.prepare(sid, text, window_tokens=WINDOW, fixed_tokens=0))
    assert_valid(prepared)
    return prepared


def tool_step(mem: SessionMemory, sid: str, n: int, content: str = "12 degrees, light rain") -> list[int]:
    """The model's tool call and its result, appended as the turn loop appends them; their seqs."""
    call = {"id": f"w{n}", "name": "weather", "arguments": "{}"}
    seq = mem.store.append(sid, "response", {"content": "", "reasoning": "look it up", "tool_calls": [call]})
    mem.store.add_result(sid, seq, f"w{n}", {"name": "weather", "content": content})
    return [seq, next(e.seq for e in mem.store.events(sid, after=seq) if e.call_of == seq)]


def first_request(mem: SessionMemory, rankings: list[int]) -> tuple[str, str, Prepared]:
    sid = long_session(mem.store, turns=30)
    text = EN_TOPICS[0]
    mem.store.append(sid, "input", {"text": text})
    first = prepare(mem, sid, text)
    assert rankings and first.pruned, "the premise: the first request ranked the long session and pruned it"
    rankings.clear()
    return sid, text, first


def test_a_later_request_fits_the_first_ones_scores_with_what_was_appended(
    mem: SessionMemory, rankings: list[int]
) -> None:
    sid, text, _ = first_request(mem, rankings)
    appended = tool_step(mem, sid, 1) + tool_step(mem, sid, 2)
    again = prepare(mem, sid, text)
    assert rankings == [], "not scored again"
    assert set(appended) <= set(again.seqs), "the loop's calls and results are sent"
    assert again.kept_tokens <= again.budget_tokens
    assert_invariants(mem, sid)
    # what a kernel that never saw the first request would send now: the same events
    fresh = SessionMemory(mem.store, mem.cold, None)
    assert asyncio.run(fresh.preview(sid, text, window_tokens=WINDOW, fixed_tokens=0)).seqs == again.seqs


def test_results_that_outgrow_the_budget_are_fitted_by_the_same_scores(mem: SessionMemory, rankings: list[int]) -> None:
    sid, text, _ = first_request(mem, rankings)
    long_result = " ".join(f"reading {i}: wind from the north-west" for i in range(60))  # ~500 tokens
    appended = tool_step(mem, sid, 1, content=long_result)
    again = prepare(mem, sid, text)
    assert rankings == [], "not scored again"
    assert set(appended) <= set(again.seqs), "the loop's newest call and result are sent"
    assert again.kept_tokens <= again.budget_tokens
    assert again.pruned, "older events made room: moved to L2 as a ranked request moves them"
    assert_invariants(mem, sid)


def test_an_event_l2_let_go_of_in_between_is_sent_or_held_again(mem: SessionMemory, rankings: list[int]) -> None:
    sid, text, first = first_request(mem, rankings)
    back = first.pruned[0]
    mem.cold.remove([back])  # L2 lets go of it (what a recall does): it is L1 again
    tool_step(mem, sid, 1)
    again = prepare(mem, sid, text)
    assert rankings == []
    assert back in mem.cold or first.pruned_seqs[0] in again.seqs, "the layers are read afresh"
    assert_invariants(mem, sid)


def test_a_new_input_is_a_new_turn_and_ranks(mem: SessionMemory, rankings: list[int]) -> None:
    sid, text, _ = first_request(mem, rankings)
    mem.store.append(sid, "response", {"content": "Here is a recipe.", "reasoning": "ok"})
    mem.store.append(sid, "input", {"text": text})  # the same words, a new turn
    prepare(mem, sid, text)
    assert rankings == [1]


def test_a_turn_that_ended_holds_no_ranking(mem: SessionMemory, rankings: list[int]) -> None:
    sid, text, _ = first_request(mem, rankings)
    mem.turn_started(sid)
    mem.turn_ended(sid)
    tool_step(mem, sid, 1)
    prepare(mem, sid, text)
    assert rankings == [1]
