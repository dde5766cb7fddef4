"""The forms of one English word that the stemmer cannot meet: irregular verbs and plurals.

Why (issue 39 item 1): the Snowball stemmer joins "painted", "painting" and "paints" into "paint", but not
"went" and "gone" into "go", nor "broke" and "broken" into "break", nor "bought" into "buy": irregular forms
are not suffixes. Questions ask in the perfect or the present ("What has Evan had *broken*?", "What items has
Melanie *bought*?", "Where has Maria *made* friends?") and the turns that answer them tell in the past ("my new
Prius … *broke* down", "I just *got* some new shoes"), so the one word both use scored nothing. A read of
LoCoMo's missed evidence turns (stream protocol, 4k): of the multi-hop and open-domain evidence missed, 270 of
298 share no index term with their question at all.

A table, not a model: the common irregular verbs of English (principal parts) and the irregular plurals, each
form spelled as :func:`hologram.memory.text.tokenizer.tokenize` spells it (the stemmer applied: "taken" stays
"taken", "making" is "make"). Forms that are mostly another word are left out ("left" the side, "rose" the
flower, "saw" the tool, "lay"/"lie", "wound", "bore", "ground", "shot", "bit"), and so are the verbs that frame
a question (say, tell, speak: :data:`hologram.memory.rank.expand.FRAMING` removes them from the query first).
The light verbs are left out too — "be", "have", "do", "get", "make", "become": their forms are in nearly every
turn and match nothing in particular ("Does Calvin wish to *become* more popular?" then matched every "became";
"What should guests type to *get* online?" every "got", and the English paraphrase set lost its wifi password
at 2k). So is "person/people":
the stemmer spells "personality" and "personal" "person" ("What personality traits…" matched every "people").

:func:`other_forms` is used at query time (``rank/expand.py``): the index's terms are unchanged, so nothing
stored needs rebuilding.
"""

from __future__ import annotations

from functools import cache

from hologram.memory.text.tokenizer import tokenize

__all__ = ["FORMS", "other_forms"]

#: One word per line: its forms (base, past, participle; singular, plural). Spelled as written, stemmed once.
FORMS: tuple[str, ...] = (
    "arise arose arisen",
    "awake awoke awoken",
    "begin began begun",
    "bend bent",
    "bleed bled",
    "blow blew blown",
    "break broke broken",
    "breed bred",
    "bring brought",
    "build built",
    "burn burnt",
    "buy bought",
    "catch caught",
    "choose chose chosen",
    "cling clung",
    "come came",
    "creep crept",
    "deal dealt",
    "dig dug",
    "draw drew drawn",
    "dream dreamt",
    "drink drank drunk",
    "drive drove driven",
    "eat ate eaten",
    "fall fell fallen",
    "feed fed",
    "feel felt",
    "fight fought",
    "find found",
    "flee fled",
    "fly flew flown",
    "forbid forbade forbidden",
    "forget forgot forgotten",
    "forgive forgave forgiven",
    "freeze froze frozen",
    "give gave given",
    "go went gone",
    "grind ground",
    "grow grew grown",
    "hang hung",
    "hear heard",
    "hide hid hidden",
    "hold held",
    "keep kept",
    "kneel knelt",
    "know knew known",
    "lead led",
    "lean leant",
    "learn learnt",
    "lend lent",
    "lose lost",
    "mean meant",
    "meet met",
    "mistake mistook mistaken",
    "overcome overcame",
    "pay paid",
    "ride rode ridden",
    "ring rang rung",
    "run ran",
    "see saw seen",
    "seek sought",
    "sell sold",
    "send sent",
    "sew sewn",
    "shake shook shaken",
    "shine shone",
    "shrink shrank shrunk",
    "sing sang sung",
    "sink sank sunk",
    "sit sat",
    "sleep slept",
    "slide slid",
    "spend spent",
    "spin spun",
    "spring sprang sprung",
    "stand stood",
    "steal stole stolen",
    "stick stuck",
    "sting stung",
    "stink stank stunk",
    "strike struck",
    "strive strove striven",
    "swear swore sworn",
    "sweep swept",
    "swim swam swum",
    "swing swung",
    "take took taken",
    "teach taught",
    "tear tore torn",
    "think thought",
    "throw threw thrown",
    "understand understood",
    "undertake undertook undertaken",
    "wake woke woken",
    "wear wore worn",
    "weave wove woven",
    "weep wept",
    "win won",
    "withdraw withdrew withdrawn",
    "write wrote written",
    # irregular plurals
    "child children",
    "man men",
    "woman women",
    "foot feet",
    "tooth teeth",
    "mouse mice",
    "goose geese",
)


@cache
def _table() -> dict[str, tuple[str, ...]]:
    """Index term → the index terms of the word's other forms (built on first use: the stemmer's spelling)."""
    out: dict[str, set[str]] = {}
    for line in FORMS:
        terms = {t for word in line.split() for t in tokenize(word)}
        for term in terms:
            out.setdefault(term, set()).update(terms - {term})
    return {term: tuple(sorted(others)) for term, others in out.items()}


def other_forms(term: str) -> tuple[str, ...]:
    """The index terms of `term`'s other forms ("went" → "go", "gone"); empty for a regular word."""
    return _table().get(term, ())
