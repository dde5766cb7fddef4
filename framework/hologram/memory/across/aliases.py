"""The people in a person's life by more than one name (issue 39 item 3): "my wife", "Elena", "老婆" are one
person once the person said "my wife Elena" or "我老婆叫小雨".

Why. A fact is stored in the words it was said in ("My wife loves orchids"); a question a week later names
her ("What does Elena like?"), or says it another way ("my spouse's birthday", "我爱人哪天过生日？"). Lexical
search finds nothing shared, and the dense side rarely bridges a name to a relation. So:

* **kin words** — a small built-in table of relations and their words in English and Chinese (wife, spouse,
  老婆, 妻子, 爱人…; mum, mother, 妈妈…; sibling, sister, brother…): an input that names a relation also
  searches for its other words;
* **names** — when the person says who a relation is ("my wife Elena", "Elena is my wife", "my wife's name is
  Elena", "我老婆叫小雨"), :func:`named` reads it and the store across sessions keeps it per person
  (memory/across/store.py, ``alias`` in ``across.db``: the latest name of a relation wins); an input that names
  the relation also searches for the name, and one that says the name also searches for the relation's
  words.

The extra words are :func:`expansion`'s: they join a request's search over other sessions' statements (as
words a statement may match, not as words the input must cover: memory/across/store.py) and L3's entity route (an
entity key among them is named). Never an answer by themselves: they only let the statements in.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = ["KIN", "expansion", "named", "relations_in"]

#: relation -> its words (lower case; Chinese as written). A word may belong to more than one relation
#: ("spouse", "爱人", "sibling", "kid"): it then widens to all of them.
KIN: dict[str, tuple[str, ...]] = {
    "wife": ("wife", "spouse", "老婆", "妻子", "爱人", "媳妇", "太太"),
    "husband": ("husband", "spouse", "老公", "丈夫", "爱人"),
    "partner": ("partner", "spouse", "爱人", "对象"),
    "mother": ("mother", "mom", "mum", "mam", "mama", "mommy", "mummy", "妈妈", "母亲", "老妈"),
    "father": ("father", "dad", "daddy", "papa", "爸爸", "父亲", "老爸"),
    "son": ("son", "boy", "kid", "child", "儿子", "孩子"),
    "daughter": ("daughter", "kid", "child", "女儿", "孩子", "闺女"),
    "sister": ("sister", "sibling", "sis", "姐姐", "妹妹"),
    "brother": ("brother", "sibling", "bro", "哥哥", "弟弟"),
    "grandmother": ("grandmother", "grandma", "gran", "granny", "nan", "nana", "奶奶", "外婆", "姥姥"),
    "grandfather": ("grandfather", "grandpa", "grandad", "granddad", "爷爷", "外公", "姥爷"),
    "girlfriend": ("girlfriend", "女朋友", "女友"),
    "boyfriend": ("boyfriend", "男朋友", "男友"),
    "boss": ("boss", "manager", "老板", "领导", "上司"),
    "dog": ("dog", "puppy", "pup", "狗", "狗狗"),
    "cat": ("cat", "kitten", "kitty", "猫", "猫咪"),
}
_WORD_OF: dict[str, set[str]] = {}
for _relation, _words in KIN.items():
    for _w in _words:
        _WORD_OF.setdefault(_w, set()).add(_relation)
_EN_KIN = sorted((w for w in _WORD_OF if w.isascii()), key=len, reverse=True)
_ZH_KIN = sorted((w for w in _WORD_OF if not w.isascii()), key=len, reverse=True)
_EN_WORDS = re.compile(r"[a-z]+")
_EN_REL = "|".join(_EN_KIN)
_NAME = r"([A-Z][a-z]+(?: [A-Z][a-z]+)?)"
_EN_NAMED = [
    re.compile(rf"\b[Mm]y ({_EN_REL}),? {_NAME}\b"),  # my wife Elena, my wife, Elena
    re.compile(rf"\b[Mm]y ({_EN_REL})(?:'s name is| is called| is named| goes by|, called|, named) {_NAME}\b"),
]
# "Elena, my wife, …" (an apposition: a comma after too) / "Elena is my wife"
_EN_NAMED_FIRST = [re.compile(rf"\b{_NAME}(?:, my ({_EN_REL})(?=[,.;!]|$)| is my ({_EN_REL})\b)")]
_ZH_REL = "|".join(_ZH_KIN)
_ZH_NAMED = re.compile(
    rf"我(?:的|家)?({_ZH_REL})(?:叫|名叫|名字叫|的名字是|的名字叫)([\u4e00-\u9fff]{{1,3}}?)(?=$|[，。,.!！?？、\s]|她|他|它)"
)
_NOT_NAMES = frozenset(
    {"The", "This", "That", "She", "He", "It", "And", "But", "Who", "Is", "Was", "Has", "Too", "Oh", "Well", "Yes",
     "No", "So", "Hi", "Hey", "Sorry", "Thanks", "Anyway", "Also", "Now", "Today", "Yesterday"}
)  # fmt: skip


def named(text: str) -> list[tuple[str, str]]:
    """(relation, name) pairs `text` tells ("my wife Elena" -> ("wife", "Elena")); the relation is the kin
    word's relation when it has one ("my sis Ana" -> sister), nothing when the word is ambiguous ("my kid
    Theo": son or daughter)."""
    out: list[tuple[str, str]] = []
    found: list[tuple[str, str]] = []
    for pattern in _EN_NAMED:
        found += [(m.group(1).lower(), m.group(2)) for m in pattern.finditer(text)]
    for pattern in _EN_NAMED_FIRST:
        found += [((m.group(2) or m.group(3)).lower(), m.group(1)) for m in pattern.finditer(text)]
    found += [(m.group(1), m.group(2)) for m in _ZH_NAMED.finditer(text)]
    for word, name in found:
        relations = _WORD_OF.get(word, set())
        first = name.split()[0]
        if len(relations) == 1 and first not in _NOT_NAMES and name[0] not in "我你他她它":
            out.append((next(iter(relations)), name))
    return list(dict.fromkeys(out))


def relations_in(text: str) -> set[str]:
    """The relations `text` names by a kin word (English words; Chinese as substrings)."""
    out: set[str] = set()
    for word in _EN_WORDS.findall(text.lower()):
        base = word[:-1] if word.endswith("s") and word[:-1] in _WORD_OF else word  # sisters, mums
        out |= _WORD_OF.get(base, set())
    for word in _ZH_KIN:
        if word in text:
            out |= _WORD_OF[word]
    return out


def expansion(text: str, names: Mapping[str, str]) -> str:
    """The words `text` should also be searched by (module docstring): the other words of the relations it
    names and their recorded names (`names`: relation -> name), and the relation words of a recorded name
    it says. Empty when it names nobody."""
    relations = relations_in(text)
    lower = text.casefold()
    for relation, name in names.items():
        if _says(lower, name.casefold()):
            relations.add(relation)
    extra: list[str] = []
    for relation in sorted(relations):
        extra += [w for w in KIN.get(relation, ()) if w not in lower]
        known = names.get(relation)
        if known and known.casefold() not in lower:
            extra.append(known)
    return " ".join(dict.fromkeys(extra))


def _says(lower: str, name: str) -> bool:
    """Whether lower-cased `lower` says `name`: a whole word, or — Chinese, no spaces — a substring."""
    if not name.isascii():
        return name in lower
    return re.search(rf"(?<!\w){re.escape(name)}(?!\w)", lower) is not None
