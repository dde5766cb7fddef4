"""The query's terms measured against the session's own vocabulary, before BM25 ranks with them (issue 39).

**A name in a large share of the session's passages is a participant, not a topic.** In a conversation between
two people their names are in a third of the passages (the "Caroline:" of every turn she says, the "Hey
Caroline" of the other's) — the question "What is Caroline's relationship status?" names her, and BM25 gave
every short turn of hers a bonus over the turn that answers it, because BM25's saturation and length
normalisation favour a short passage that has a common term over a long one that lacks it. Such a term's IDF
is small but not zero, and in a question of three content words it was a third of what BM25 ranked by. So a
name (:func:`hologram.memory.rank.query.names_in`) is dropped from the lexical query once it is in more than
:data:`COMMON_SHARE` of the session's passages; the dense vector still carries it. Measured on LoCoMo's stream
protocol at 4k (the dev split 26/30/41): 0.919 → 0.925; the same for any threshold from 0.1 to 0.3 — the names
sit at 0.3-0.4 of the passages, the next most common question term at 0.07. Names only: a session about one
subject has its words everywhere ("key", "door" in every long message of
tests/memory/test_recall_in_request.py), and there they are what BM25 must match, all in one passage.

Only in a session of at least :data:`MIN_PASSAGES` passages: in a short one a word said three times is not
common, it is the topic.

**Words that frame a question name no topic either** (:data:`FRAMING`): "What items does John *mention*
having as a child?" ranked first every turn with "I remember you *mentioning*" (a BM25 z-score of 11, where a
dense match is 2-4); "What *kind* of...", "Who did she *talk* to", "What would X *likely*...". The evidence
says what was mentioned, never that it was. They leave the lexical query too, unless nothing else is left of
it. Measured (same split, 4k, with the common terms dropped): 0.925 → 0.937 (open-domain 0.667 → 0.746,
single-hop 0.968 → 0.983); the speech verbs and "kind/type/sort/thing" alone 0.933, "like" adds the rest.
Chinese: 说/说过/提到/提过/讲过/聊过/告诉, 哪些/什么样/种类/类型, 可能/也许/大概.

**The forms of a word the stemmer cannot meet join the query** (:func:`with_forms`,
:mod:`hologram.memory.text.wordforms`): "What has Evan had *broken*?" asks for the turn where the car *broke*
down; irregular verbs and plurals are one word in several spellings, so each other form gets the weight of the
form asked. Measured on LoCoMo's stream protocol at 4k (one streamed state per conversation): all 0.916 → 0.920,
held-out (42/43/44/47/48/49/50) 0.908 → 0.913, the dev split 26/30/41 unchanged (0.942), temporal 0.941 → 0.950;
the paraphrase and cross-session sets unchanged.

**Words for the same people and animals reach each other at half weight** (:func:`with_related`,
:mod:`hologram.memory.text.concepts`): "family" reaches "kids", "son", "husband"; "dogs" reaches "puppy", "pups";
"girlfriend" reaches "GF"; 宠物 reaches 狗狗 and 猫咪. Half (:data:`RELATED_WEIGHT`): a turn that says "the kids"
is likely about the family, not certainly, and the word asked keeps the lead. Measured the same way, after the
forms: all 0.920 → 0.922, held-out 0.913 → 0.914, dev 0.942 → 0.947, multi-hop 0.777 → 0.791, the worst
conversation (44) 0.854 → 0.870 (weight 1: all 0.922, held-out 0.914 as well).

**A name the session gave a noun joins a question that asks by the noun** (:func:`with_named`,
:mod:`hologram.memory.text.namings`, read at write time into the index): after "meet Toby, my puppy", "What has
Andrew done with his dogs?" reaches "puppy" (a related word) and through it "Toby", at the noun's weight.
Measured the same way (re-streamed: the names are read when an event is indexed): all 0.922 → 0.924, held-out
0.914 → 0.917, conversation 44 0.870 → 0.896, the other nine unchanged (LoCoMo names five pets and children
this way, three of them in 44); at half the noun's weight 0.923 / 0.915.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping

from hologram.memory.text.concepts import related_terms
from hologram.memory.text.wordforms import other_forms

__all__ = [
    "COMMON_SHARE",
    "FRAMING",
    "MIN_PASSAGES",
    "RELATED_WEIGHT",
    "topical_terms",
    "with_forms",
    "with_named",
    "with_related",
]

#: A name in more than this share of the session's passages is dropped from the lexical query.
COMMON_SHARE = 0.2
#: A related word's weight, relative to the word asked (module docstring).
RELATED_WEIGHT = 0.5
#: Sessions with fewer passages keep every term (their shares are counts of a few).
MIN_PASSAGES = 50
#: Index terms of words that frame a question (module docstring): each word as the tokenizer spells it with the
#: stemmer (``describ``, ``probabl``) and without (before its load, or for a store tagged without it).
FRAMING = frozenset(
    {
        *("mention", "mentioned", "mentioning", "mentions", "say", "said", "says", "saying"),
        *("talk", "talked", "talking", "talks", "tell", "told", "telling", "speak", "spoke", "spoken"),
        *("discuss", "discussed", "discussing", "ask", "asked", "asking", "share", "shared", "sharing"),
        *("describe", "described", "describ", "kind", "kinds", "type", "types", "sort", "sorts", "thing", "things"),
        *("like", "likely", "probably", "probabl", "common"),
        *(
            "说",
            "说过",
            "提到",
            "提过",
            "提",
            "讲过",
            "聊过",
            "告诉",
            "哪些",
            "什么样",
            "种类",
            "类型",
            "可能",
            "也许",
            "大概",
        ),
    }
)


def topical_terms(
    weights: Mapping[str, float], share: Callable[[str], float], passages: int, names: Collection[str]
) -> dict[str, float]:
    """`weights` without the words that frame the question (:data:`FRAMING`, unless nothing else is left) and
    the `names` whose `share` of the session's `passages` exceeds :data:`COMMON_SHARE` (module docstring),
    unless nothing else is left either.
    `share`: the index's document share of a term; `names`: the index terms of the input's names."""
    out = {term: weight for term, weight in weights.items() if term not in FRAMING} or dict(weights)
    if passages < MIN_PASSAGES:
        return out
    # a query of common names alone is kept as it was (the same fallback as the framing words)
    kept = {term: weight for term, weight in out.items() if term not in names or share(term) <= COMMON_SHARE}
    return kept or out


def _reaching(
    weights: Mapping[str, float], reach: Callable[[str], Collection[str]], factor: float = 1.0
) -> dict[str, float]:
    """`weights` with the terms `reach` gives for each term at `factor` of its weight; a term the query already
    has keeps its own weight."""
    out = dict(weights)
    for term, weight in weights.items():
        for other in reach(term):
            if other not in weights:
                out[other] = max(out.get(other, 0.0), factor * weight)
    return out


def with_forms(weights: Mapping[str, float]) -> dict[str, float]:
    """`weights` with the other forms of each irregular word (module docstring) at that word's weight; a form
    the query already has keeps its own weight. A framing word is gone before this runs (it has no forms here)."""
    return _reaching(weights, other_forms)


def with_related(weights: Mapping[str, float]) -> dict[str, float]:
    """`weights` with the words each term reaches (module docstring) at :data:`RELATED_WEIGHT` of its weight;
    a term the query already has keeps its own weight."""
    return _reaching(weights, related_terms, RELATED_WEIGHT)


def with_named(weights: Mapping[str, float], named: Callable[[str], Collection[str]]) -> dict[str, float]:
    """`weights` with the names the session gave each noun (`named`: the index's, memory/text/namings.py) at
    the noun's weight: "Toby" is the puppy. Runs after :func:`with_related`, so "dogs" reaches "puppy" and
    through it the puppy's name, at the related word's weight."""
    return _reaching(weights, named)
