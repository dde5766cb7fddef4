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
from hologram.memory.session_records import MESSAGE_OVERHEAD
from hologram.memory.text.tokens import estimate_tokens

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


def test_the_dates_sent_are_paid_by_the_budget(mem: SessionMemory) -> None:
    """Forty days of inputs, each on a day of its own, in a window whose history holds about half of them: the
    request is ranked and joined, every input kept carries a date, and what is sent — the messages' texts, their
    dates included, and each message's overhead — stays within the history budget (before, the dates went out
    unpaid: ~5 tokens each, 6 % of a 4k budget over a month)."""
    words = ["garden", "tomatoes", "basil", "compost", "watering", "shed", "fence", "roses", "hedge", "mulch"]
    for day in range(40):
        text = f"Day {day}: " + " ".join(words[(day + k) % len(words)] for k in range(12)) + " in the garden today."
        _turn(mem, "g", text, MONDAY + day * 86400)
    question = "What did I do in the garden with the tomatoes and the basil?"
    mem.store.append("g", "input", {"text": question}, ts=MONDAY + 41 * 86400)
    prepared = asyncio.run(mem.prepare("g", question, window_tokens=1500, fixed_tokens=0))
    users = [str(m.content) for m in prepared.messages if m.role == "user"]
    dates = sum(u.count("[2026-") for u in users)
    assert dates >= 10, "the request spans days, and its inputs carry their dates"
    assert any("\n\n" in u for u in users), "older inputs were joined: the ranked path"
    sent = sum(estimate_tokens(str(m.content)) + MESSAGE_OVERHEAD for m in prepared.messages)
    assert sent <= prepared.budget_tokens, (sent, prepared.budget_tokens)
    assert sent <= prepared.kept_tokens, "kept_tokens counts the dates"
