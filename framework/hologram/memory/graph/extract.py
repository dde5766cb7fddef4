"""The deterministic extractor: triples from an event's text without a model (issue 15, item 2).

Why rules and not nothing: without an LLM configured the distilled memory must still say something. The
original's extractor yielded zero triples on real chat; this one is measured on LoCoMo (English) and on a
Chinese sample (tools/bench/distill.py): triples per 100 turns and the share whose value occurs in the source
text (1.0 by construction — every value is a span cut out of the block's own text, and :func:`gate` checks).

* **English** — pattern rules over sentences, first person resolved to the speaker: "my favourite X is Y",
  "I love/like/enjoy Y", "I went/moved to Y", "I live/work in/at/as Y", "I'm a/from Y", "I have/adopted/
  painted/joined… Y", "my daughter Emma", and third-person "Name loves Y". A value is a short phrase cut at
  punctuation, a conjunction or a time word; values that are pronouns or start like a clause ("how", "what",
  "back") are dropped. (A third-person "X is a Y" rule was dropped: on LoCoMo its subjects were mostly not
  people — "Yoga is a great way", "Zen is a mix".)
* **Chinese** — jieba's segmentation and dictionary part-of-speech tags (the kernel's own segmenter,
  ``hologram.memory.text.segment``, over jieba's data: no second dictionary in memory): subject 我/我们 (the
  speaker) or a person name (nr), optional adverbs and time words, a verb (v/vn or the verbs listed in
  ``_ZH_VERBS``), an aspect particle, then an object of nouns (n, nr, ns, nt, nz, unknown words, Latin, numbers
  with measure words); and "我的 N 是 X".

The speaker of a block: a leading "Name: " (how LoCoMo turns and channel bridges write it), else the event's
partner for an input block, "assistant" for the model's blocks.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from hologram.memory.cold.blocks import EventRecord
from hologram.memory.graph.store import Triple
from hologram.memory.text.bounds import indexed
from hologram.memory.text.utterance import without_questions

__all__ = ["DeterministicExtractor", "Span", "extract_chinese", "extract_english", "gate", "speaker_of"]


@dataclass(frozen=True, slots=True)
class Span:
    """A (subject, predicate, value) read from one text; value is a substring of it."""

    subject: str
    predicate: str
    value: str


_SPEAKER = re.compile(r"^\s*([A-Z][\w.'-]*(?: [A-Z][\w.'-]*){0,2}|[\u4e00-\u9fff]{1,4}):\s+")
_SENTENCE = re.compile(r"[^.!?。！？\n]+")
_STOP = (
    r"and|but|because|so|when|which|that|who|since|if|while|or|as well|too|though|although|until|after|before|"
    r"yesterday|today|tonight|tomorrow|last|next|this (?:week|weekend|month|year|morning|evening)|recently|"
    r"lately|now|again|with|for|from|at|on|in|to|by|about|it|is|was|are|were"
)
_WORD = r"[A-Za-z0-9][\w'&-]*"
_VALUE = rf"((?:(?!(?:{_STOP})\b){_WORD})(?: (?!(?:{_STOP})\b){_WORD}){{0,5}})"
_EMPTY_VALUES = frozenset(
    [
        "it",
        "that",
        "this",
        "them",
        "you",
        "me",
        "him",
        "her",
        "us",
        "one",
        "some",
        "something",
        "anything",
        "everything",
        "lot",
        "lots",
        "so",
        "much",
        "more",
        "things",
        "a",
        "an",
        "the",
        "my",
        "your",
        "his",
        "their",
        "our",
    ]
)
_NOT_NAMES = frozenset(
    ["It", "This", "That", "There", "He", "She", "They", "We", "You", "What", "Which", "Who", "Here", "Life",
     "Everything", "Everyone", "Someone", "Nobody", "One", "Mine", "Yours", "Sounds", "Seems", "Looks"]
)  # fmt: skip
# A value starting with one of these is a clause or an adverb, not a thing ("got back", "love how it…").
_PRONOUN_START = frozenset(
    ["you", "it", "this", "that", "them", "me", "him", "her", "us", "these", "those", "how", "what", "where",
     "why", "when", "who", "back", "online", "up", "down", "out", "off", "noticed", "used", "no", "here"]
)  # fmt: skip
_TIME_VALUE = re.compile(r"^(?:\w+ )?(?:years?|months?|weeks?|days?|hours?|minutes?|times?) ago$|^ago$", re.I)
_LEADING = re.compile(r"^(?:(?:a|an|the|some|my|our|his|her|their|your|so|really|such|very) )+", re.I)
_ADV = r"(?:(?:really|also|just|recently|finally|actually|totally|always|still|even|absolutely|now) )*"
_LIKE = r"love|loved|like|liked|enjoy|enjoyed|adore|hate|hated|prefer"
_GO = r"went|go|travell?ed|moved|drove|flew|headed|got back"
_LIVE = r"live|lived|work|worked|study|studied|stayed|volunteer|volunteered"
_DO = (
    r"have|had|got|bought|adopted|made|painted|wrote|read|watched|visited|joined|started|finished|took up|"
    r"play|played|attended|signed up for|learned|learnt|ran|baked|built|found|lost|won|received|tried|"
    r"planted|created|met|saw|teach|taught|collect|collected|drew"
)
_FAMILY = (
    r"son|daughter|wife|husband|partner|friend|dog|cat|puppy|kitten|mom|mum|dad|mother|father|brother|sister|"
    r"kids?|children|boss|grandma|grandpa|cousin|aunt|uncle|niece|nephew|girlfriend|boyfriend|pet"
)
_EN_RULES: list[tuple[re.Pattern[str], str | None, bool]] = [
    # (pattern, fixed predicate or None = the verb the pattern captured, first person)
    (
        re.compile(rf"\bmy (favou?rite \w+|name|job|hobby|passion|goal|dream) (?:is|was|has been) {_VALUE}", re.I),
        None,
        True,
    ),
    (re.compile(rf"\b[Mm]y ({_FAMILY}) ([A-Z][a-z]+)\b"), "has {0}", True),  # "My sister Alice", first word too
    (re.compile(rf"\bI {_ADV}({_LIKE}) {_VALUE}", re.I), None, True),
    (re.compile(rf"\bI {_ADV}({_GO}) to {_VALUE}", re.I), "went to", True),
    (re.compile(rf"\bI {_ADV}({_LIVE}) (in|at|as|for|with) {_VALUE}", re.I), "{0} {1}", True),
    (re.compile(rf"\bI(?:'m| am) (?:a|an) {_VALUE}", re.I), "is a", True),
    (re.compile(rf"\bI(?:'m| am) (?:originally )?from {_VALUE}", re.I), "is from", True),
    (
        re.compile(rf"\bI(?:'m| am) (?:really )?(?:into|keen on|passionate about|interested in) {_VALUE}", re.I),
        "is into",
        True,
    ),
    (re.compile(rf"\bI(?:'ve| have)? {_ADV}({_DO}) {_VALUE}", re.I), None, True),
    (re.compile(rf"\b([A-Z][a-z]+) (loves|likes|enjoys|hates|adores|prefers) {_VALUE}"), None, False),
    # a named person's home and work ("my sister Alice lives in Lisbon"), in the first person's predicates
    (
        re.compile(rf"\b([A-Z][a-z]+) {_ADV}(lives|lived|works|worked|studies|studied) (in|at|as|for) {_VALUE}"),
        "{0} {1}",
        False,
    ),
]
# third-person verbs in the predicate of the first person's rule, so both say "live in" (one predicate)
_BASE_FORM = {"lives": "live", "works": "work", "studies": "study"}


def speaker_of(text: str, default: str) -> tuple[str, str]:
    """(speaker, text without the "Name: " prefix)."""
    m = _SPEAKER.match(text)
    return (m.group(1), text[m.end() :]) if m else (default, text)


def _clean(value: str) -> str:
    value = _LEADING.sub("", value.strip(" -'\""))
    return value.strip(" -'\"")


def extract_english(text: str, speaker: str) -> list[Span]:
    out: list[Span] = []
    for sentence in _SENTENCE.findall(text):
        for pattern, predicate, first_person in _EN_RULES:
            for m in pattern.finditer(sentence):
                groups = m.groups()
                value = _clean(groups[-1])
                if not value or value.lower() in _EMPTY_VALUES or _TIME_VALUE.match(value):
                    continue
                if value.split()[0].lower() in _PRONOUN_START:
                    continue
                if first_person:
                    subject, verbs = speaker, groups[:-1]
                else:
                    subject, verbs = groups[0], groups[1:-1]
                    if subject in _NOT_NAMES:
                        continue
                if predicate is None:
                    pred = " ".join(v.lower() for v in verbs) if verbs else "is"
                else:
                    pred = predicate.format(*(_BASE_FORM.get(v.lower(), v.lower()) for v in verbs))
                if subject.lower() == value.lower():
                    continue
                out.append(Span(subject, pred, value))
    return _unique(out)


# -- Chinese ---------------------------------------------------------------------------------------------

_ZH_SELF = frozenset({"我", "我们", "咱们"})
_ZH_VERBS = frozenset(
    [
        "喜欢",
        "爱",
        "讨厌",
        "是",
        "住在",
        "在",
        "去",
        "去过",
        "买",
        "养",
        "有",
        "学习",
        "学",
        "工作",
        "做",
        "参加",
        "加入",
        "开始",
        "读",
        "看",
        "玩",
        "打算",
        "想",
        "要",
        "叫",
        "认识",
        "搬到",
        "来自",
        "毕业",
        "写",
        "画",
        "种",
        "跑",
        "学会",
        "报名",
    ]
)
_ZH_ADVERB_TAGS = frozenset({"d", "t", "c", "p", "ad"})
_ZH_OBJECT_TAGS = frozenset(
    {"n", "nr", "ns", "nt", "nz", "nw", "vn", "eng", "m", "q", "nrt", "nrfg", "an", "j", "l", "i"}
)
_ZH_PLACE_TAGS = frozenset({"n", "nr", "ns", "nt", "nz", "nrt", "eng", "j"})
_ZH_PARTICLES = frozenset({"了", "过", "着", "一个", "一只", "一条", "一本", "一家", "一名", "一位", "很多", "一些"})
_ZH_TIME = frozenset(
    [
        "上周末",
        "周末",
        "上周",
        "昨天",
        "今天",
        "明天",
        "前天",
        "去年",
        "今年",
        "明年",
        "最近",
        "刚才",
        "后来",
        "以前",
        "现在",
        "早上",
        "晚上",
        "上个月",
        "下个月",
    ]
)
_HAN = re.compile(r"[\u4e00-\u9fff]")


def _zh_tag(word: str, tag: str | None) -> str:
    if tag is not None:
        return tag
    if re.fullmatch(r"[A-Za-z][\w-]*", word):
        return "eng"
    if re.fullmatch(r"\d+", word):
        return "m"
    return "n" if _HAN.search(word) and len(word) > 1 else "x"


def extract_chinese(text: str, speaker: str) -> list[Span]:
    """Chinese POS patterns (module docstring), clause by clause: a clause without its own subject continues
    the previous clause's ("我住在杭州，在阿里巴巴工作"), and 他/她 is the one person named earlier in the text
    (with two or more, the pronoun is left unresolved: a wrong subject is worse than none). Empty when jieba's
    data is unavailable."""
    from hologram.memory.text import tokenizer as tokenize

    seg = tokenize.loaded_segmenter()
    if seg is None:
        return []
    out: list[Span] = []
    named: list[str] = []
    for sentence in re.split(r"[。！？!?；;\n]", text):
        subject: str | None = None
        for clause in re.split(r"[，,、：:]", sentence):
            words = [w for w in seg.lcut(clause) if w.strip()]
            tags = [_zh_tag(w, seg.tag(w)) for w in words]
            named += [w for w, t in zip(words, tags, strict=True) if t in ("nr", "nrfg", "nrt")]
            j = 0
            while j < len(words) and (words[j] in _ZH_TIME or tags[j] in ("t", "c")):
                j += 1
            if j < len(words):
                w, t = words[j], tags[j]
                if w in _ZH_SELF:
                    subject, j = speaker, j + 1
                elif w in ("他", "她"):
                    subject, j = (named[0] if len(set(named)) == 1 and named[0] else None), j + 1
                elif t in ("nr", "nrfg", "nrt") or (
                    seg.tag(w) is None
                    and _HAN.fullmatch(w[0])
                    and 2 <= len(w) <= 3
                    and j + 1 < len(words)
                    and _is_verb(words[j + 1], tags[j + 1])
                ):
                    subject, j = w, j + 1
                    named.append(w)
                if j < len(words) and words[j] in ("和", "跟", "与"):
                    subject = None  # "A和B…": two subjects, neither alone; and 他/她 could be either
                    named += ["", ""]
            if subject is None:
                continue
            if j + 2 < len(words) and words[j] == "的" and tags[j + 1].startswith("n") and words[j + 2] in ("是", "叫"):
                value = _zh_object(words, tags, j + 3)
                if value:
                    out.append(Span(subject, words[j + 1], value))
                continue
            while (
                j < len(words)
                and words[j] != "在"
                and (words[j] in _ZH_TIME or (tags[j] in _ZH_ADVERB_TAGS and words[j] not in _ZH_VERBS))
            ):
                j += 1
            if j < len(words) and words[j] == "在":  # 在 X (工作): the place, then maybe the verb
                place = _zh_object(words, tags, j + 1, nouns_only=True)
                k = j + 1 + len(seg.lcut(place))
                if place:
                    verb = words[k] + "于" if k < len(words) and _is_verb(words[k], tags[k]) else "在"
                    out.append(Span(subject, verb, place))
                continue
            if j < len(words) and _is_verb(words[j], tags[j]):
                verb = words[j]
                k = j + 1
                if k < len(words) and words[k] in ("在", "到", "于"):
                    verb, k = verb + words[k], k + 1
                while k < len(words) and words[k] in _ZH_PARTICLES:
                    k += 1
                value = _zh_object(words, tags, k)
                if value and value != subject:
                    out.append(Span(subject, verb, value))
    return [s for s in _unique(out) if s.value in text]


def _is_verb(word: str, tag: str) -> bool:
    return word in _ZH_VERBS or tag in ("v", "vn")


def _zh_object(words: Sequence[str], tags: Sequence[str], k: int, *, nouns_only: bool = False) -> str:
    """The longest run (≤ 4 words) of object words from `k`, allowing one 的 inside ("妈妈的猫")."""
    taken: list[str] = []
    if k < len(words) and words[k] == "《":  # a title: everything up to 》
        end = next((i for i in range(k + 1, len(words)) if words[i] == "》"), None)
        return "".join(words[k + 1 : end]) if end is not None else ""
    allowed = _ZH_PLACE_TAGS if nouns_only else _ZH_OBJECT_TAGS
    while k + 1 < len(words) and tags[k] in ("m", "q") and tags[k + 1] in allowed - {"m", "q"}:
        k += 1  # 一台新相机, 一个巧克力蛋糕: the count is not the thing
    while k < len(words) and len(taken) < 4:
        adjective = tags[k] == "a" and k + 1 < len(words) and tags[k + 1] in _ZH_OBJECT_TAGS
        linked = words[k] == "的" and bool(taken) and k + 1 < len(words) and tags[k + 1] in _ZH_OBJECT_TAGS
        if tags[k] in allowed or adjective or linked:
            taken.append(words[k])
        else:
            break
        k += 1
    while taken and taken[-1] == "的":
        taken.pop()
    return "".join(taken)


# -- the extractor ---------------------------------------------------------------------------------------


def _unique(spans: Iterable[Span]) -> list[Span]:
    return list(dict.fromkeys(spans))


def gate(value: str, source: str) -> bool:
    """A triple is kept only if its value occurs in the source text (case-insensitive, whitespace-collapsed):
    the same gate for both extractors, so nothing the text does not say enters memory."""
    return bool(value.strip()) and _norm(value) in _norm(source)


def _norm(text: str) -> str:
    return " ".join(text.casefold().split())


_READ_KINDS = ("input", "reasoning", "response", "tool_result", "media")


class DeterministicExtractor:
    """Rules for English, jieba POS patterns for Chinese (module docstring). Stateless and thread-safe."""

    name = "deterministic"

    def extract(self, record: EventRecord) -> list[Triple]:
        """Triples of one event, reading its blocks in order (input → reasoning → response → results)."""
        out: list[Triple] = []
        for block in record.blocks:
            if block.kind not in _READ_KINDS or not block.text.strip():
                continue
            default = (record.partner or "user") if block.kind == "input" else "assistant"
            speaker, text = speaker_of(indexed(block.text), default)  # bounded work per event (bounds.py)
            text = without_questions(text)  # a question states no fact (memory/text/utterance.py)
            spans = extract_chinese(text, speaker) if _HAN.search(text) else []
            spans += extract_english(text, speaker)
            out += [
                Triple(
                    s.subject, s.predicate, s.value, record.id, block.id, confidence=0.5, valid_at=record.ts_ms or None
                )
                for s in _unique(spans)
                if gate(s.value, block.text)
            ]
        return out
