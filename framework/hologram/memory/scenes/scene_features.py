"""What a scene is made of: the features of one turn, declared scene keys, and how alike two feature sets are.

A *scene* is a recurring situation (docs/scenes.md): the same channel, the same partner, the same tools, the
same topic, the same time of day. Recall prefers memory from the scene a turn is in; this module only says what
a turn's situation is and how close two situations are. The store (:mod:`hologram.memory.scenes.store`) decides
which scenes exist.

**Features and weights** (issue 15 item 4): channel 1.0, partner 1.0, tools 0.8, topic 0.4 (up to three
keywords), time of day 0.2 (``night`` before 06:00, ``morning`` before 12:00, ``afternoon`` before 18:00,
``evening`` after; in the kernel's *local* time, ``time.localtime`` — a person's day, not UTC's).

**Weighted Jaccard.** Each of the five features is compared on its own — a scalar (channel, partner, time of
day) matches or not, a set (tools, topic keywords) by its Jaccard ``|A & B| / |A | B|`` — and the features are
averaged by their weights, over the features at least one side has::

    similarity(A, B) = sum(w(f) * J_f(A, B) for f present) / sum(w(f) for f present)   (0.0 when none is)

So a feature weighs what the design says whatever its size: topic is 0.4 of the comparison with three keywords
or six, and a chat on the same channel at the same time of day stays one situation when its topic moves on
(channel + time 1.2 of 1.6 = 0.75 with disjoint topics), while another partner on the same channel is another
one (1.2 of 2.6 = 0.46 < the 0.5 join threshold). A missing scalar (no partner) on both sides is no feature
at all: it neither matches nor counts against. (Counting every tool and keyword as an element of its own, as a
first version did, let topic outweigh channel and partner together: in one CLI chat every second turn founded
a new scene — 9 scenes in 19 turns, seen using it.)

**Topic keywords** come from the kernel's tokenizer (:func:`hologram.memory.text.tokenizer.tokenize`: jieba for
Chinese, the Snowball stemmer for English) ranked the way memory weights terms: term frequency x BM25 IDF
(:meth:`hologram.memory.text.tfidf.TfidfIndex.idf`), the IDF from what the scene store has seen (`idf`; without
it every term weighs the same). Single characters and numbers are no topic, and a keyword inside a chosen one
(北京 in 北京大学, jieba's search mode emits both) is skipped so three keywords say three things.

**Declared scenes.** A plugin that knows where a turn happens (a QQ group, a mail thread) declares it with a
key; the grammar (also docs/scenes.md and docs/protocol.md)::

    key  = "chan:" name [ "/peer:" peer ]
    name = 1-64 of  A-Z a-z 0-9 _ . -
    peer = 1-128 characters, none of them whitespace or "/"

``chan:qq/peer:group_1``: channel ``qq``, partner ``group_1``. A declared scene's features come from its key
only (:func:`declared_features`).
"""

from __future__ import annotations

import math
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from hologram.memory.text.bounds import indexed
from hologram.memory.text.tokenizer import tokenize

__all__ = [
    "MAX_TOPIC",
    "SCENE_KEY_GRAMMAR",
    "WEIGHTS",
    "SceneFeatures",
    "declared_features",
    "elements",
    "features_of",
    "fingerprint",
    "merge",
    "scene_key_problem",
    "similarity",
    "similarity_of",
    "time_of_day",
]

WEIGHTS = {"channel": 1.0, "partner": 1.0, "tools": 0.8, "topic": 0.4, "time_of_day": 0.2}
MAX_TOPIC = 3  # keywords per turn
# What a scene keeps once observations are merged (newest first). Topic: two turns' worth — a scene's topic
# follows its conversation, and a long union would dilute the topic's Jaccard for every new turn.
MAX_TOPIC_MERGED = 2 * MAX_TOPIC
MAX_TOOLS_MERGED = 12
SCENE_KEY_GRAMMAR = (
    'chan:<name>[/peer:<id>], <name> 1-64 of [A-Za-z0-9_.-], <id> 1-128 characters, no whitespace or "/"'
)
_KEY = re.compile(r"chan:([A-Za-z0-9_.-]{1,64})(?:/peer:([^\s/]{1,128}))?")
_NUMBER = re.compile(r"\d+([.,]\d+)*")


@dataclass(frozen=True, slots=True)
class SceneFeatures:
    """The situation of one turn (or the merged situation of a scene). Every field may be empty."""

    channel: str | None
    partner: str | None
    tools: frozenset[str]
    topic: tuple[str, ...]
    time_of_day: str | None

    def to_json(self) -> dict[str, object]:
        return {
            "channel": self.channel,
            "partner": self.partner,
            "tools": sorted(self.tools),
            "topic": list(self.topic),
            "time_of_day": self.time_of_day,
        }

    @classmethod
    def from_json(cls, data: dict[str, object]) -> SceneFeatures:
        def text(value: object) -> str | None:
            return value if isinstance(value, str) and value else None

        def strings(value: object) -> list[str]:
            return [str(v) for v in value] if isinstance(value, list) else []

        return cls(
            channel=text(data.get("channel")),
            partner=text(data.get("partner")),
            tools=frozenset(strings(data.get("tools"))),
            topic=tuple(strings(data.get("topic"))),
            time_of_day=text(data.get("time_of_day")),
        )


def time_of_day(ts: float) -> str:
    """``night`` (< 06:00), ``morning`` (< 12:00), ``afternoon`` (< 18:00) or ``evening``, in local time."""
    hour = time.localtime(ts).tm_hour
    return "night" if hour < 6 else "morning" if hour < 12 else "afternoon" if hour < 18 else "evening"


def topic_keywords(text: str, *, idf: Callable[[str], float] | None = None, limit: int = MAX_TOPIC) -> tuple[str, ...]:
    """Up to `limit` keywords of `text`: tf x idf, ties to the longer then the smaller term (deterministic)."""
    counts = Counter(t for t in tokenize(indexed(text)) if len(t) > 1 and not _NUMBER.fullmatch(t))
    weight = idf or (lambda term: 1.0)
    ranked = sorted(counts, key=lambda t: (-counts[t] * weight(t), -len(t), t))
    chosen: list[str] = []
    for term in ranked:
        if any(term in kept or kept in term for kept in chosen):
            continue
        chosen.append(term)
        if len(chosen) == limit:
            break
    return tuple(chosen)


def features_of(
    *,
    channel: str | None,
    partner: str | None,
    tools: Iterable[str],
    text: str,
    ts: float,
    idf: Callable[[str], float] | None = None,
) -> SceneFeatures:
    """A turn's features: its channel and partner, the tools (the session's previous turn's when asking which
    scene is active, this turn's when observing it), the input's topic keywords and the local time of day."""
    return SceneFeatures(
        channel=channel or None,
        partner=partner or None,
        tools=frozenset(t for t in tools if t),
        topic=topic_keywords(text, idf=idf),
        time_of_day=time_of_day(ts),
    )


def scene_key_problem(key: str) -> str | None:
    """What is wrong with a declared scene key (the grammar above), or None."""
    if _KEY.fullmatch(key):
        return None
    return f"{key!r} is not a scene key: write {SCENE_KEY_GRAMMAR}, e.g. chan:qq/peer:group_1"


def declared_features(key: str) -> SceneFeatures:
    """The features of a declared scene, from its key only: channel and partner; no tools, topic or time.
    Raises `ValueError` (naming the grammar) for a malformed key."""
    match = _KEY.fullmatch(key)
    if match is None:
        raise ValueError(scene_key_problem(key))
    return SceneFeatures(channel=match.group(1), partner=match.group(2), tools=frozenset(), topic=(), time_of_day=None)


Elements = dict[str, frozenset[str]]
"""feature name → its values (a scalar: one value); features a set does not have are absent."""


def elements(f: SceneFeatures) -> tuple[Elements, float]:
    """The features of a set as `similarity` compares them, and their total weight (a store that compares one
    turn with many scenes keeps its scenes' elements)."""
    out: Elements = {}
    if f.channel:
        out["channel"] = frozenset([f.channel])
    if f.partner:
        out["partner"] = frozenset([f.partner])
    if f.tools:
        out["tools"] = frozenset(f.tools)
    if f.topic:
        out["topic"] = frozenset(f.topic)
    if f.time_of_day:
        out["time_of_day"] = frozenset([f.time_of_day])
    return out, sum(WEIGHTS[name] for name in out)


def similarity_of(a: tuple[Elements, float], b: tuple[Elements, float]) -> float:
    """`similarity` of two element sets: each present feature's Jaccard, averaged by the features' weights."""
    (ea, _), (eb, _) = a, b
    matched = present = 0.0
    for name, weight in WEIGHTS.items():  # a fixed order: a set's order varies with the hash seed, and so would
        if name not in ea and name not in eb:  # the float sum (1.0000000000000002 for identical sets)
            continue
        present += weight
        x, y = ea.get(name), eb.get(name)
        if x and y and (common := len(x & y)):
            matched += weight * common / (len(x) + len(y) - common)
    return min(1.0, matched / present) if present > 0 else 0.0


def similarity(a: SceneFeatures, b: SceneFeatures) -> float:
    """Weighted Jaccard of the two feature sets (module docstring), in [0, 1]."""
    return similarity_of(elements(a), elements(b))


def merge(scene: SceneFeatures, seen: SceneFeatures) -> SceneFeatures:
    """A scene's features after it joined an observation: every element of either, at its (fixed) weight —
    merging by max. A scalar the scene has stays (the scene's channel does not flip with one odd turn); sets
    are united, newest first, at most `MAX_TOPIC_MERGED` keywords and `MAX_TOOLS_MERGED` tools so an old scene
    is not diluted without bound."""
    topic = list(dict.fromkeys((*seen.topic, *scene.topic)))[:MAX_TOPIC_MERGED]
    tools = sorted(seen.tools) + sorted(scene.tools - seen.tools)
    return SceneFeatures(
        channel=scene.channel or seen.channel,
        partner=scene.partner or seen.partner,
        tools=frozenset(tools[:MAX_TOOLS_MERGED]),
        topic=tuple(topic),
        time_of_day=scene.time_of_day or seen.time_of_day,
    )


def fingerprint(f: SceneFeatures) -> str:
    """The canonical form of a turn's *situation* — channel, partner, tools, time of day — the bucket that
    evidence for a new scene is kept under. Topic keywords are left out: no two inputs share the same three
    words, and a scene whose birth needed that would never be born; topic still counts in `similarity`."""
    return "|".join(
        (
            f"c={f.channel or ''}",
            f"p={f.partner or ''}",
            "t=" + ",".join(sorted(f.tools)),
            f"d={f.time_of_day or ''}",
        )
    )


def bm25_idf(docs: int, df: int) -> float:
    """The non-negative BM25 IDF memory uses (hologram.memory.text.tfidf.TfidfIndex.idf)."""
    return math.log(1.0 + (docs - df + 0.5) / (df + 0.5))
