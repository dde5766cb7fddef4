"""Why a search hit matched: the query's rare-looking tokens found verbatim, and the passage around them
(issue 39 item 6) — for the inspection search (`hologram memory search`, the web page's Memory tab) and
``memory_recall``'s passages.

**Rare-looking tokens** (:func:`salient`): what a person searches for when they look for one thing —
codes and numbers with letters (``AZURE-17``, ``3b5dc6b``, ``沪B62817``), joined words (``order_id``,
``e-mail``), acronyms (``NASA``), capitalised names past a sentence's first word (``Bartholomew``). The
ranking underneath (BM25 + vectors) splits ``AZURE-17`` into ``azure`` and ``17`` and prefers short events,
so a reply "noted #17" beat the long message the code was said in. Here a hit that contains a salient token
*verbatim* (case-folded, not inside a longer token: ``AZURE-17`` ≠ ``AZURE-175``) ranks before one that
does not, more of them first; the order underneath is kept otherwise. Decided by the token's shape, not by
corpus statistics, so the reason can be shown: the hit says which tokens it matched.

**The passage** (:func:`passage`): the part of the text around the first salient match (else around the
query's words), cut at word boundaries with "…" where it was cut, and the spans of every match in it — not
the event's first characters, which for a long message do not contain what was found.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["PASSAGE_CHARS", "Passage", "contains", "matched", "passage", "query_words", "salient"]

#: How much text a passage shows (characters, about three lines of a terminal).
PASSAGE_CHARS = 240
_PIECE = re.compile(r"[^\s,;:!?()\[\]{}<>\"'“”‘’「」『』（）【】，。；：！？、]+")
_EDGE = "._-#/+*&@%$~`^=|\\"
_HAS_DIGIT = re.compile(r"\d")
_HAS_LETTER = re.compile(r"[^\W\d_]")
_JOINED = re.compile(r"\w[-_./]\w")
_ACRONYM = re.compile(r"^[A-Z]{2,}$")
_NAME = re.compile(r"^[A-Z][a-z]{2,}$")
_WORD = re.compile(r"[\w'’-]+", re.UNICODE)
_SENTENCE_END = (".", "!", "?", "。", "！", "？")
_HAN_SPLIT = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+|[^\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
#: Capitalised words that start a question or a request, not a name ("Where does Caroline live?").
_STARTERS = frozenset(
    [
        "a", "an", "and", "are", "can", "could", "did", "do", "does", "find", "give", "how", "i", "is", "list", "my",
        "please", "show", "tell", "the", "what", "when", "where", "which", "who", "whom", "whose", "why", "will",
        "would",
    ]
)  # fmt: skip


def salient(query: str) -> list[str]:
    """The query's rare-looking tokens (module docstring), in query order, without repeats (case-folded)."""
    out: dict[str, str] = {}
    pieces = list(_PIECE.finditer(query))
    for i, m in enumerate(pieces):
        starts = i == 0 or pieces[i - 1].group().endswith(_SENTENCE_END)
        for part in _HAN_SPLIT.findall(m.group()):  # a code written inside Chinese: 车牌号是沪B62817
            token = part.strip(_EDGE)
            if len(token) < 2 or _HAN.search(token):
                continue
            code = bool(_HAS_DIGIT.search(token)) and bool(_HAS_LETTER.search(token))
            name = bool(_NAME.match(token)) and not (starts and token.casefold() in _STARTERS)
            if code or _JOINED.search(token) or _ACRONYM.match(token) or name:
                out.setdefault(token.casefold(), token)
    return list(out.values())


def query_words(query: str) -> list[str]:
    """The query's words of two characters or more, case-folded (what a passage marks besides salient ones)."""
    return list(dict.fromkeys(w.casefold() for w in _WORD.findall(query) if len(w) > 1))


def _spans(text: str, needle: str, *, whole: bool) -> list[tuple[int, int]]:
    """Where `needle` occurs in `text`, case-folded; `whole`: not inside a longer run of letters/digits.
    Case folding can change lengths (ß → ss); then offsets are found on the lower-cased text instead."""
    folded, key = text.casefold(), needle.casefold()
    if len(folded) != len(text):
        folded, key = text.lower(), needle.lower()
    out = []
    start = folded.find(key)
    while start >= 0 and key:
        end = start + len(key)
        before = folded[start - 1] if start > 0 else " "
        after = folded[end] if end < len(folded) else " "
        if not whole or not (
            (_word_char(before) and _word_char(key[0])) or (_word_char(after) and _word_char(key[-1]))
        ):
            out.append((start, end))
        start = folded.find(key, start + 1)
    return out


def _word_char(c: str) -> bool:
    """A letter or digit of the Latin script: what continues a code (``AZURE-17`` is not in ``AZURE-175``,
    but ``B62817`` is in ``沪B62817``: Chinese is written without spaces)."""
    return c.isascii() and c.isalnum()


def contains(text: str, token: str) -> bool:
    """Whether `text` holds `token` verbatim (case-folded, not inside a longer token)."""
    return bool(_spans(text, token, whole=True))


def matched(text: str, tokens: Sequence[str]) -> list[str]:
    """Which of `tokens` (salient ones) `text` holds verbatim."""
    return [t for t in tokens if contains(text, t)]


@dataclass(frozen=True, slots=True)
class Passage:
    text: str
    marks: list[tuple[int, int]]
    """Spans of `text` that matched (start, end), sorted, not overlapping."""


def passage(text: str, tokens: Sequence[str], words: Sequence[str] = (), *, width: int = PASSAGE_CHARS) -> Passage:
    """The part of `text` around the first match of a salient token (else of a query word), about `width`
    characters cut at whitespace, "…" where it was cut, with the matches marked (module docstring)."""
    text = " ".join(text.split())
    strong = sorted(s for t in tokens for s in _spans(text, t, whole=True))
    inside = " ".join(tokens).casefold()  # a word of a salient token is marked as part of it, not on its own
    weak = sorted(s for w in words if w.casefold() not in inside for s in _spans(text, w, whole=False))
    anchor = strong[0] if strong else weak[0] if weak else (0, 0)
    if len(text) <= width:
        start, end = 0, len(text)
    else:
        start = max(0, min(anchor[0] - width // 3, len(text) - width))
        end = min(len(text), start + width)
        if start > 0:  # cut at whitespace, never inside the match
            space = text.find(" ", start, anchor[0])
            start = space + 1 if space >= 0 else start
        if end < len(text):
            space = text.rfind(" ", max(anchor[1], start), end)
            end = space if space > 0 else end
    head = "…" if start > 0 else ""
    tail = "…" if end < len(text) else ""
    shift = len(head) - start
    marks: list[tuple[int, int]] = []
    for s, e in sorted(strong + weak):
        if s >= start and e <= end:
            s, e = s + shift, e + shift
            if marks and s <= marks[-1][1]:
                marks[-1] = (marks[-1][0], max(marks[-1][1], e))
            else:
                marks.append((s, e))
    return Passage(head + text[start:end] + tail, marks)
