"""Who asked: another speaker's question is a pointer to the answer, not the answer (issue 39 item 1, fifth round).

Where a session's inputs name their speaker ("Audrey: …", "小雨：…" — a group's or an imported conversation's
messages), a question about one of them ("What kind of indoor activities has Andrew pursued with his
girlfriend?") shares its words with the questions the *other* speaker asked that person ("Audrey: What sort of
activities do you do to stay mentally stimulated?") more than with the answers. Those questions outranked
the evidence in LoCoMo's conversation 44 (107-256th where ~117 events fit). So when the question names exactly
one of the session's speakers, an event that asks something (a question sentence) and is labelled with another
speaker loses :data:`OTHER_ASKS_PENALTY` as a candidate of its own, after smoothing: like
memory/rank/says_nothing.py, it still lends its neighbours — usually the named person's answer — their share.
The person's own questions, unlabelled events and sessions without labels rank as before.

Stored without a format change: the speaker's slot (1-15, in the order the session first used each label; 0:
none, or more labels than slots) and the "asks" bit live in the index's per-event ``kind`` byte beside the kind
code (bits 0-1) and the says-nothing bit (bit 7); the labels in slot order are kept in each sealed segment's
meta (``speakers``), so a restart or a rebuild from the log gives every label its slot again. A segment written
before has neither: its events rank as before.

Measured (one streamed state per conversation, ``SessionMemory.preview``, 4k, the says-nothing rules of this
round in place): penalty 0.5 / 1 → all 0.929 → 0.933 / 0.935, held-out 0.922 → 0.927 / 0.928, dev split
26 / 30 / 41 0.966 / 0.970 / 0.925 → 0.972 / 0.970 / 0.935 at 1; the same for every event of the other speaker
(not only questions), 0.25: all 0.936 but conversation 30 0.970 → 0.957 — the other speaker's statements are
often evidence too. The bench's own run: all 0.931 → 0.936, held-out 0.925 → 0.931 (docs/memory.md, fifth
round); ``speaker_named`` ~4 µs a question.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from hologram.memory.text.utterance import is_question, sentences

__all__ = [
    "ASKS_BIT",
    "KIND_MASK",
    "MAX_SPEAKERS",
    "OTHER_ASKS_PENALTY",
    "SPEAKER_SHIFT",
    "asks",
    "named_speaker",
    "speaker_label",
]

#: The bits of the ``kind`` byte that hold the event's kind code (1-3).
KIND_MASK = 0x03
#: The bit of the ``kind`` byte that marks an event holding a question sentence.
ASKS_BIT = 0x40
#: Where the speaker's slot sits in the ``kind`` byte (4 bits: slots 1-15).
SPEAKER_SHIFT = 2
#: How many labels a session gives a slot (later ones get none: rank as unlabelled).
MAX_SPEAKERS = 15
#: Subtracted (z-score units) from another speaker's question, after smoothing.
OTHER_ASKS_PENALTY = 1.0

_LABEL = re.compile(r"^\s*([A-Za-z\u4e00-\u9fff][^\s:：/]{0,31})[:：](?!/)\s*\S")
_HAN = re.compile("[\u4e00-\u9fff]")


def speaker_label(text: str) -> str | None:
    """The speaker a message's text names in front ("Audrey: …" → "audrey", "小雨：…" → "小雨"), or None."""
    m = _LABEL.match(text)
    return m.group(1).casefold() if m else None


def asks(text: str) -> bool:
    """Whether `text` (after its label) holds a question."""
    return any(is_question(s) for s in sentences(text[:2000]))


def named_speaker(text: str, labels: Sequence[str]) -> int:
    """The slot (1-based) of the one label of `labels` that `text` names, or 0 (none, or more than one)."""
    folded = text.casefold()
    found = [
        slot
        for slot, label in enumerate(labels, start=1)
        if (label in folded if _HAN.search(label) else re.search(rf"\b{re.escape(label)}\b", folded))
    ]
    return found[0] if len(found) == 1 else 0
