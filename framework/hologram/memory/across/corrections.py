"""Corrections within one session (issue 39 item 3): a later statement of the same fact outranks the earlier
one, and the earlier is marked superseded where rules can tell ("I live in Porto" … "I moved to Lisbon";
"wifi密码是sunflower2024" … "wifi密码又换了，现在是moonlight88").

Why at write time. A previous attempt compared every request's best inputs with the later inputs closest to
them (dense passes over the session's passages): prepare p50 7.7 → 23.8 ms for no LoCoMo gain
(docs/memory.md). Here the work is done once, when an input is indexed: its *keys* — the attribute a statement
sets, read by rules — are looked up among the keys of the session's earlier statements; when the new input
carries a correction cue ("now", "instead", "changed", "no longer"; 现在, 改成, 换了, 不再) and shares a key with
an earlier statement, the latest such statement is superseded by it. A request only reads the pairs: the later
input's score is lifted just above the earlier's when the earlier scores higher (:meth:`Corrections.lift`, a
few array reads), so wherever the stale statement would be sent the correction comes too, ranked above it;
the history shows both in time order, the earlier with :data:`MARK` in front (memory/across/dated.py).

**Keys** (speaker-qualified: in a group one person's correction never supersedes another's statement):

* English: the head noun of a determiner phrase that is the subject of a copula or a change verb ("my
  **number** is now …", "the **rent** will only be …", "changed the wifi **password** …"); a move ("I live in",
  "moved to", "relocating me to", "sending me to": ``@where``); a flight- or booking-like code's letters
  ("UA 1532" … "UA 1618": ``code:ua``); the rule extractor's first-person predicates that hold one value at a
  time (``favourite author``, ``job``, ``work at``…: memory/graph/extract.py).
* Chinese (jieba, the kernel's segmenter): the nouns a clause opens with before its first verb (its topic:
  "**房租**涨到…", "wifi**密码**又换了"), the noun of "我的N是…", a move (住在, 搬到, 调到: ``@where``), a verb
  "换X" ("换车": ``车``).

What the rules cannot tell (a paraphrased correction with no shared key, no cue) stays as before: both in time
order when both fit. Bounded: at most :data:`MAX_KEYS` keys and :data:`MAX_PAIRS` pairs per session (the
oldest go); kept on disk beside the session's index (``corrections.jsonl``, appended one line per keyed
statement, compacted when it holds four times what is live) so a released or restarted session keeps them.
"""

from __future__ import annotations

import json
import logging
import re
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np

from hologram.memory.text.utterance import sentences, tells

__all__ = ["FILE", "MARK", "MAX_KEYS", "MAX_PAIRS", "Corrections", "is_correction", "keyed", "keys_of"]

log = logging.getLogger("hologram.memory")

FILE = "corrections.jsonl"
#: In front of a superseded input where the history shows it (memory/across/dated.py).
MARK = "[superseded by a later message]"
MAX_KEYS = 1024
MAX_PAIRS = 1024
#: How far above the earlier statement's score a correction is put (it only has to rank above it).
_ABOVE = 1e-3

_EN_CUE = re.compile(
    r"\b(?:now|instead|anymore|any more|no longer|chang(?:e|ed|es|ing)|switch(?:ed|es|ing)?|replac(?:e|ed|ement|ing)|"
    r"mov(?:e|ed|ing)|new|again|actually|scratch that|correction|fell through|cancel+ed|called off|rebook(?:ed)?|"
    r"reschedul(?:e|ed)|reassign(?:ed)?|updat(?:e|ed)|turns out|after all|sold|returned|upgraded|not any ?more)\b",
    re.I,
)
_ZH_CUE = re.compile(
    "现在|如今|改成|改为|改到|改了|换了|换成|换到|换车|不再|取消|其实|搬到|搬去|搬家|调到|更正|说错|已经不|退掉|卖了|重新|变成|新地址"
)
_DET = frozenset({"my", "our", "the", "his", "her", "their", "its"})
# words that end a noun phrase (prepositions, conjunctions, verbs that follow a subject)
_NP_END = frozenset(
    [
        "to",
        "at",
        "on",
        "in",
        "for",
        "with",
        "from",
        "by",
        "of",
        "about",
        "into",
        "onto",
        "and",
        "or",
        "but",
        "so",
        "because",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "will",
        "would",
        "has",
        "have",
        "had",
        "goes",
        "went",
        "reads",
        "starts",
        "said",
        "says",
        "got",
        "gets",
        "just",
        "now",
        "again",
        "also",
        "still",
        "only",
        "not",
    ]
)
_COPULA = frozenset(
    [
        "is",
        "are",
        "was",
        "were",
        "'s",
        "will",
        "goes",
        "reads",
        "starts",
        "moved",
        "changed",
        "became",
        "becomes",
        "now",
    ]
)
_PERFECT = frozenset({"changed", "moved", "become", "been", "gone"})
_CHANGE_VERBS = frozenset(
    [
        "changed",
        "change",
        "changing",
        "reset",
        "updated",
        "update",
        "switched",
        "switch",
        "replaced",
        "replace",
        "sold",
        "returned",
        "rebooked",
        "reassigned",
        "moved",
        "cancelled",
        "canceled",
        "new",
    ]
)
# heads that name no attribute ("the other one", "my way")
_VAGUE = frozenset(
    [
        "one",
        "ones",
        "thing",
        "things",
        "way",
        "time",
        "day",
        "days",
        "week",
        "weeks",
        "year",
        "years",
        "bit",
        "lot",
        "same",
        "other",
        "others",
        "same",
        "stuff",
        "it",
        "morning",
        "evening",
        "night",
        "weekend",
        "today",
        "tonight",
        "yesterday",
        "tomorrow",
    ]
)
_EN_WORD = re.compile(r"[a-z][a-z'-]*|\d+")
_EN_WHERE = re.compile(
    r"\b(?:i|we)\s+(?:\w+\s+)?(?:live|lives|living|am based|'m based|moved|moving|move|relocated|relocating)\s+"
    r"(?:in|to|into)\b|\b(?:relocat\w*|transferr\w*|transfer|send\w*|posting|post\w*|moving)\s+(?:me|us)\s+to\b"
    # where one lives, said by the home itself: "our flat is on Harrow Street", "we moved house", "my new address"
    r"|\b(?:my|our)\s+(?:new\s+)?(?:flat|house|home|apartment)\s+(?:is|was)\s+(?:on|in|at|near)\b"
    r"|\b(?:my|our|the)\s+(?:new\s+)?address\s+(?:is|was)\b|\b(?:moved|moving|move)\s+(?:house|home|flats?|apartments?)\b",
    re.I,
)
_CODE = re.compile(r"\b([A-Z]{2,3})[ -]?\d{3,5}\b")
_ONE_VALUE = re.compile(r"^(?:favou?rite \w+|name|job|hobby|live in|live at|work at|work for|work as|work in|is from)$")
_ZH_WHERE = ("住在", "搬到", "搬去", "搬家", "调到", "派到", "调去", "派去", "定居", "住址", "新家")
# verbs by which a clause's topic takes a (new) value: "房租涨到…", "密码又换了", "车停在…"
_ZH_SETS = frozenset(
    [
        "是",
        "叫",
        "改",
        "改成",
        "改为",
        "改到",
        "换",
        "换成",
        "换到",
        "变成",
        "涨",
        "涨到",
        "降",
        "降到",
        "停",
        "停在",
        "定",
        "定在",
        "设",
        "设成",
        "设为",
        "搬",
        "搬到",
        "调",
        "调到",
    ]
)
_ZH_CHANGE = frozenset({"换", "改"})  # set a value only without an object of their own (`_has_object`)
_ZH_SAY = frozenset({"说", "听说", "据说", "通知", "告诉我"})
_ZH_MOVE = frozenset({"住", "搬", "调", "派", "移居"})  # + 到/去/在 when the segmenter splits them
_HAN = re.compile("[\u4e00-\u9fff]")
_ZH_SELF = frozenset({"我", "我们", "咱们", "我家"})


def is_correction(text: str) -> bool:
    """Whether `text` carries a correction cue (module docstring)."""
    return bool(_EN_CUE.search(text) or _ZH_CUE.search(text))


def keys_of(text: str, speaker: str = "user") -> frozenset[str]:
    """The attributes `text` sets (module docstring), each as ``speaker|key``."""
    return keyed(text, speaker)[0]


def keyed(text: str, speaker: str = "user") -> tuple[frozenset[str], frozenset[str]]:
    """(every key of `text`, the keys of its sentences that carry a correction cue): a cue corrects what its
    own sentence sets, not what a sentence of chit-chat beside it says."""
    every: set[str] = set()
    corrected: set[str] = set()
    for sentence in sentences(text):
        keys = _english_keys(sentence)
        if _HAN.search(sentence):
            keys |= _chinese_keys(sentence)
        every |= keys
        if keys and is_correction(sentence):
            corrected |= keys
    return frozenset(f"{speaker}|{k}" for k in every), frozenset(f"{speaker}|{k}" for k in corrected)


def _english_keys(sentence: str) -> set[str]:
    from hologram.memory.text.tokenizer import tokenize

    out: set[str] = set()
    words = _EN_WORD.findall(sentence.lower())
    for i, word in enumerate(words):
        if word not in _DET:
            continue
        phrase: list[str] = []
        j = i + 1
        while j < len(words) and len(phrase) < 3 and words[j] not in _NP_END and words[j] not in _DET:
            phrase.append(words[j])
            j += 1
        if not phrase or phrase[-1] in _VAGUE or phrase[-1].isdigit():
            continue
        follows = words[j] if j < len(words) else ""
        if follows in ("has", "have", "had") and j + 1 < len(words) and words[j + 1] in _PERFECT:
            follows = words[j + 1]  # "my number has changed"; "my phone has a new case" sets nothing
        before = words[i - 1] if i > 0 else ""
        # "changed the wifi password to …" / "… again": a value follows; "it changed my view on …" is no setting
        if follows in _COPULA or (before in _CHANGE_VERBS and follows in ("to", "into", "again", "now", "")):
            stems = tokenize(phrase[-1])
            if stems:
                out.add(stems[0])
    if _EN_WHERE.search(sentence):
        out.add("@where")
    out |= {f"code:{m.group(1).lower()}" for m in _CODE.finditer(sentence)}
    from hologram.memory.graph.extract import extract_english

    out |= {span.predicate.lower() for span in extract_english(sentence, "user") if _ONE_VALUE.match(span.predicate)}
    return out


def _has_object(words: Sequence[str], tags: Sequence[str]) -> bool:
    """Whether a change verb is followed by a noun of its own ("手机换了个新壳": the case changed, not the phone),
    past aspect particles and counts ("又换了一次": the topic itself changed)."""
    for w, t in zip(words, tags, strict=True):
        if t in ("ul", "uj", "m", "q", "d") or w in ("了", "过", "个", "一个", "一次"):
            continue
        return bool(_HAN.match(w)) and (t.startswith("n") or t == "a") and not t.startswith("nr")
    return False


def _chinese_keys(sentence: str) -> set[str]:
    from hologram.memory.text import tokenizer

    seg = tokenizer.loaded_segmenter(
        timeout=0
    )  # never waits: on the loop, a turn indexed meanwhile has no Chinese keys
    if seg is None:
        return set()
    out: set[str] = set()
    for clause in re.split(r"[，,、：:；;]", sentence):
        words = [w for w in seg.lcut(clause) if w.strip()]
        tags = [seg.tag(w) or ("eng" if w.isascii() else "n") for w in words]
        while words and words[0] in _ZH_SAY:  # reported speech: what was said is the clause
            words, tags = words[1:], tags[1:]
        for k, w in enumerate(words):
            after = words[k + 1] if k + 1 < len(words) else ""
            if w in _ZH_WHERE or (w in _ZH_MOVE and after in ("到", "去", "在")):
                out.add("@where")
            if len(w) == 2 and w[0] == "换" and tags[k].startswith("v") and _HAN.match(w[1]):
                out.add(w[1])  # 换车, 换房
        if len(words) > 3 and words[0] in _ZH_SELF and words[1] == "的" and not tags[2].startswith("v"):
            out.add(words[2])  # 我的车牌号是…
            continue
        topic: list[str] = []  # the clause's topic: the nouns it opens with, then a verb that sets a value
        for k, (w, t) in enumerate(zip(words, tags, strict=True)):
            if w in _ZH_SETS or (len(w) == 2 and w[0] in "只又也都已还再" and w[1] in _ZH_SETS):  # 只涨: unknown word
                if not (w in _ZH_CHANGE and _has_object(words[k + 1 :], tags[k + 1 :])):
                    out.update(topic)
                break
            if w in _ZH_SELF or t in ("d", "t", "r", "m", "q", "uj", "p", "c", "x", "eng"):
                continue
            if t.startswith("v") or t in ("a", "ad", "ul"):
                break
            if _HAN.match(w) and not t.startswith("nr"):
                topic.append(w)
    return out


class Corrections:
    """One session's keys and supersession pairs (module docstring). Not thread-safe: the session's memory
    calls it under the session's lock (indexing, then a request)."""

    def __init__(self, directory: Path | None = None) -> None:
        self.path = Path(directory) / FILE if directory is not None else None
        self._keys: OrderedDict[str, int] = OrderedDict()  # key -> seq of the latest statement setting it
        self.superseded: OrderedDict[int, int] = OrderedDict()  # earlier seq -> the seq that corrects it
        self._seen = -1
        self._lines = 0
        self._load()

    def _load(self) -> None:
        if self.path is None or not self.path.exists():
            return
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except OSError as exc:  # derived data: without it, corrections before now are not known
            log.warning("%s cannot be read (%s); earlier corrections of this session are not ranked", self.path, exc)
            return
        for line in lines:
            try:
                row = json.loads(line)
                seq, keys, by = int(row["s"]), [str(k) for k in row["k"]], row.get("by")
            except (ValueError, KeyError, TypeError):
                continue  # a torn last line after a crash
            self._remember(seq, keys, int(by) if by is not None else None)
        self._lines = len(lines)

    def _remember(self, seq: int, keys: Iterable[str], superseded: int | None) -> None:
        self._seen = max(self._seen, seq)
        for key in keys:
            self._keys.pop(key, None)
            self._keys[key] = seq
        while len(self._keys) > MAX_KEYS:
            self._keys.popitem(last=False)
        if superseded is not None and superseded != seq:
            self.superseded.pop(superseded, None)
            self.superseded[superseded] = seq
            while len(self.superseded) > MAX_PAIRS:
                self.superseded.popitem(last=False)

    def observe(self, seq: int, text: str, partner: str | None = None) -> int | None:
        """An input was indexed: remember what it sets; returns the seq of the statement it supersedes (or
        None). An input seen already (a session's tail indexed again after a release) changes nothing. The
        speaker: a leading "Name: " (a bridged or imported turn), else `partner`, else the user."""
        from hologram.memory.graph.extract import speaker_of

        if seq <= self._seen or not text.strip():
            return None
        speaker, text = speaker_of(text, partner or "user")
        if not tells(text):
            return None
        keys, corrected = keyed(text, speaker)
        if not keys:
            return None
        earlier = [self._keys[k] for k in corrected if k in self._keys]
        superseded = max(earlier) if earlier else None
        self._remember(seq, keys, superseded)
        self._write(seq, keys, superseded)
        return superseded

    def _write(self, seq: int, keys: Iterable[str], superseded: int | None) -> None:
        if self.path is None:
            return
        row: dict[str, object] = {"s": seq, "k": sorted(keys)}
        if superseded is not None:
            row["by"] = superseded
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if self._lines > 4 * (len(self._keys) + len(self.superseded)) + 64:
                self._compact()
            with self.path.open("a", encoding="utf-8") as f:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
            self._lines += 1
        except OSError as exc:
            log.warning("%s cannot be written (%s); this correction is ranked until the session is released",
                        self.path, exc)  # fmt: skip

    def _compact(self) -> None:
        """Rewrite the file with what is live (a key's latest statement, the pairs)."""
        assert self.path is not None
        by_seq: dict[int, list[str]] = {}
        for key, seq in self._keys.items():
            by_seq.setdefault(seq, []).append(key)
        rows = [{"s": s, "k": k} for s, k in sorted(by_seq.items())]
        rows += [{"s": later, "k": [], "by": earlier} for earlier, later in self.superseded.items()]
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        tmp.replace(self.path)
        self._lines = len(rows)

    def lift(self, scores: np.ndarray, position_of_seq: Callable[[int], int | None]) -> np.ndarray:
        """`scores` (one per indexed event) with each correction put just above the statement it supersedes
        when that one scores higher: the correction outranks it, and comes wherever the earlier would."""
        if not self.superseded or scores.size == 0:
            return scores
        # only a statement that clearly matches the input (the bar L2 must pass to be recalled): lifting the
        # correction of one that matches weakly spends the budget on it (a false pair, "手机换了个新壳" twice,
        # cost a Chinese fact)
        from hologram.memory.cold.recall import AUTO_RECALL_MIN_SCORE as top

        out = scores
        for earlier, later in self.superseded.items():
            a, b = position_of_seq(earlier), position_of_seq(later)
            if a is None or b is None or a >= out.size or b >= out.size or out[b] > scores[a] or scores[a] < top:
                continue
            if out is scores:
                out = scores.copy()
            out[b] = scores[a] + _ABOVE  # the earlier's own score: a chain of pairs does not carry one score along
        return out

    def superseded_seqs(self, seqs: Sequence[int]) -> frozenset[int]:
        """Those of `seqs` a later statement corrects."""
        return frozenset(s for s in seqs if s in self.superseded)
