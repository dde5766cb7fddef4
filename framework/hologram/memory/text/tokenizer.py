"""Terms for lexical (TF-IDF/BM25) scoring, for Chinese and every other script.

Chinese has no spaces, so words come from jieba's search mode (which also emits the sub-words of long
compounds: 北京大学 → 北京, 大学, 北京大学, which is what recall wants), computed by
:mod:`hologram.memory.text.segment`: the same tokens as ``jieba.lcut_for_search``, token for token, from a compact
form of jieba's data (~4.5 MB in the kernel and ~20 ms to load from its cache, where jieba costs ~80 MB and
~1.6-3 s). The tokens are identical, so the analyzer tag names the segmenter ``"jieba"`` (with the English
stemmer: ``"jieba+snowball"``). The load still happens once, in a daemon thread, started by :func:`warm_up`
(the kernel calls it at start-up) or by the first text that contains Han characters: the first start after
installing builds the cache (seconds), and a reply never waits for that. Until it is ready Han runs are split
into overlapping character bigrams (plus single characters), the classic segmentation-free indexing for
Chinese, and the result is tagged with analyzer ``"cjk-bigram+snowball"`` so that a store can re-analyse those
few events later if it cares. :func:`word_tag` gives dict.txt's part of speech of a dictionary word (nr person,
ns place, t time, m numeral ...), so callers can spot names and dates without loading ``jieba.posseg``.

`hologram up` holds the warm-up (:func:`hold_warm_up`) until its first answer: the load's GIL time would be
paid by that answer, which needs no segmenter when the text is not Chinese. While held, Han text loads the
segmenter on demand and waits for it (milliseconds from the cache) instead of falling back to bigrams, so a
Chinese first turn still gets jieba's tokens; :func:`ensure_segmenter` does the same for a turn's input, off
the event loop, even while a background load is under way.

Other scripts: lower-cased Unicode word runs (``\\w+``), a small English stop-word list and the Snowball
English stemmer (the reference implementation, ``snowballstemmer``): "painted", "painting" and "paints" meet
"paint". It replaced a plural-only stemmer: measured on LoCoMo's stream protocol at 4k, evidence in context
0.914 -> 0.919 on the dev split and 0.895 -> 0.905 held out — questions paraphrase their evidence's verbs.
Stored term vectors with an older tag are re-derived from their text (``ColdStore``'s index build).
"""

from __future__ import annotations

import importlib.util
import logging
import re
import sys
import threading
import types
from typing import TYPE_CHECKING, Any

from hologram.memory.text.tokens import CJK_RE

if TYPE_CHECKING:
    from hologram.memory.text.segment import Segmenter

__all__ = [
    "ANALYZER_BIGRAM",
    "ANALYZER_JIEBA",
    "CURRENT_ANALYZERS",
    "ensure_segmenter",
    "hold_warm_up",
    "jieba_ready",
    "needs_segmenter",
    "release_warm_up",
    "tokenize",
    "tokenize_tagged",
    "wait_for_jieba",
    "wait_if_loading",
    "warm_up",
    "word_tag",
]

ANALYZER_JIEBA = "jieba+snowball"
ANALYZER_BIGRAM = "cjk-bigram+snowball"
#: The tags term vectors made by this module carry; a stored vector with another tag is stale.
CURRENT_ANALYZERS = frozenset({ANALYZER_JIEBA, ANALYZER_BIGRAM})

_HAN_RUN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_OTHER_CJK_RUN = re.compile("[\u3040-\u30ff\uac00-\ud7af]+")  # kana, hangul: bigrams always
_WORD = re.compile(r"\w+", re.UNICODE)

# Function words that carry no topical signal; IDF would mostly discount them anyway, but dropping them
# keeps query term lists short (prune latency) and stops "the"/"did" from contributing noise to fusion.
_STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "if",
        "of",
        "to",
        "in",
        "on",
        "at",
        "by",
        "for",
        "with",
        "from",
        "as",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "am",
        "do",
        "does",
        "did",
        "doing",
        "have",
        "has",
        "had",
        "having",
        "i",
        "me",
        "my",
        "mine",
        "we",
        "us",
        "our",
        "you",
        "your",
        "he",
        "him",
        "his",
        "she",
        "her",
        "it",
        "its",
        "they",
        "them",
        "their",
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "this",
        "that",
        "these",
        "those",
        "there",
        "here",
        "then",
        "than",
        "so",
        "such",
        "not",
        "no",
        "nor",
        "too",
        "very",
        "can",
        "could",
        "will",
        "would",
        "shall",
        "should",
        "may",
        "might",
        "must",
        "just",
        "also",
        "about",
        "into",
        "over",
        "under",
        "again",
        "further",
        "once",
        "how",
        "when",
        "where",
        "why",
        "all",
        "any",
        "both",
        "each",
        "few",
        "more",
        "most",
        "other",
        "some",
        "own",
        "same",
        "s",
        "t",
        "don",
        "now",
        "ll",
        "re",
        "ve",
        "d",
        "m",
        "o",
        "y",
    ]
)
_CJK_STOP = frozenset(
    [
        "的",
        "了",
        "是",
        "在",
        "和",
        "也",
        "就",
        "都",
        "而",
        "及",
        "与",
        "着",
        "或",
        "一个",
        "没有",
        "我们",
        "你们",
        "他们",
        "吗",
        "呢",
        "吧",
        "啊",
        "，",
        "。",
        "？",
        "！",
        "、",
    ]
)

_log = logging.getLogger(__name__)
_lock = threading.Lock()
_ready = threading.Event()
_thread: threading.Thread | None = None
_segmenter: Segmenter | None = None
_held = False  # `hold_warm_up`: warm_up() only notes the request until `release_warm_up`
_requested = False  # warm_up() was called while held
#: The longest a text waits for an on-demand load (the first start after installing builds the cache: seconds).
ON_DEMAND_WAIT_S = 60.0


def _load() -> None:
    global _segmenter
    try:
        from hologram.memory.text.segment import load_segmenter  # here, so a broken install cannot fail the import

        _segmenter = load_segmenter()
    except Exception:  # a broken or missing jieba must not take the kernel down: bigrams keep working
        _log.warning("jieba's data unavailable; Chinese text is indexed by character bigrams", exc_info=True)
    finally:
        _ready.set()


def warm_up() -> None:
    """Start loading the segmenter in a background thread (idempotent, returns at once); while the warm-up is
    held, only note that it was asked for (:func:`release_warm_up` starts it then)."""
    global _requested
    with _lock:
        if _held:
            _requested = True
            return
        _start_locked()


def _start_locked() -> None:
    global _thread
    if _thread is None:
        _thread = threading.Thread(target=_load, name="hologram-jieba-load", daemon=True)
        _thread.start()


def hold_warm_up() -> None:
    """Defer :func:`warm_up` until :func:`release_warm_up` (`hologram up`, until its first answer). Han text that
    arrives meanwhile does not wait for the release: it loads the segmenter on demand (:func:`tokenize_tagged`)."""
    global _held
    with _lock:
        _held = True


def release_warm_up() -> None:
    """End :func:`hold_warm_up`; start the load if :func:`warm_up` was asked for meanwhile (idempotent)."""
    global _held, _requested
    with _lock:
        _held = False
        if _requested:
            _requested = False
            _start_locked()


def needs_segmenter(text: str) -> bool:
    """True if `text` has a Han run and the segmenter is not loaded yet: analysing it now would give bigrams."""
    return not (_ready.is_set() and _segmenter is not None) and _HAN_RUN.search(text) is not None


def ensure_segmenter(timeout: float | None = ON_DEMAND_WAIT_S) -> bool:
    """Load the segmenter now if no load was begun, held or not, and wait for it (up to `timeout`); True if
    Han text will get jieba's tokens. For a turn whose input is Chinese (it calls this off the event loop),
    batch jobs and tests — it blocks."""
    with _lock:
        _start_locked()
    _ready.wait(timeout)
    return jieba_ready()


def jieba_ready() -> bool:
    """True once the segmenter is loaded and will be used for Han text."""
    return _ready.is_set() and _segmenter is not None


def wait_for_jieba(timeout: float | None = None) -> bool:
    """Block until the background load finished (for tests, benchmarks and batch jobs, never a reply)."""
    return ensure_segmenter(timeout)


def wait_if_loading(timeout: float | None = None) -> None:
    """Block until a background load that was started has finished; return at once if none was."""
    if _thread is not None:
        _ready.wait(timeout)


def loaded_segmenter(timeout: float | None = 60.0) -> Segmenter | None:
    """The loaded segmenter (waiting up to `timeout` for the background load), or None without jieba's data.
    For batch jobs that need more than terms — the L3 extractor reads words with their tags."""
    wait_for_jieba(timeout)
    return _segmenter if _ready.is_set() else None


def word_tag(word: str) -> str | None:
    """dict.txt's part-of-speech tag of a dictionary word (nr, ns, nt, nz, t, m ...), else None.

    Never blocks: None also while the segmenter is loading (the load is started, as Han text would).
    """
    segmenter = _segmenter
    if segmenter is None or not _ready.is_set():
        warm_up()
        return None
    return segmenter.tag(word)


def _english_stemmer() -> Any:
    """snowballstemmer's EnglishStemmer, loaded without the package's ``__init__``, which imports all 33
    languages' stemmers (+2.9 MB PSS and ~20 ms in the kernel for the one used; tools/bench/footprint.py).
    The modules load under a private package name whose path is the installed package's, so the same code
    stems (identical stems) and a later ``import snowballstemmer`` elsewhere is unaffected."""
    spec = importlib.util.find_spec("snowballstemmer")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("snowballstemmer is not installed (pip install snowballstemmer)")
    name = "_hologram_snowball"
    if name not in sys.modules:
        package = types.ModuleType(name)
        package.__path__ = list(spec.submodule_search_locations)
        sys.modules[name] = package
    return importlib.import_module(f"{name}.english_stemmer").EnglishStemmer()


_ENGLISH = _english_stemmer()


class _StemCache:
    """Stems of recently seen words, at most ``2 * size`` of them: two generations of ``size`` each.

    Why a cache: Snowball is pure Python (~20-170 µs a word), and every text the kernel scores is tokenized
    again, so the same few thousand words come back all the time. Why bounded: an ``lru_cache(100_000)``
    here filled with every new word a long session ever saw (numbers, names, ids): ~25 MB of kernel memory
    held for good after 100k distinct words (tools/bench/sweep.py --soak). Why two generations and not
    clear-on-full: when the young one fills it becomes the old one, and a word found there moves back, so a
    conversation's working vocabulary survives the turnover instead of being stemmed again all at once.
    The stemmer object keeps its state between calls (``current``, ``cursor``), so a miss stems under a lock;
    hits take no lock (a dict read is atomic).
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self.young: dict[str, str] = {}
        self.old: dict[str, str] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.young) + len(self.old)

    def __call__(self, word: str) -> str:
        stem = self.young.get(word)
        if stem is not None:
            return stem
        stem = self.old.get(word)
        if stem is None:
            with self._lock:
                stem = str(_ENGLISH.stemWord(word))
        young = self.young
        if len(young) >= self.size:
            self.old, self.young = young, {}
            young = self.young
        young[word] = stem
        return stem


#: The Snowball English stem of a lower-cased word (module docstring), from a bounded cache.
_stem = _StemCache(4096)


def _bigrams(run: str) -> list[str]:
    if len(run) == 1:
        return [run]
    return list(run) + [run[i : i + 2] for i in range(len(run) - 1)]


def _words(segment: str) -> list[str]:
    out: list[str] = []
    for match in _WORD.finditer(segment.lower()):
        word = match.group()
        if word in _STOP:
            continue
        # a number is its own stem: it skips the cache, where a long session's new numbers (dates, amounts,
        # ids: one a turn in the soak) would fill the bounded cache long after start-up, as memory growth
        out.append(word if word.isdigit() else _stem(word))
    return out


def tokenize_tagged(text: str) -> tuple[list[str], str]:
    """Split `text` into index terms; return them with the analyzer used for Han runs.

    Never blocks on a background load: if Han text arrives while the segmenter is loading (or before anything
    asked for it), the load is started and this text is analysed with bigrams (tag ``"cjk-bigram"``). While
    the warm-up is held (:func:`hold_warm_up`) and no load was begun, the text loads it on demand and waits
    (milliseconds from the cache): the hold defers the load's cost, never Chinese segmentation.
    """
    terms: list[str] = []
    analyzer = ANALYZER_JIEBA
    if CJK_RE.search(text) is None:  # the common case: no CJK at all
        return _words(text), analyzer
    pos = 0

    han_runs = list(_HAN_RUN.finditer(text))
    segmenter = _segmenter if _ready.is_set() else None
    if han_runs and segmenter is None:
        if _held and _thread is None:  # deferred, not under way: load it for this text
            ensure_segmenter()
            segmenter = _segmenter if _ready.is_set() else None
        else:
            warm_up()
    if han_runs and segmenter is None:
        analyzer = ANALYZER_BIGRAM
    for run in han_runs:
        terms.extend(_words_other_cjk(text[pos : run.start()]))
        pos = run.end()
        if segmenter is not None:
            terms.extend(w for w in segmenter.lcut_for_search(run.group()) if w not in _CJK_STOP)
        else:
            terms.extend(w for w in _bigrams(run.group()) if w not in _CJK_STOP)
    terms.extend(_words_other_cjk(text[pos:]))
    return terms, analyzer


def _words_other_cjk(segment: str) -> list[str]:
    """Words of a segment without Han characters: kana/hangul runs as bigrams, the rest as words."""
    out: list[str] = []
    pos = 0
    for run in _OTHER_CJK_RUN.finditer(segment):
        out.extend(_words(segment[pos : run.start()]))
        out.extend(_bigrams(run.group()))
        pos = run.end()
    out.extend(_words(segment[pos:]))
    return out


def tokenize(text: str) -> list[str]:
    """Index terms of `text` (see :func:`tokenize_tagged`)."""
    return tokenize_tagged(text)[0]
