"""Names a conversation gives its pets and people: "meet Toby, my puppy", "my daughter Sara", 我家狗狗叫豆豆.

Why (issue 39 item 1): once a pet or a child is named, the conversation says the name, not the noun — "Gotta
take Toby out for a small hike", "Buddy and I have a great time doing walks" — and a question asks by the noun:
"What has Andrew done with his dogs?", "How many dogs does Andrew have?" (LoCoMo's conversation 44, the worst
one at 4k). The name is an alias the session itself defines, so it is read from the session at write time
(:class:`hologram.memory.index.session_index.SessionIndex` keeps each noun's names, in its segments' meta) and
joins a question that asks by the noun (``rank/expand.py``), like the words of :mod:`~hologram.memory.text.concepts`.

Rules, not a model: the appositive and naming patterns of English ("my puppy Toby", "meet Toby, my puppy", "a
puppy called/named Pixie"; not a list: "my girlfriend, Toby and I") and Chinese (我家狗狗叫豆豆, 我女儿叫小雨，),
for the nouns of the people and animals one lives with (:data:`NOUNS`), with a name that is a capitalised word
(English) or one to three Han characters closed by punctuation (Chinese). Greetings and interjections are not
names (:data:`NOT_NAMES`: "my dog, Thanks…"), nor is a sentence's first word ("Thankfully, my son's ok").
"""

from __future__ import annotations

import re

from hologram.memory.text.tokenizer import tokenize

__all__ = ["NOT_NAMES", "NOUNS", "namings"]

NOUNS = (
    "puppy",
    "pup",
    "dog",
    "doggy",
    "cat",
    "kitten",
    "kitty",
    "son",
    "daughter",
    "girlfriend",
    "boyfriend",
    "husband",
    "wife",
    "baby",
)
_ZH_NOUNS = ("狗狗", "小狗", "狗", "猫咪", "小猫", "猫", "儿子", "女儿", "女朋友", "男朋友", "老婆", "老公")
_NOT_NAMES = """And The She He It They This That But Just What How Thanks Thank Sorry Please Yes Yeah Well Hey Hi
Hello Wow Oh Okay Great Cool Nice Love Happy So Also Last We Our My His Her Their"""
NOT_NAMES = frozenset(_NOT_NAMES.split())
_NOUN = "(" + "|".join(NOUNS) + ")"
_NAME = r"([A-Z][a-z]{2,})"
_ADJ = r"(?:new |little |sweet |other |oldest |youngest |baby )?"
_EN = (
    # "my pup Toby" (not "my girlfriend, Toby and I": a list)
    re.compile(r"\b[Mm]y " + _ADJ + _NOUN + r" (?:named |called |is named |is called )?" + _NAME + r"\b"),
    # "meet Toby, my puppy" (the name inside a sentence: "Thankfully, my son's ok" names nobody)
    re.compile(r"(?<=[a-z] )" + _NAME + r", (?:my|our) " + _ADJ + _NOUN + r"\b"),
    re.compile(r"\b" + _NOUN + r"s? (?:called|named) " + _NAME + r"\b"),
)
_ZH = re.compile(
    r"(?:我们家|我家|我的|我)的?(" + "|".join(_ZH_NOUNS) + r")(?:的名字)?叫([\u4e00-\u9fff]{1,3})(?=[，。！？,.!?\s]|$)"
)


def namings(text: str) -> list[tuple[str, str]]:
    """(noun's index term, name's index term) for each naming in `text` (module docstring); usually none."""
    out: list[tuple[str, str]] = []
    if " my " in text or "My " in text or "called" in text or "named" in text or ", our " in text:
        for pattern in _EN:
            for m in pattern.finditer(text):
                first, second = m.groups()
                noun, name = (first, second) if first[0].islower() else (second, first)
                if name in NOT_NAMES:
                    continue
                out.extend((n, a) for n in tokenize(noun) for a in tokenize(name))
    if "叫" in text:
        out.extend((m.group(1), m.group(2)) for m in _ZH.finditer(text))
    return out
