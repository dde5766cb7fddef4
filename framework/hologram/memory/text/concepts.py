"""Words that name the same people and animals in a conversation: kin, partners, children, pets.

Why (issue 39 item 1): a question names a class, the turns that answer it name a member or say it another way.
"What activities has Melanie done with her *family*?" is answered by "I'm off to go swimming with the *kids*",
"Yesterday I took the *kids* to the museum", "camping with my *fam*"; "How many *children* does Melanie have?"
by "my *son* got into an accident"; "What kind of places have Andrew and his *girlfriend* checked out?" by "My
*GF* and I just had a great experience…"; "What has Audrey bought for her *dogs*?" by "the *pups* love it".
Of LoCoMo's missed multi-hop and open-domain evidence at 4k, 270 of 298 turns share no index term with their
question; these few words are the most common bridge a rule can build without knowing the world.

A small table of the words people use for the people and animals they live with, in English and Chinese (a
relation in one direction where one word is the wider: "family" reaches "kids", never "kids" reaches "family";
both directions for synonyms: "puppy" and "dog", 孩子 and 小孩). Nothing here is fitted to a data set's words
beyond those classes; the related term enters the query at half the asked term's weight
(``rank/expand.py``), so it lifts a turn that names nothing else and never outweighs the word asked.

Han words are their own index term (jieba's search mode emits a dictionary word whole, besides its parts);
other words are spelled through :func:`hologram.memory.text.tokenizer.tokenize` (the stemmer's spelling).
"""

from __future__ import annotations

from functools import cache

from hologram.memory.text.tokenizer import tokenize
from hologram.memory.text.tokens import CJK_RE

__all__ = ["RELATED", "related_terms"]

_DOG = "dog dogs puppy puppies pup pups doggy doggie pooch mutt mutts"
_CAT = "cat cats kitten kittens kitty"
_KIDS = "kid kids child children"
_KIN = "kids son sons daughter daughters husband wife parents mom dad mother father brother sister fam"
_ZH_DOG = "狗 狗狗 小狗 狗子"
_ZH_CAT = "猫 猫咪 小猫"
_ZH_KIDS = "孩子 小孩 孩子们 娃"
_ZH_KIN = "孩子 儿子 女儿 老公 老婆 丈夫 妻子 爸妈 父母 爸爸 妈妈 哥哥 姐姐 弟弟 妹妹"

#: ``"a b c"``: synonyms, each reaches the others; ``"a b | c d"``: a and b reach c and d (the wider word first).
RELATED: tuple[str, ...] = (
    _DOG,
    _CAT,
    f"pet pets | {_DOG} {_CAT}",
    _KIDS,
    "kid kids child children | son sons daughter daughters",
    f"family families fam | {_KIN}",
    "fam family",
    "girlfriend | gf girl",
    "gf girlfriend",
    "boyfriend | bf",
    "bf boyfriend",
    "partner spouse | girlfriend gf boyfriend bf wife husband",
    _ZH_DOG,
    _ZH_CAT,
    f"宠物 | {_ZH_DOG} {_ZH_CAT}",
    _ZH_KIDS,
    "孩子 小孩 孩子们 | 儿子 女儿",
    f"家人 家里人 家庭 全家 | {_ZH_KIN}",
    "女朋友 女友",
    "男朋友 男友",
    "对象 伴侣 | 女朋友 女友 男朋友 男友 老婆 老公",
    "爱人 配偶 | 老婆 老公 妻子 丈夫 太太",
    "老婆 妻子 太太 媳妇",
    "老公 丈夫 先生",
)


def _terms(words: str) -> set[str]:
    out: set[str] = set()
    for word in words.split():
        if CJK_RE.search(word):
            out.add(word)
        else:
            out.update(tokenize(word))
    return out


@cache
def _table() -> dict[str, frozenset[str]]:
    """Index term → the index terms it reaches (module docstring); built on first use."""
    out: dict[str, set[str]] = {}
    for line in RELATED:
        wide, _, narrow = line.partition("|")
        heads = _terms(wide)
        tails = _terms(narrow) if narrow else heads
        for head in heads:
            out.setdefault(head, set()).update(tails - {head})
    return {term: frozenset(related) for term, related in out.items()}


def related_terms(term: str) -> frozenset[str]:
    """The index terms `term` reaches ("family" → "kid", "son", "husband", …); empty for any other word."""
    return _table().get(term, frozenset())
