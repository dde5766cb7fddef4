"""Recall from L3: which triples and blocks an input brings back, how they rank, and the note that carries them.

Two routes (DESIGN.md "Memory": recall runs on every request against L2 *and L3* with the scorer pruning
uses, and brings triples back with their source blocks):

1. **The session's own scorer.** The session index keeps every event of the session, including those L3
   holds, with their passage vectors; the request scores them all anyway. An L3-held event that clearly
   matches (the L2 auto-recall threshold) competes in the request's one ranking like an L2 event
   (``SessionMemory._prepare``) and, when it wins, comes back as its triples or, when it yielded none — most
   events: 11 triples per 100 LoCoMo turns — as a "block" hit with its own text. Without block hits, cooling
   would drop from the request everything the extractor could not turn into a triple.
2. **The graph, across sessions.** Entities the input names (an entity key equal to one of the input's word
   n-grams, or for Chinese to a substring of a Han run — every jieba word is one) → their triples, 1 or 2
   hops out, each with its source block.

Each hit scores route score × confidence (triples) × :data:`~hologram.memory.scenes.scene_hint.SCENE_PREFERENCE`
when the active scene holds its event; the best are rendered, one line each with where it came from (time,
session when it is another one, the source text cut short), until the budget (tokens counted as everywhere else:
:func:`~hologram.memory.text.tokens.estimate_tokens`) is spent.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Literal

import numpy as np

from hologram.memory.graph.store import Triple, entity_key
from hologram.memory.scenes.scene_hint import SCENE_PREFERENCE, SceneHint
from hologram.memory.text.bounds import indexed
from hologram.memory.text.tokenizer import tokenize
from hologram.memory.text.tokens import estimate_tokens

__all__ = [
    "BLOCK_CHARS",
    "MEMORY_RECALL_DESCRIPTION",
    "MEMORY_RECALL_NAME",
    "MEMORY_RECALL_PARAMETERS",
    "SOURCE_CHARS",
    "L3Hit",
    "L3Recall",
    "SourcedTriple",
    "mentions",
    "rank",
    "render",
    "triple_text",
]

MEMORY_RECALL_NAME = "memory_recall"
#: Terse on purpose: every byte of a tool schema is sent with every request (tests/guard counts them).
MEMORY_RECALL_DESCRIPTION = "Search long-term memory: facts from past conversations, with sources."
MEMORY_RECALL_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {"query": {"type": "string"}, "hops": {"type": "integer", "enum": [1, 2]}},
    "required": ["query"],
}
#: What one memory_recall answer may cost (tokens).
MEMORY_RECALL_BUDGET = 1200

#: How much of a source block a triple's line quotes, and how much of a block hit's own text is shown.
SOURCE_CHARS = 300
BLOCK_CHARS = 600
#: Route 2 scores: a triple touching an entity the input names; the same at 2 hops; plus this much per term
#: of the input (beyond the name) the triple shares; times the triple's confidence (the rules give 0.5). So a
#: rule-read fact linked only by the name scores 0.5 — it may fill the note's own share, not more — and one
#: that also shares a term scores 1.0, the threshold (``AUTO_RECALL_MIN_SCORE``) at which route 1's events and
#: L2's compete for the whole history budget.
HOP_SCORE = {1: 1.0, 2: 0.5}
WORD_BONUS = 1.0
#: An entity with more triples than this is a hub (a speaker, "I"): its name alone does not say which of its
#: facts the input is about, so only those sharing a word with the input come back.
HUB_DEGREE = 10
#: At most this many named entities are followed per input (longest names first: the most specific).
MAX_ENTITIES = 8
_MAX_NGRAM = 4
_WORD = re.compile(r"[\w'’-]+", re.UNICODE)
_POSSESSIVE = re.compile(r"['’]s$")
_HAN_RUN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "do",
        "does",
        "did",
        "for",
        "from",
        "had",
        "has",
        "have",
        "he",
        "her",
        "him",
        "his",
        "how",
        "i",
        "if",
        "in",
        "is",
        "it",
        "its",
        "me",
        "my",
        "no",
        "not",
        "of",
        "on",
        "or",
        "our",
        "she",
        "so",
        "that",
        "the",
        "their",
        "them",
        "they",
        "this",
        "to",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "you",
        "your",
    ]
)


@dataclass(frozen=True, slots=True)
class SourcedTriple:
    """A triple with where it came from, for recall, the CLI and the web page."""

    triple: Triple
    source_text: str
    """The source block's text (cut to :data:`SOURCE_CHARS`)."""
    session: str | None
    ts_ms: int


@dataclass(frozen=True, slots=True)
class L3Hit:
    """One recalled item."""

    kind: Literal["triple", "block"]
    score: float
    event: str
    block: str
    session: str | None
    ts_ms: int
    text: str
    """block: its text; triple: "subject | predicate | value"."""
    source_text: str
    """triple: the source block's text; block: ""."""
    triple: Triple | None


@dataclass(frozen=True, slots=True)
class L3Recall:
    hits: list[L3Hit]
    """The hits the note carries, best first."""
    note: str
    """The rendered system-note text ("" when no hits)."""
    tokens: int
    events: list[str]
    """Distinct source event ids in the note, in time order."""


EMPTY = L3Recall([], "", 0, [])


def triple_text(t: Triple) -> str:
    return f"{t.subject} | {t.predicate} | {t.value}"


def words(text: str) -> list[str]:
    """The input's content words, case-folded (block search: plain substrings of the stored text)."""
    return [w for w in (m.group().casefold() for m in _WORD.finditer(indexed(text))) if w not in _STOP and len(w) > 1]


def terms(text: str) -> set[str]:
    """Index terms (stemmed English, jieba words or bigrams for Chinese) without stop words and single
    characters: what a triple and the input have in common (``WORD_BONUS``)."""
    return {t for t in tokenize(indexed(text)) if len(t) > 1 and t not in _STOP}


def mentions(text: str, keys: Mapping[str, str] | frozenset[str] | set[str]) -> list[str]:
    """Entity keys the input names (module docstring, route 2), longest first, at most :data:`MAX_ENTITIES`.
    One dict lookup per n-gram: the key set stays in memory, the graph is not asked."""
    if not keys:
        return []
    found: dict[str, None] = {}
    text = indexed(text)
    tokens = [_POSSESSIVE.sub("", m.group()) for m in _WORD.finditer(text)]
    for n in range(_MAX_NGRAM, 0, -1):
        for i in range(len(tokens) - n + 1):
            key = entity_key(" ".join(tokens[i : i + n]))
            if key in keys and (n > 1 or (key not in _STOP and len(key) > 1)):
                found.setdefault(key)
    for run in _HAN_RUN.findall(text):
        for n in range(min(len(run), 8), 1, -1):
            for i in range(len(run) - n + 1):
                key = entity_key(run[i : i + n])
                if key in keys:
                    found.setdefault(key)
    return sorted(found, key=lambda k: (-len(k), k))[:MAX_ENTITIES]


def cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def rank(hits: Iterable[L3Hit], scene: SceneHint | None = None) -> list[L3Hit]:
    """Best first after the scene preference; one hit per triple id / per block event (the best score). An
    event with triples among the hits is carried by them (each quotes the source block) at the block's
    score when that is higher, and its block hit is dropped: the same evidence twice would cost twice."""
    items = list(hits)
    block_score = {h.event: h.score for h in items if h.kind == "block"}
    if any(h.kind == "triple" for h in items) and block_score:
        items = [
            _rescored(h, max(h.score, block_score.get(h.event, h.score))) if h.kind == "triple" else h for h in items
        ]
        carried = {h.event for h in items if h.kind == "triple"}
        items = [h for h in items if h.kind == "triple" or h.event not in carried]
    if scene is not None and items:
        held = np.asarray(scene.holds([h.event for h in items]), dtype=bool)
        items = [
            _rescored(h, h.score * SCENE_PREFERENCE) if bool(flag) else h for h, flag in zip(items, held, strict=True)
        ]
    best: dict[tuple[str, str], L3Hit] = {}
    for h in items:
        key = (h.kind, h.triple.id if h.triple is not None else h.event)
        if key not in best or h.score > best[key].score:
            best[key] = h
    return sorted(best.values(), key=lambda h: (-h.score, -h.ts_ms, h.text))


def _rescored(h: L3Hit, score: float) -> L3Hit:
    return L3Hit(h.kind, score, h.event, h.block, h.session, h.ts_ms, h.text, h.source_text, h.triple)


#: A line costs at least this (time, session, quotes); lines that do not fit are skipped this many times
#: before the note is called full.
_MIN_LINE = 16
_MAX_MISSES = 8
HEADER = "[memory] From long-term memory (facts and passages distilled from earlier conversations), with sources:"


def render(hits: Sequence[L3Hit], budget_tokens: int, *, session: str | None = None, focus: str = "") -> L3Recall:
    """The note: a header and one line per hit, best first, while the total fits `budget_tokens`. A block of
    an event whose triples are in the note is left out (the triple quotes it). A hit from `session` (the
    requesting one) names no session: ids cost tokens on every line, and "this conversation" is the default.
    `focus` (``memory_recall``'s query): a long text is quoted around what matched it, not from its start
    (``search_match.passage``); without it, from the start as before."""
    if not hits or budget_tokens <= 0:
        return EMPTY
    used = estimate_tokens(HEADER) + 4
    lines: list[str] = []
    kept: list[L3Hit] = []
    with_triples: set[str] = set()
    misses = 0
    for h in hits:
        if h.kind == "block" and h.event in with_triples:
            continue
        if budget_tokens - used < _MIN_LINE or misses >= _MAX_MISSES:
            break  # full: formatting the rest of a long ranked list would only cost time
        line = _line(h, session, focus)
        cost = estimate_tokens(line) + 1
        if used + cost > budget_tokens:
            misses += 1
            continue
        used += cost
        lines.append(line)
        kept.append(h)
        if h.kind == "triple":
            with_triples.add(h.event)
    if not kept:
        return EMPTY
    order = sorted({h.event: h.ts_ms for h in kept}.items(), key=lambda kv: (kv[1], kv[0]))
    return L3Recall(kept, "\n".join([HEADER, *lines]), used, [e for e, _ in order])


def _line(h: L3Hit, session: str | None, focus: str = "") -> str:
    where = _when(h.ts_ms) + (f", session {h.session}" if h.session and h.session != session else "")
    if h.kind == "triple":
        return f"- {h.text} ({where}; said: “{_quote(h.source_text, SOURCE_CHARS, focus)}”)"
    return f"- ({where}) “{_quote(h.text, BLOCK_CHARS, focus)}”"


def _quote(text: str, limit: int, focus: str) -> str:
    if not focus or len(text) <= limit:
        return cut(text, limit)
    from hologram.memory.text.search_match import passage, query_words, salient

    return passage(text, salient(focus), query_words(focus), width=limit - 2).text


def _when(ts_ms: int) -> str:
    if ts_ms <= 0:
        return "time unknown"
    return datetime.fromtimestamp(ts_ms / 1000, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
