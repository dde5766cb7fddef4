"""Turns that state nothing: a question, a request, a "Thanks!" — matched by a question's words, holding no answer.

Why a ranking signal of its own (issue 39 item 1): a question asked later ("What are the names of Andrew's
dogs?") shares its words with the *questions* asked earlier far more than with the statements that answer
them — "What is his name?", "What's the pup's name?" ranked first, second and third in LoCoMo's conversation
44, while "meet Toby, my puppy" ranked 387th. The earlier question is still a good pointer: the turn after it
usually answers it, and the turn-neighbour smoothing (``TURN_NEIGHBOUR_WEIGHTS``) gives that answer a share
of the question's score. So the question keeps its score *as a neighbour* and loses
:data:`SAYS_NOTHING_PENALTY` as a candidate of its own, after smoothing: the room it took in the request goes
to a statement.

What "states nothing" is, is :func:`hologram.memory.text.utterance.tells` (rules, English and Chinese): no sentence
that is a statement with some content, after a leading speaker label ("Audrey: ", "小雨：" — how a group's or an
imported conversation's messages name who said them; with the label, "Audrey: That's awesome!" counted three
words and passed as a statement). Only inputs and responses with text are judged (a tool call's empty
response and tool results are not). The flag is a bit of the index's per-event ``kind`` byte
(:data:`SAYS_NOTHING_BIT`), so it is stored in the index's segments with no change of their format, and an
older segment without it simply ranks as before.

Measured (dev split 26/30/41 at 4k, one streamed state per conversation, ``SessionMemory.preview``): 0.938 →
0.942 with a penalty of 1 (0.5: 0.941, 1.5: 0.942); held-out (the other seven) 0.903 → 0.905.
"""

from __future__ import annotations

import re

from hologram.memory.text.utterance import tells

__all__ = ["SAYS_NOTHING_BIT", "SAYS_NOTHING_PENALTY", "says_nothing"]

#: The bit of the index's ``kind`` byte that marks an event which states nothing (the kind codes are 1-3).
SAYS_NOTHING_BIT = 0x80
#: Subtracted (z-score units) from such an event's own score, after the neighbours took their share of it.
SAYS_NOTHING_PENALTY = 1.0
_JUDGED = frozenset({"input", "response"})
_LABEL = re.compile(r"^\s*[^\s:：]{1,32}[:：]\s*")


def says_nothing(kind: str, text: str) -> bool:
    """Whether an event of `kind` with `text` states nothing (module docstring)."""
    return kind in _JUDGED and bool(text.strip()) and not tells(_LABEL.sub("", text, count=1))
