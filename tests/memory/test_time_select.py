"""Time cues select by the turns' real times (issue 39 item 3): "what did I say yesterday?" gets yesterday's
messages whenever plain truncation would keep them — it got 0 of 4 with the old nudge — and what else fits still
competes. `SessionMemory.prepare` on a real store (BM25 only).

Mutation check (done): ``TIME_SELECT = 0`` turns ``test_yesterday_is_in_the_request_as_truncation_keeps_it``
red.
"""

from __future__ import annotations

import asyncio
from datetime import datetime

from hologram.memory.session_memory import SessionMemory

from .test_session_memory import EN_TOPICS

DAY = 86400.0
THREE_DAYS_AGO = datetime(2026, 5, 11, 9, 0).timestamp()
YESTERDAY_SAID = [
    "The new neighbours have a loud parrot.",
    "I booked the dentist for the twentieth.",
    "Lunch was a disappointing salad.",
    "The train home was cancelled again.",
]


def test_yesterday_is_in_the_request_as_truncation_keeps_it(mem: SessionMemory) -> None:
    sid = "days"
    ts = THREE_DAYS_AGO
    for i in range(24):  # days before: long talk that says "yesterday" and "say" a lot (a diary does)
        text = f"Yesterday I said I would say more about this: {EN_TOPICS[i % len(EN_TOPICS)]} " * 2
        mem.store.append(sid, "input", {"text": text}, ts=ts + i * 60)
        mem.store.append(sid, "response", {"content": "Interesting, tell me more.", "reasoning": None},
                         ts=ts + i * 60 + 5)  # fmt: skip
    for i, text in enumerate(YESTERDAY_SAID):
        mem.store.append(sid, "input", {"text": text}, ts=ts + 2 * DAY + i * 600)
        mem.store.append(sid, "response", {"content": "Noted.", "reasoning": None}, ts=ts + 2 * DAY + i * 600 + 5)
    today = ts + 3 * DAY
    for i in range(8):  # today: short chat, more than the pinned recent events
        mem.store.append(sid, "input", {"text": f"Fine {i}."}, ts=today + i * 60)
        mem.store.append(sid, "response", {"content": "Ok.", "reasoning": None}, ts=today + i * 60 + 5)
    question = "What did I say yesterday?"
    mem.store.append(sid, "input", {"text": question}, ts=today + 600)
    prepared = asyncio.run(mem.prepare(sid, question, window_tokens=900, fixed_tokens=0))
    sent = " ".join(str(m.content) for m in prepared.messages)
    kept = [t for t in YESTERDAY_SAID if t in sent]
    # what truncation keeps of the same history within the same budget
    events = mem.store.events(sid)
    room, newest = prepared.budget_tokens, []
    for event in reversed(events):
        text = str(event.data.get("text") or event.data.get("content") or "")
        cost = len(text) // 4 + 8
        if cost > room:
            break
        room -= cost
        newest.append(text)
    by_truncation = [t for t in YESTERDAY_SAID if t in newest]
    assert len(by_truncation) == 4, "the setting: truncation keeps all of yesterday"
    assert kept == YESTERDAY_SAID, (kept, sent[:300])
