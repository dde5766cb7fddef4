"""The person's messages carry their date when a request's history spans days (issue 39 item 3,
memory/across/dated.py), through `SessionMemory.prepare` on a real store; within one day nothing changes.

Mutation check (done): dating only when the inputs span one day (``len(days) > 1`` → ``> 2``) turns
``test_a_history_over_two_days_is_dated`` red.
"""

from __future__ import annotations

import asyncio
from datetime import datetime

from hologram.memory.across.dated import day_of
from hologram.memory.session_memory import SessionMemory

MONDAY = datetime(2026, 5, 11, 9, 0).timestamp()


def _turn(mem: SessionMemory, sid: str, text: str, ts: float) -> list[str]:
    mem.store.append(sid, "input", {"text": text}, ts=ts)
    prepared = asyncio.run(mem.prepare(sid, text, window_tokens=4000, fixed_tokens=0))
    mem.store.append(sid, "response", {"content": "Okay.", "reasoning": None}, ts=ts + 1)
    return [str(m.content) for m in prepared.messages if m.role == "user"]


def test_a_history_within_one_day_is_sent_as_it_is(mem: SessionMemory) -> None:
    _turn(mem, "d", "The plumber comes at ten.", MONDAY)
    users = _turn(mem, "d", "When does the plumber come?", MONDAY + 3600)
    assert users == ["The plumber comes at ten.", "When does the plumber come?"]


def test_a_history_over_two_days_is_dated(mem: SessionMemory) -> None:
    _turn(mem, "d", "The plumber comes at ten.", MONDAY)
    _turn(mem, "d", "He fixed the tap.", MONDAY + 600)
    users = _turn(mem, "d", "What did I say yesterday?", MONDAY + 86400)
    assert users == [
        "[2026-05-11 Mon] The plumber comes at ten.",
        "He fixed the tap.",  # the same day: dated once
        "[2026-05-12 Tue] What did I say yesterday?",
    ]
    assert day_of(MONDAY) == "2026-05-11 Mon"
    stored = [e.data.get("text") for e in mem.store.events("d") if e.kind == "input"]
    assert stored[0] == "The plumber comes at ten.", "the stored event never changes"
