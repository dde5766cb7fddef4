"""The date on the person's messages when a request's history spans days (issue 39 item 3).

A model reads a history without times: "what did I say yesterday?" or "is it still on for Friday?" cannot be
answered from it, and a correction made two days after the fact reads like a contradiction in one sitting. So
when the inputs a request carries fall on more than one calendar day, the first input of each day is sent with
its date in front ("[2026-05-13 Wed] …"), in the kernel's local time, the time the time cues read
(memory/text/timecues.py). A history within one day is sent as it is: a date there says nothing and costs tokens.
The stored events never change; this is the request's reading of them only.
"""

from __future__ import annotations

from collections.abc import Sequence, Set
from datetime import date, datetime

import numpy as np

from hologram.llm import Message
from hologram.memory.text.tokens import estimate_tokens
from hologram.sessions import Event, message_of

__all__ = ["dated", "dated_messages", "day_of", "markup_tokens"]


#: How a day is shown ("2026-05-13 Wed").
_SHOWN = "%Y-%m-%d %a"


def day_of(ts: float) -> str:
    """The local calendar day of `ts` as it is shown ("2026-05-13 Wed")."""
    return datetime.fromtimestamp(ts).strftime(_SHOWN)


def dated_messages(events: Sequence[Event], superseded: Set[int] = frozenset()) -> list[Message]:
    """`messages_from_events(events)`, the first input of each day dated when the inputs span days, and the
    inputs whose seq is in `superseded` (a later statement corrects them: memory/across/corrections.py) marked so."""
    return [message for _, message in dated(events, superseded)]


def dated(events: Sequence[Event], superseded: Set[int] = frozenset()) -> list[tuple[Event, Message]]:
    """:func:`dated_messages` with the event behind each message (memory/joined.py joins the older ones)."""
    from hologram.memory.across.corrections import MARK

    # the calendar day as a date, formatted once per day shown (strftime per event was most of this loop)
    dates = {e.seq: datetime.fromtimestamp(e.ts).date() for e in events if e.kind == "input" and e.ts > 0}
    spans = len(set(dates.values())) > 1
    out: list[tuple[Event, Message]] = []
    shown: date | None = None
    for event in events:
        message = message_of(event)
        if message is None:
            continue
        if spans and event.seq in dates and isinstance(message.content, str):
            day = dates[event.seq]
            if day != shown:
                message, shown = Message.user(f"[{day.strftime(_SHOWN)}] {message.content}"), day
        if event.seq in superseded and event.kind == "input" and isinstance(message.content, str):
            message = Message.user(f"{MARK} {message.content}")
        out.append((event, message))
    return out


#: What :func:`dated` puts in front of an input: its day, or (memory/across/corrections.py's MARK) the mark.
DATE_TOKENS = estimate_tokens("[2026-05-13 Wed] ")


def markup_tokens(times: np.ndarray, superseded: int) -> int:
    """The tokens :func:`dated` adds to inputs sent at `times` (epoch seconds), `superseded` of them marked: a date
    per local day when they span more than one, the mark on each superseded one — for the budget, which must pay
    what is sent (memory/session_memory.py). Days in the kernel's current UTC offset (a DST change inside a
    history can move an input to its neighbouring day: a token estimate, not the rendering)."""
    from hologram.memory.across.corrections import MARK

    stamped = times[times > 0]
    offset = datetime.now().astimezone().utcoffset()
    seconds = offset.total_seconds() if offset is not None else 0.0
    days = int(np.unique(np.floor((stamped + seconds) / 86400.0)).size)
    return (DATE_TOKENS * days if days > 1 else 0) + estimate_tokens(f"{MARK} ") * superseded
