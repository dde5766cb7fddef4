"""The compact segmenter (hologram.memory.text.segment) against jieba, side by side in one run.

    .venv/bin/python tools/bench/segment.py [--synthetic 30000] [--seed 1] [--rounds 3]

Prints, for jieba 0.42 and for the compact segmenter:

1. memory and load time, each in a fresh interpreter: RSS at start, after the import and after the load;
   the import's wall time and the load's wall and CPU time (with the CPU of a child that builds the cache).
   jieba is measured cold (no jieba.cache) and with its cache (the kernel's case: the file in /tmp it
   writes on its first start); the segmenter cold (no cache file: built in a child process), with its
   cache, and without any cache directory (built in memory). The segmenter's module is loaded from its
   file, so the hologram package (numpy, onnxruntime...) is not in its numbers; "in the kernel" repeats
   both loads after `import hologram.memory`, which the kernel does anyway;
2. throughput in chars per CPU second of lcut and lcut_for_search on the written corpus
   (tests/data/zh_corpus.txt) and the synthetic one, best of --rounds alternating rounds (the machine may be
   shared: the ratio is the number to read);
3. exactness: on how many texts of each corpus, and of the texts decided by jieba's tie-breaks, both calls
   return exactly jieba's tokens.

The corpora are also what tests/memory/test_segment.py asserts on (it imports them from here).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from importlib import util
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
WRITTEN = ROOT / "tests" / "data" / "zh_corpus.txt"
SEGMENT_PY = ROOT / "framework" / "hologram" / "memory" / "segment.py"


def written_corpus(path: Path = WRITTEN) -> list[str]:
    """The written sentences: one per line, without comment and empty lines."""
    lines = path.read_text(encoding="utf-8").split("\n")
    return [line for line in lines if line.strip() and not line.startswith("#")]


def dictionary() -> list[tuple[str, int]]:
    """(word, frequency) for every line of the installed jieba's dict.txt, in file order."""
    spec = util.find_spec("jieba")
    assert spec is not None and spec.submodule_search_locations
    path = Path(next(iter(spec.submodule_search_locations))) / "dict.txt"
    with open(path, "rb") as f:
        return [(word.decode("utf-8"), int(freq)) for word, freq, *_ in (line.split() for line in f)]


# Pieces of the synthetic texts, chosen for the paths of jieba's algorithm: the block regex's characters
# (+#&._%-), its \s split (\r\n as one unit), finalseg's number pattern (12.5%), Han characters without HMM
# emissions (ties in the Viterbi) and ones just outside the block range, other scripts, emoji sequences.
_HAN_RARE = "".join(chr(c) for c in range(0x9FA6, 0x9FD6))  # in the block range, mostly not in the HMM tables
_OUTSIDE = "\u9fd6\u9fea\u9fff\u3400\u4db5\uf900\ufa2d\U00020000\U0002a6a5〇"  # Han that is not in a block
_LATIN = ["iPhone", "Python", "AI", "GDP", "ok", "the", "Wi", "Fi", "USB", "C", "x", "B", "T", "AA", "CD", "NBA"]
_SYMBOLS = list("+#&._%-")
_PUNCT = list("，。！？、；：“”‘’（）《》【】…—·,.!?;:'\"()[]{}<>/\\|@$^*=~`￥·")
_SPACE = [" ", " ", "  ", "\t", "\n", "\r\n", "\r", "\u3000", "\xa0", "\x0b", "\x0c", "\u2028", "\u200b"]
_OTHER = ["😊", "🎉", "❤️", "👍🏻", "👨‍👩‍👧", "🇨🇳", "ℹ️", "の", "カタカナ", "한국어", "Ελλάδα", "ＡＢＣ", "１２３", "ﬁ"]


def synthetic_corpus(n: int, seed: int, entries: Sequence[tuple[str, int]] | None = None) -> list[str]:
    """`n` seeded random texts of 1-40 pieces: dictionary words (any, and frequent ones), single characters,
    numbers, Latin words, symbols, punctuation, whitespace and other scripts. Same arguments, same texts."""
    rng = random.Random(seed)
    entries = dictionary() if entries is None else entries
    vocab = [word for word, _ in entries]
    common = [word for word, freq in entries if freq >= 1000]
    han_chars = [word for word in vocab if len(word) == 1]

    def number() -> str:
        digits = str(rng.randint(0, 10 ** rng.randint(1, 6)))
        kind = rng.random()
        if kind < 0.3:
            return f"{digits}.{rng.randint(0, 99)}"
        if kind < 0.45:
            return f"{digits}%"
        if kind < 0.55:
            return f"{digits}.{rng.randint(0, 9)}%"
        return digits

    makers: list[tuple[float, Callable[[], str]]] = [
        (30, lambda: rng.choice(vocab)),
        (12, lambda: rng.choice(common)),
        (10, lambda: rng.choice(han_chars)),
        (8, lambda: chr(rng.randint(0x4E00, 0x9FD5))),
        (3, lambda: "".join(rng.choice(_HAN_RARE) for _ in range(rng.randint(1, 6)))),
        (2, lambda: rng.choice(_OUTSIDE)),
        (6, number),
        (5, lambda: rng.choice(_LATIN) if rng.random() < 0.7 else _latin_word(rng)),
        (3, lambda: rng.choice(_SYMBOLS)),
        (7, lambda: rng.choice(_PUNCT)),
        (5, lambda: rng.choice(_SPACE)),
        (2, lambda: rng.choice(_OTHER)),
    ]
    weights = [w for w, _ in makers]
    texts = []
    for _ in range(n):
        count = rng.randint(1, 40)
        texts.append("".join(make() for make in rng.choices([m for _, m in makers], weights, k=count)))
    return texts


def tie_corpus(jieba: Any, seed: int = 1, hmm_candidates: int = 6000) -> dict[str, list[str]]:
    """Texts on which one of jieba's tie-breaks decides its tokens, by rule; `jieba` is the loaded module.

    Exact ties are rare in running text (one position in the first 5,000 synthetic texts, and there it did
    not change the route), so without these a segmenter that broke ties the other way would still pass.

    * ``calc``: the route. At the end of a block P+QR and PQ+R score log f(P) + log f(QR) and
      log f(PQ) + log f(R), one sum in two orders, equal when f(P) = f(R) and f(PQ) = f(QR) (一一一, 上框上
      ...); jieba keeps the longer first word (its max over (logprob, end) tuples prefers the later end).
      Every such text in dict.txt whose route the tie decides, found by replaying calc with jieba's FREQ.
    * ``B``, ``M``, ``E``, ``S``, ``final``: the Viterbi's choice of a predecessor for each state and of the
      last state, where -3.14e100 (an emission not in the tables) absorbs everything added to it. Seeded
      random runs of characters that start no dictionary word (so jieba hands the whole run to the HMM)
      whose cut changes when that one rule breaks its ties the other way, by a replay of finalseg.viterbi.
    """
    freq: dict[str, int] = jieba.dt.FREQ
    log_total = math.log(jieba.dt.total)

    def route(text: str, later_wins: bool) -> list[int]:
        dag, score, choice = jieba.get_DAG(text), [0.0] * (len(text) + 1), [0] * len(text)
        for k in range(len(text) - 1, -1, -1):
            best = None
            for x in dag[k]:
                p = math.log(freq.get(text[k : x + 1]) or 1) - log_total + score[x + 1]
                if best is None or p > best or (later_wins and p == best):
                    best, choice[k] = p, x
            assert best is not None
            score[k] = best
        return choice

    out: dict[str, list[str]] = {"calc": []}
    pairs: dict[tuple[str, int], list[str]] = {}
    for word, f in freq.items():
        if f and len(word) == 2 and freq.get(word[1]):
            pairs.setdefault((word[0], f), []).append(word)
    for (_, f), words in sorted(pairs.items()):
        for pq in words:
            for qr in pairs.get((pq[1], f), ()):
                text = pq + qr[1]
                if freq.get(pq[0]) == freq.get(qr[1]) and route(text, True) != route(text, False):
                    out["calc"].append(text)

    hmm = jieba.finalseg
    floor = hmm.MIN_FLOAT

    def viterbi(obs: str, flipped: str) -> str:
        """finalseg.viterbi, except that the rule `flipped` resolves a tie to the earlier state letter."""

        def pick(candidates: list[tuple[float, str]], rule: str) -> tuple[float, str]:
            return max(candidates, key=lambda c: (c[0], -ord(c[1]))) if rule == flipped else max(candidates)

        v = {y: hmm.start_P[y] + hmm.emit_P[y].get(obs[0], floor) for y in "BMES"}
        path = {y: y for y in "BMES"}
        for ch in obs[1:]:
            nv, npath = {}, {}
            for y in "BMES":
                em = hmm.emit_P[y].get(ch, floor)
                prob, prev = pick([(v[y0] + hmm.trans_P[y0].get(y, floor) + em, y0) for y0 in hmm.PrevStatus[y]], y)
                nv[y], npath[y] = prob, path[prev] + y
            v, path = nv, npath
        return path[pick([(v[y], y) for y in "ES"], "final")[1]]

    def cut(obs: str, states: str) -> list[str]:  # finalseg.__cut
        words, begin, nexti = [], 0, 0
        for i, state in enumerate(states):
            if state == "B":
                begin = i
            elif state == "E":
                words.append(obs[begin : i + 1])
                nexti = i + 1
            elif state == "S":
                words.append(obs[i])
                nexti = i + 1
        return [*words, obs[nexti:]] if nexti < len(obs) else words

    starts = {word[0] for word, f in freq.items() if f}
    pool = [chr(c) for c in range(0x4E00, 0x9FD6) if chr(c) not in starts]
    rng = random.Random(seed)
    rules = ("B", "M", "E", "S", "final")
    out.update({rule: [] for rule in rules})
    for _ in range(hmm_candidates):
        obs = "".join(rng.choice(pool) for _ in range(rng.randint(2, 6)))
        expected = cut(obs, viterbi(obs, ""))
        for rule in rules:
            if cut(obs, viterbi(obs, rule)) != expected:
                out[rule].append(obs)
    return out


def _latin_word(rng: random.Random) -> str:
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    return "".join(rng.choice(letters) for _ in range(rng.randint(1, 8)))


# --- memory and load time, each in a fresh interpreter ---------------------------------------------------

_PROBE = r"""
import json, os, sys, time

def rss():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024

which, pre, arg = sys.argv[1], sys.argv[2], sys.argv[3]
if pre == "kernel":
    import hologram.memory  # what the kernel has imported anyway
out = {"start": rss()}
t0, c0 = time.perf_counter(), time.process_time()
if which == "jieba":
    import jieba
    jieba.setLogLevel(60)
    if arg:
        jieba.dt.tmp_dir = arg
    out["import"] = rss()
    t1, c1, k1 = time.perf_counter(), time.process_time(), os.times()
    jieba.initialize()
    words = jieba.lcut("我们在北京清华大学见面")
else:
    from importlib import util
    from pathlib import Path
    spec = util.spec_from_file_location("segment", sys.argv[4])
    segment = util.module_from_spec(spec)
    sys.modules["segment"] = segment
    spec.loader.exec_module(segment)
    out["import"] = rss()
    t1, c1, k1 = time.perf_counter(), time.process_time(), os.times()
    seg = segment.load_segmenter(Path(arg)) if arg else segment.load_segmenter(use_cache=False)
    words = seg.lcut("我们在北京清华大学见面")
out["load_s"] = time.perf_counter() - t1
k2 = os.times()  # with the cache builder's CPU when a child built it
children = k2.children_user - k1.children_user + k2.children_system - k1.children_system
out["load_cpu_s"] = time.process_time() - c1 + children
out["import_s"] = t1 - t0
out["loaded"] = rss()
print(json.dumps(out))
"""


def probe(which: str, pre: str, arg: str) -> dict[str, float]:
    cmd = [sys.executable, "-c", _PROBE, which, pre, arg, str(SEGMENT_PY)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def memory_table() -> list[tuple[str, dict[str, float]]]:
    rows: list[tuple[str, dict[str, float]]] = []
    with tempfile.TemporaryDirectory() as tmp:
        jieba_tmp, seg_cache = os.path.join(tmp, "jieba"), os.path.join(tmp, "cache")
        os.mkdir(jieba_tmp)
        rows.append(("jieba, cold (no jieba.cache)", probe("jieba", "", jieba_tmp)))
        rows.append(("jieba, with its cache", probe("jieba", "", jieba_tmp)))
        rows.append(("segment, cold (builds its cache)", probe("segment", "", seg_cache)))
        rows.append(("segment, with its cache", probe("segment", "", seg_cache)))
        rows.append(("segment, no cache dir (in memory)", probe("segment", "", "")))
        rows.append(("jieba in the kernel, with its cache", probe("jieba", "kernel", jieba_tmp)))
        rows.append(("segment in the kernel, with its cache", probe("segment", "kernel", seg_cache)))
    return rows


# --- throughput and exactness ----------------------------------------------------------------------------


def cpu_time(fn: Callable[[str], Any], texts: Sequence[str]) -> float:
    """CPU seconds for `fn` over `texts`: on a shared host, wall time mostly measures the neighbours."""
    start = time.process_time()
    for text in texts:
        fn(text)
    return time.process_time() - start


def exact_counts(seg: Any, jieba: Any, texts: Sequence[str]) -> tuple[int, int, int]:
    """(texts equal under lcut, texts equal under lcut_for_search, tokens compared)."""
    same_cut = same_search = tokens = 0
    for text in texts:
        expected = jieba.lcut(text)
        same_cut += seg.lcut(text) == expected
        expected_search = jieba.lcut_for_search(text)
        same_search += seg.lcut_for_search(text) == expected_search
        tokens += len(expected) + len(expected_search)
    return same_cut, same_search, tokens


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--synthetic", type=int, default=30000, help="number of synthetic texts")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3, help="throughput rounds (best of)")
    args = ap.parse_args(argv)

    print("memory and load, each in a fresh interpreter (MB RSS; seconds)")
    print(f"  {'':40} {'start':>6} {'import':>6} {'loaded':>6} {'delta':>6}  {'import':>6} {'load':>6} {'cpu':>6}")
    for name, row in memory_table():
        print(
            f"  {name:40} {row['start']:6.1f} {row['import']:6.1f} {row['loaded']:6.1f} "
            f"{row['loaded'] - row['start']:6.1f}  {row['import_s']:6.3f} {row['load_s']:6.3f} {row['load_cpu_s']:6.3f}"
        )

    import jieba

    jieba.setLogLevel(60)
    jieba.initialize()
    spec = util.spec_from_file_location("segment", SEGMENT_PY)
    assert spec is not None and spec.loader is not None
    segment = util.module_from_spec(spec)
    sys.modules["segment"] = segment
    spec.loader.exec_module(segment)
    seg = segment.load_segmenter()

    corpora = {
        "written": written_corpus(),
        f"synthetic ({args.synthetic}, seed {args.seed})": synthetic_corpus(args.synthetic, args.seed),
    }
    print(f"\nthroughput (chars per CPU second, best of {args.rounds} alternating rounds)")
    print(f"  {'corpus':34} {'call':16} {'jieba':>11} {'segment':>11} {'ratio':>7}")
    for label, texts in corpora.items():
        chars = sum(map(len, texts))
        for call in ("lcut", "lcut_for_search"):
            ours_fn, theirs_fn = getattr(seg, call), getattr(jieba, call)
            ours = theirs = float("inf")
            for _ in range(args.rounds):
                theirs = min(theirs, cpu_time(theirs_fn, texts))
                ours = min(ours, cpu_time(ours_fn, texts))
            print(f"  {label:34} {call:16} {chars / theirs:11,.0f} {chars / ours:11,.0f} {theirs / ours:6.2f}x")

    ties = tie_corpus(jieba, args.seed)
    corpora["tie cases (" + ", ".join(f"{rule} {len(texts)}" for rule, texts in ties.items()) + ")"] = sorted(
        {text for texts in ties.values() for text in texts}
    )
    print("\nexactness (texts whose tokens equal jieba's)")
    for label, texts in corpora.items():
        cut, search, tokens = exact_counts(seg, jieba, texts)
        print(f"  {label:34} lcut {cut}/{len(texts)}, lcut_for_search {search}/{len(texts)} ({tokens:,} tokens)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
