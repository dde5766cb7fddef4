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

**A question wrapped in a pleasantry states nothing either** (:func:`asks_only`, issue 39 item 1, fifth round):
"Andrew: That's so cute! What sort of activities do you do to stay mentally stimulated?" passed as a statement
(three words before the question), and ranked first for "What kind of indoor activities has Andrew pursued
with his girlfriend?" at z 10.8. A turn that asks and whose statements are all shorter than
:data:`SHORT_WORDS` words (:data:`SHORT_HAN` Han characters) is an exclamation around a question; it is
marked as a turn that states nothing. Measured the same way, all ten conversations at 4k: 0.927 → 0.930
(held-out 0.920 → 0.923; 5 words: 0.929, 6: 0.930, 8: 0.930); docs/memory.md, fifth round.
"""

from __future__ import annotations

import re

from hologram.memory.text.utterance import is_question, is_request, sentences, tells

__all__ = ["SAYS_NOTHING_BIT", "SAYS_NOTHING_PENALTY", "SHORT_HAN", "SHORT_WORDS", "asks_only", "says_nothing"]

#: The bit of the index's ``kind`` byte that marks an event which states nothing (the kind codes are 1-3).
SAYS_NOTHING_BIT = 0x80
#: Subtracted (z-score units) from such an event's own score, after the neighbours took their share of it.
SAYS_NOTHING_PENALTY = 1.0
#: A statement beside a question shorter than this many words ("That's so cute!") is a pleasantry, not news.
SHORT_WORDS = 7
#: The same in Han characters (太好了！, 哇，真可爱！), about 1.5 a word.
SHORT_HAN = 10
_JUDGED = frozenset({"input", "response"})
_LABEL = re.compile(r"^\s*[^\s:：]{1,32}[:：]\s*")
_WORD = re.compile(r"[A-Za-z0-9]+(?:['’][A-Za-z]+)?")
_HAN = re.compile("[\u4e00-\u9fff]")


def says_nothing(kind: str, text: str) -> bool:
    """Whether an event of `kind` with `text` states nothing (module docstring)."""
    if kind not in _JUDGED or not text.strip():
        return False
    said = _LABEL.sub("", text, count=1)
    return not tells(said) or asks_only(said)


def asks_only(text: str) -> bool:
    """Whether `text` asks a question and says nothing else of length: each of its other sentences is shorter
    than :data:`SHORT_WORDS` words and :data:`SHORT_HAN` Han characters ("That's so cute! What sort of
    activities do you do?"; not "I went to Paris with my sister last week. Have you been?")."""
    parts = sentences(text)
    if not any(is_question(s) for s in parts):
        return False
    return all(
        is_question(s) or is_request(s) or (len(_WORD.findall(s)) < SHORT_WORDS and len(_HAN.findall(s)) < SHORT_HAN)
        for s in parts
    )
