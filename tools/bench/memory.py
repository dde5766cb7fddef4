"""Evidence-recall benchmark of memory pruning on LoCoMo, plus a synthetic scale test.

    .venv/bin/python tools/bench/memory.py LOCOMO [--budgets 2000,4000,8000] [--no-scale]
    .venv/bin/python tools/bench/memory.py LOCOMO --protocol stream --l3 [--only 26,30,41] --no-scale
    .venv/bin/python tools/bench/memory.py --cross [--window 4000] [--sessions 100]   (memory_cross.py)
    .venv/bin/python tools/bench/memory.py --protocol paraphrase [--embedder e5] --no-scale

LOCOMO is the LoCoMo benchmark (Maharana et al., ACL 2024, "Evaluating Very Long-Term Conversational Memory
of LLM Agents"): 10 long conversations with questions and their evidence turns, published by its authors
for research evaluation at https://github.com/snap-research/locomo (``data/locomo10.json``, or the
``data/locomo10.zip`` that holds it; the repository ships no licence file, so it is not redistributed here).
Give that file, the zip, or a directory of one JSON file per conversation.

Each conversation is streamed turn by turn into a store (event with "speaker: text", tokens ~ chars/4, dense
vector, lexical vector, incremental IDF). Every question of categories 1-4 is then asked after the whole
conversation: history is pruned to each budget against the question (10 most recent turns pinned) and
*evidence recall* = share of the question's evidence turns still kept, averaged over questions. Every
method goes through the same ``prune()`` (same pinning, grouping and budget rules); only the scorer differs:

* truncation — newest first; BM25 — textbook Okapi BM25 implemented here, independent of ours
  (k1=1.5, b=0.75, lower-cased word tokens); dense — USE cosine; RRF — reciprocal-rank fusion (k=60) of the
  two; ours — ``HybridScorer`` (z-score fusion + neighbour smoothing, see docs/memory.md).

Hyperparameters of ours were fixed on principle and checked on a dev split (conversations 26, 30, 41); the
held-out column is the other seven conversations. Embeddings are cached in a temp dir between runs.

Cold context (L2): the question is run as a ``coldcontext_query`` search (``ColdIndex.top``, the ranking
``ColdStore.search`` uses; SQLite only stores) over an L2 made two ways: *stream* — the conversation was pruned
against its latest turn as it arrived, L2 is what that moved out (the situation the tool exists for: the
question comes later and its evidence was pruned for other reasons); *same* — L2 is what pruning against this
very question moved out (the scorer's own residue: by construction it ranks those turns low again).
cold@k = share of the question's evidence turns in L2 found in the top k, over questions with any; "L1+cold@k"
= share of all evidence turns either in L1 or found.

Scale (``--no-scale`` skips): prune of a 1,000-event session; a real on-disk ``ColdStore`` with 100k synthetic
events (Zipfian vocabulary, 512-d vectors): put, reopen + index build and ``search`` latency, lexical + dense;
``--fts5`` adds the SQLite FTS5 ``bm25()`` alternative for the lexical half on the same documents.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import statistics
import sys
import tempfile
import time
import zipfile
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from memory_stream import CachedEmbedder, StreamTurn, report, report_l3, run_stream, run_stream_l3, session_times

from hologram.memory.cold.blocks import EventRecord, build_event
from hologram.memory.cold.coldindex import ColdIndex, IndexEntry
from hologram.memory.cold.store import ColdStore
from hologram.memory.embed.embedder import BUILDS, EMBEDDERS, Embedder, load_embedder, preference
from hologram.memory.embed.vectors import DenseVector
from hologram.memory.rank.events import MemoryEvent, Query, make_event
from hologram.memory.rank.prune import prune
from hologram.memory.rank.score import HybridScorer, Scorer, dense_scores
from hologram.memory.text.tfidf import TermVector, TfidfIndex

DEV_SPLIT = frozenset({"26", "30", "41"})
ScoreFn = Scorer


# ---------------------------------------------------------------- data


@dataclass
class Question:
    text: str
    evidence: list[str]
    category: int


@dataclass
class Conversation:
    name: str
    turns: list[tuple[str, str]]  # (dia_id, "speaker: text")
    questions: list[Question]
    times: list[float] = field(default_factory=list)  # per turn: its session's date + a minute per turn


def _norm_evidence(raw: Sequence[str], known: set[str]) -> list[str]:
    """Evidence ids as turn ids; the data has a few malformed lists ("D8:6; D9:17", "D:11:26", "D30:05")."""
    out: set[str] = set()
    for item in raw:
        for part in re.split(r"[;,\s]+", str(item)):
            m = re.fullmatch(r"D:?(\d+):0*(\d+)", part.strip())
            if m and f"D{m.group(1)}:{m.group(2)}" in known:
                out.add(f"D{m.group(1)}:{m.group(2)}")
    return sorted(out)


def _documents(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """(name, conversation) pairs from any of the shapes LoCoMo comes in:

    * the public release (github.com/snap-research/locomo, ``data/locomo10.json``, or the ``.zip`` with it):
      a JSON list of ``{"sample_id": "conv-26", "conversation": {...}, "qa": [...]}``;
    * a directory of one JSON file per conversation, the conversation's keys at the top (``26.json``).
    """
    if path.is_dir():
        files = sorted(path.glob("*.json"))
        if not files:
            raise SystemExit(f"{path}: no *.json files; give the LoCoMo directory, locomo10.json or locomo10.zip")
        return [(f.stem, json.loads(f.read_text(encoding="utf-8"))) for f in files]
    if path.suffix == ".zip":
        with zipfile.ZipFile(path) as archive:
            name = next((n for n in archive.namelist() if n.endswith(".json")), None)
            if name is None:
                raise SystemExit(f"{path}: no JSON file inside")
            data = json.loads(archive.read(name))
    elif path.is_file():
        data = json.loads(path.read_text(encoding="utf-8"))
    else:
        raise SystemExit(f"{path}: not found; see --help for where LoCoMo comes from")
    if not isinstance(data, list):
        raise SystemExit(f"{path}: expected a JSON list of conversations (locomo10.json)")
    return [
        (str(item.get("sample_id", i)).removeprefix("conv-"), {**item["conversation"], "qa": item.get("qa", [])})
        for i, item in enumerate(data)
    ]


def load_locomo(path: Path) -> list[Conversation]:
    convs = []
    for name, doc in _documents(path):
        sessions = sorted(int(m.group(1)) for k in doc if (m := re.fullmatch(r"session_(\d+)", k)))
        turns = [(t["dia_id"], f"{t['speaker']}: {t['text']}") for s in sessions for t in doc[f"session_{s}"]]
        starts = session_times(doc)
        times = [starts.get(s, 0.0) + 60.0 * i for s in sessions for i, _ in enumerate(doc[f"session_{s}"])]
        known = {tid for tid, _ in turns}
        qs = []
        for q in doc["qa"]:
            if q.get("category") not in (1, 2, 3, 4):
                continue
            ev = _norm_evidence(q.get("evidence", []), known)
            if ev:  # a question without resolvable evidence cannot be scored
                qs.append(Question(q["question"], ev, int(q["category"])))
        convs.append(Conversation(name, turns, qs, times))
    return convs


# ---------------------------------------------------------------- embeddings (cached)


def embed_cached(embedder: Embedder, texts: list[str], cache_dir: Path) -> np.ndarray:
    key = hashlib.sha256((embedder.model_id + "\x00" + "\x00".join(texts)).encode()).hexdigest()[:24]
    path = cache_dir / f"{key}.npy"
    if path.exists():
        cached: np.ndarray = np.load(path)
        return cached
    vecs = embedder.embed(texts)
    np.save(path, vecs)
    return vecs


# ---------------------------------------------------------------- baselines (independent of ours)


class OkapiBM25:
    """Textbook BM25 over lower-cased word tokens: the baseline, deliberately not our tokenizer/index."""

    def __init__(self, docs: Sequence[str], k1: float = 1.5, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.tf = [Counter(self.tok(d)) for d in docs]
        self.len = [sum(c.values()) for c in self.tf]
        self.avg = sum(self.len) / max(1, len(self.len))
        df: Counter[str] = Counter()
        for c in self.tf:
            df.update(c.keys())
        n = len(docs)
        self.idf = {t: math.log((n - f + 0.5) / (f + 0.5) + 1.0) for t, f in df.items()}

    @staticmethod
    def tok(text: str) -> list[str]:
        return re.findall(r"\w+", text.lower())

    def scores(self, query: str) -> np.ndarray:
        q = [t for t in set(self.tok(query)) if t in self.idf]
        out = np.zeros(len(self.tf))
        for i, (c, dl) in enumerate(zip(self.tf, self.len, strict=True)):
            norm = self.k1 * (1 - self.b + self.b * dl / self.avg)
            out[i] = sum(self.idf[t] * c[t] * (self.k1 + 1) / (c[t] + norm) for t in q if t in c)
        return out


class Newest:
    """Truncation: the newer, the better."""

    def __call__(self, events: Sequence[MemoryEvent], query: Query, /) -> np.ndarray:
        return np.arange(len(events), dtype=np.float64)


class Fixed:
    """A scorer returning precomputed scores (the baselines score once per question, not per budget)."""

    def __init__(self, scores: np.ndarray) -> None:
        self.scores = scores

    def __call__(self, events: Sequence[MemoryEvent], query: Query, /) -> np.ndarray:
        return self.scores


def _ranks(x: np.ndarray) -> np.ndarray:
    r = np.empty(len(x))
    r[np.argsort(-x, kind="stable")] = np.arange(len(x))
    return r


# ---------------------------------------------------------------- the run


class ColdStats:
    """recall@5/@10 of cold search over L2, and of L1 and L2 together, per protocol and budget."""

    def __init__(self) -> None:
        self.at: dict[tuple[str, int, int], list[float]] = {}
        self.joint: dict[tuple[str, int, int], list[float]] = {}
        self.l1: dict[tuple[str, int], list[float]] = {}

    def add(
        self, protocol: str, budget: int, l2: ColdIndex, query: Query, evidence: set[str], kept: int, lat: list[float]
    ) -> None:
        """One question: `kept` of its evidence turns are in L1, the rest of those in `l2` may be found."""
        in_l2 = {e for e in evidence if e in l2}
        top: list[str] = []
        if in_l2:
            start = time.perf_counter()
            top = [eid for eid, _ in l2.top(query, 10)]
            lat.append((time.perf_counter() - start) * 1000)
        self.l1.setdefault((protocol, budget), []).append(kept / len(evidence))
        for k in (5, 10):
            found = len(in_l2 & set(top[:k]))
            if in_l2:
                self.at.setdefault((protocol, budget, k), []).append(found / len(in_l2))
            self.joint.setdefault((protocol, budget, k), []).append((kept + found) / len(evidence))

    def report(self, budgets: Sequence[int]) -> None:
        print("cold context: recall of coldcontext_query's search (ColdIndex.top) over L2, queried with the question")
        print("  stream = L2 holds what pruning against the conversation's latest turn moved out;")
        print("  same   = L2 holds what pruning against this very question moved out (the ranker's own residue)")
        header = (
            f"{'protocol':>8} | {'budget':>6} | {'q in L2':>7} | {'cold@5':>6} | {'cold@10':>7} | "
            f"{'L1 only':>7} | {'L1+cold@5':>9} | {'L1+cold@10':>10}"
        )
        print(header)
        print("-" * len(header))
        for protocol in ("stream", "same"):
            for b in budgets:
                at5 = self.at.get((protocol, b, 5), [])
                at10 = self.at.get((protocol, b, 10), [])
                print(
                    f"{protocol:>8} | {b:>6} | {len(at5):>7} | {statistics.fmean(at5 or [0.0]):>6.3f} | "
                    f"{statistics.fmean(at10 or [0.0]):>7.3f} | {statistics.fmean(self.l1[(protocol, b)]):>7.3f} | "
                    f"{statistics.fmean(self.joint[(protocol, b, 5)]):>9.3f} | "
                    f"{statistics.fmean(self.joint[(protocol, b, 10)]):>10.3f}"
                )
        print("(q in L2 = questions with an evidence turn in L2, over which cold@k is averaged; L1 columns: all)")


def percentile(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, round(p / 100 * (len(s) - 1)))]


def run_locomo(data_dir: Path, budgets: list[int], pinned: int, cache_dir: Path, prefer: str) -> None:
    embedder = load_embedder(preference(prefer))
    convs = load_locomo(data_dir)
    n_q = sum(len(c.questions) for c in convs)
    print(f"LoCoMo: {len(convs)} conversations, {sum(len(c.turns) for c in convs)} turns, {n_q} questions (cat 1-4)")
    print(f"embedder: {embedder.model_id if embedder else 'none (TF-IDF only)'}; pinned={pinned}; tokens~chars/4")
    methods = ["truncation", "bm25", "dense", "rrf", "ours"]
    recall: dict[tuple[str, int], list[float]] = {(m, b): [] for m in methods for b in budgets}
    held: dict[tuple[str, int], list[float]] = {(m, b): [] for m in methods for b in budgets}
    lat_ours: list[float] = []
    lat_cold: list[float] = []
    cold = ColdStats()
    t0 = time.perf_counter()
    for conv in convs:
        texts = [t for _, t in conv.turns]
        vecs = embed_cached(embedder, texts, cache_dir) if embedder else None
        qvecs = embed_cached(embedder, [q.text for q in conv.questions], cache_dir) if embedder else None
        fp = embedder.fingerprint if embedder else ""
        # stream the conversation into the store: event + vectors on entry, IDF updated incrementally
        index = TfidfIndex()
        events: list[MemoryEvent] = []
        for i, (tid, text) in enumerate(conv.turns):
            dense = DenseVector(fp, vecs[i]) if vecs is not None else None
            ev = make_event(tid, float(i), text, dense=dense, tokens=math.ceil(len(text) / 4))
            assert ev.terms is not None
            index.add(ev.terms)
            events.append(ev)
        ours = HybridScorer(index)
        entries = {
            e.id: IndexEntry(e.id, conv.name, i * 1000, None, e.terms, e.dense)
            for i, e in enumerate(events)
            if e.terms is not None
        }
        # "stream": the session was pruned against its latest turn as it arrived; its L2 is what that prune
        # moved out. Each question then searches that L2 (the situation coldcontext_query exists for).
        last = events[-1]
        at_end = Query(last.text, last.terms or TermVector.from_text(last.text), last.dense)
        streamed: dict[int, tuple[set[str], ColdIndex]] = {}
        for b in budgets:
            res_end = prune(events, at_end, b, pinned_recent=pinned, scorer=ours)
            l2 = ColdIndex()
            for e in res_end.pruned:
                l2.add(entries[e.id])
            streamed[b] = ({e.id for e in res_end.kept}, l2)
        bm25 = OkapiBM25(texts)
        newest = Newest()
        for qi, q in enumerate(conv.questions):
            query = Query(
                q.text, TermVector.from_text(q.text), DenseVector(fp, qvecs[qi]) if qvecs is not None else None
            )
            bm = bm25.scores(q.text)
            de, _ = dense_scores(events, query)
            rrf = 1 / (60 + _ranks(bm)) + 1 / (60 + _ranks(de.astype(np.float64)))
            fixed: dict[str, ScoreFn] = {
                "truncation": newest,
                "bm25": Fixed(bm),
                "dense": Fixed(de),
                "rrf": Fixed(rrf),
            }
            evidence = set(q.evidence)
            for b in budgets:
                for m in methods:
                    if m == "ours":
                        start = time.perf_counter()
                        res = prune(events, query, b, pinned_recent=pinned, scorer=ours)
                        lat_ours.append((time.perf_counter() - start) * 1000)
                    else:
                        res = prune(events, query, b, pinned_recent=pinned, scorer=fixed[m])
                    kept = sum(1 for e in res.kept if e.id in evidence)
                    r = kept / len(evidence)
                    if m == "ours":
                        # "same": L2 = what pruning against this very question moved out
                        l2_same = ColdIndex()
                        if any(e.id in evidence for e in res.pruned):
                            for e in res.pruned:
                                l2_same.add(entries[e.id])
                        cold.add("same", b, l2_same, query, evidence, kept, lat_cold)
                    if m == "truncation":
                        kept_ids, l2_stream = streamed[b]
                        n_kept = len(evidence & kept_ids)
                        cold.add("stream", b, l2_stream, query, evidence, n_kept, lat_cold)
                    recall[(m, b)].append(r)
                    if conv.name not in DEV_SPLIT:
                        held[(m, b)].append(r)
    elapsed = time.perf_counter() - t0
    print()
    print("evidence recall (mean over questions)")
    header = f"{'budget':>7} | " + " | ".join(f"{m:>10}" for m in methods) + f" | {'ours held-out':>13}"
    print(header)
    print("-" * len(header))
    for b in budgets:
        cells = " | ".join(f"{statistics.fmean(recall[(m, b)]):>10.3f}" for m in methods)
        print(f"{b:>7} | {cells} | {statistics.fmean(held[('ours', b)]):>13.3f}")
    print(f"(held-out = the {len(convs) - len(DEV_SPLIT)} conversations outside the dev split {sorted(DEV_SPLIT)})")
    print()
    print(
        f"prune latency (ours, ~{len(events)}-event history): p50 {percentile(lat_ours, 50):.2f} ms, "
        f"p99 {percentile(lat_ours, 99):.2f} ms over {len(lat_ours)} prunes; LoCoMo pass {elapsed:.1f} s"
    )
    print()
    cold.report(budgets)
    if lat_cold:
        print(
            f"cold query latency (top-10 over a conversation's L2): p50 {percentile(lat_cold, 50):.2f} ms, "
            f"p99 {percentile(lat_cold, 99):.2f} ms over {len(lat_cold)} queries"
        )


def run_stream_protocol(
    data_dir: Path,
    budgets: list[int],
    pinned: int,
    cache_dir: Path,
    prefer: str,
    only: str,
    l3: bool = False,
    l3_share: float | None = None,
) -> None:
    loaded = load_embedder(preference(prefer))
    embedder = CachedEmbedder(loaded, cache_dir) if loaded is not None else None
    wanted = {n for n in only.split(",") if n}
    convs = [c for c in load_locomo(data_dir) if not wanted or c.name in wanted]
    streams = [
        (
            c.name,
            [StreamTurn(tid, text, ts) for (tid, text), ts in zip(c.turns, c.times, strict=True)],
            [(q.text, set(q.evidence)) for q in c.questions],
        )
        for c in convs
    ]
    n_q = sum(len(c.questions) for c in convs)
    print(f"LoCoMo (stream): {len(convs)} conversations, {sum(len(c.turns) for c in convs)} turns, {n_q} questions")
    started = time.perf_counter()
    result = run_stream(streams, budgets, embedder, pinned=pinned, dev_split=DEV_SPLIT)
    report(result, budgets)
    categories = [q.category for c in convs for q in c.questions]  # the order run_stream scored them in
    names = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
    for b in budgets:
        by: dict[int, list[float]] = {}
        for category, score in zip(categories, result.recall[b], strict=True):
            by.setdefault(category, []).append(score)
        cells = ", ".join(f"{names[k]} {statistics.fmean(v):.3f} of {len(v)}" for k, v in sorted(by.items()))
        print(f"  {b} by category: {cells}")
    print(f"(stream pass {time.perf_counter() - started:.0f} s; held-out = outside the dev split {sorted(DEV_SPLIT)})")
    if l3:
        print()
        started = time.perf_counter()
        graphed = run_stream_l3(streams, budgets, embedder, pinned=pinned, dev_split=DEV_SPLIT, share=l3_share)
        report_l3(graphed, result, budgets)
        print(f"(L3 stream pass {time.perf_counter() - started:.0f} s)")
        print()
        extractor_yield([text for c in convs for _, text in c.turns])


def run_paraphrase(budgets: list[int], pinned: int, cache_dir: Path, prefer: str) -> None:
    """The Chinese and English paraphrase sets (memory_paraphrase.py) with truncation and BM25 beside ours."""
    import memory_paraphrase

    loaded = load_embedder(preference(prefer))
    embedder = CachedEmbedder(loaded, cache_dir) if loaded is not None else None
    print(f"embedder: {loaded.model_id if loaded else 'none (TF-IDF only)'}")
    memory_paraphrase.run(embedder, budgets, pinned)
    if embedder is not None:
        embedder.save()


def extractor_yield(locomo_turns: list[str]) -> None:
    """The deterministic extractor's yield on these LoCoMo turns and on the Chinese sample (tools/bench/distill.py)."""
    from distill import measure, zh_turns  # distill imports this module: imported here, not at the top

    print("extractor yield (deterministic path, what cooling ran above; tools/bench/distill.py --show N for samples)")
    measure("LoCoMo (English)", locomo_turns, 0)
    measure("Chinese sample", zh_turns(), 0)


def run_scale(seed: int = 0, fts5: bool = False) -> None:
    """Synthetic: prune a 1,000-event session; then the 100k-event cold store (:func:`run_cold_scale`)."""
    rng = np.random.default_rng(seed)
    vocab = [f"w{i}" for i in range(5000)]
    fp, dim = "synthetic/512", 512

    def unit(n: int) -> np.ndarray:
        m = rng.standard_normal((n, dim)).astype(np.float32)
        out: np.ndarray = m / np.linalg.norm(m, axis=1, keepdims=True)
        return out

    vecs = unit(1000)
    index = TfidfIndex()
    events = []
    for i in range(1000):
        words = rng.choice(vocab, size=int(rng.integers(5, 40))).tolist()
        terms = TermVector.from_terms(words)
        index.add(terms)
        group = f"g{i // 3}" if i % 7 == 0 else None
        events.append(
            MemoryEvent(f"e{i}", float(i), " ".join(words), len(words) * 2, group, DenseVector(fp, vecs[i]), terms)
        )
    scorer = HybridScorer(index)
    lat = []
    for _ in range(100):
        words = rng.choice(vocab, size=8).tolist()
        q = Query(" ".join(words), TermVector.from_terms(words), DenseVector(fp, unit(1)[0]))
        start = time.perf_counter()
        prune(events, q, 4000, scorer=scorer)
        lat.append((time.perf_counter() - start) * 1000)
    print(
        f"scale: prune 1,000 events @4k: p50 {percentile(lat, 50):.2f} ms, "
        f"p99 {percentile(lat, 99):.2f} ms (target p50 < 10 ms)"
    )

    run_cold_scale(rng, fts5=fts5)


def synthetic_cold_records(
    rng: np.random.Generator, n: int, *, fp: str = "synthetic/512", dim: int = 512
) -> tuple[list[EventRecord], Callable[[int], list[str]]]:
    """`n` synthetic L2 events (Zipfian vocabulary of 20k words, 5-40 words each, unit `dim`-d vectors, 500
    events per session), and the word sampler that made them (for queries over the same vocabulary)."""
    vocab_size = 20_000
    cdf = np.cumsum(1.0 / np.arange(1, vocab_size + 1) ** 0.9)
    cdf /= cdf[-1]

    def words(k: int) -> list[str]:
        return [f"w{j}" for j in np.searchsorted(cdf, rng.random(k)).tolist()]

    records = []
    for start in range(0, n, 1000):
        m = min(1000, n - start)
        mat = rng.standard_normal((m, dim)).astype(np.float32)
        mat /= np.linalg.norm(mat, axis=1, keepdims=True)
        for i in range(m):
            k = start + i
            text = " ".join(words(int(rng.integers(5, 40))))
            terms = TermVector.from_terms(text.split())
            records.append(
                build_event(
                    timestamp=1_700_000_000 + k, input=text, session=f"s{k // 500}", dense=DenseVector(fp, mat[i]),
                    terms=terms,
                )
            )  # fmt: skip
    return records, words


def run_cold_scale(rng: np.random.Generator, n: int = 100_000, fts5: bool = False) -> None:
    """A real on-disk ColdStore with `n` events: put (batches of 1,000, FULL sync), reopen, search."""
    fp, dim = "synthetic/512", 512
    t = time.perf_counter()
    records, words = synthetic_cold_records(rng, n, fp=fp, dim=dim)
    made = time.perf_counter() - t
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cold.db"
        store = ColdStore(path)
        t = time.perf_counter()
        for start in range(0, n, 1000):
            store.put(records[start : start + 1000])
        put_s = time.perf_counter() - t
        store.close()
        size_mb = sum(f.stat().st_size for f in Path(tmp).iterdir()) / 1e6
        t = time.perf_counter()
        store = ColdStore(path)
        store.index  # noqa: B018 -- built by the first search since open stopped building it; timed here
        open_s = time.perf_counter() - t
        queries = []
        for _ in range(100):
            qv = rng.standard_normal(dim).astype(np.float32)
            qw = words(8)
            queries.append(Query(" ".join(qw), TermVector.from_terms(qw), DenseVector(fp, qv / np.linalg.norm(qv))))
        lat, lex, den = [], [], []
        for query in queries:
            start_t = time.perf_counter()
            store.search(query, 10)
            lat.append((time.perf_counter() - start_t) * 1000)
            start_t = time.perf_counter()
            store.index.bm25(query.terms)
            lex.append((time.perf_counter() - start_t) * 1000)
            start_t = time.perf_counter()
            store.index.cosine(query.dense)
            den.append((time.perf_counter() - start_t) * 1000)
        print(
            f"scale: ColdStore with {n:,} events: made in {made:.1f} s, put {put_s:.1f} s "
            f"({n // 1000} durable batches), {size_mb:.0f} MB on disk, reopen + index build {open_s:.1f} s "
            "(open alone: tools/bench/cold_open.py)"
        )
        print(
            f"scale: cold query (BM25 + dense + fusion + smoothing, top-10) over {n:,} L2 events: "
            f"p50 {percentile(lat, 50):.2f} ms, p99 {percentile(lat, 99):.2f} ms (target p50 < 50 ms); "
            f"of which BM25 p50 {percentile(lex, 50):.2f} ms, dense scan p50 {percentile(den, 50):.2f} ms"
        )
        store.close()
        if fts5:
            _fts5_compare(Path(tmp) / "fts.db", records, queries)


def _fts5_compare(path: Path, records: Sequence[EventRecord], queries: Sequence[Query]) -> None:
    """The alternative for the lexical half: SQLite FTS5 ranked by its bm25(), same documents and queries."""
    import sqlite3

    db = sqlite3.connect(path, isolation_level=None)
    db.execute("CREATE VIRTUAL TABLE fts USING fts5(terms, detail=column)")
    t = time.perf_counter()
    db.execute("BEGIN")
    db.executemany("INSERT INTO fts(rowid, terms) VALUES (?, ?)", ((i + 1, r.text) for i, r in enumerate(records)))
    db.execute("COMMIT")
    ins = time.perf_counter() - t
    lat = []
    for query in queries[:30]:
        match = " OR ".join(f'"{w}"' for w in query.terms.counts)
        t = time.perf_counter()
        db.execute(
            "SELECT rowid, bm25(fts) FROM fts WHERE fts MATCH ? ORDER BY bm25(fts) LIMIT 10", (match,)
        ).fetchall()
        lat.append((time.perf_counter() - t) * 1000)
    print(
        f"scale: FTS5 alternative (lexical only): insert {ins:.1f} s, bm25 top-10 p50 {percentile(lat, 50):.1f} ms, "
        f"p99 {percentile(lat, 99):.1f} ms over {len(lat)} queries"
    )
    db.close()


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "data_dir", type=Path, nargs="?", metavar="LOCOMO", help="locomo10.json, locomo10.zip or a directory"
    )
    ap.add_argument("--budgets", default="2000,4000,8000")
    ap.add_argument("--pinned", type=int, default=10)
    ap.add_argument("--embedder", choices=BUILDS, default=EMBEDDERS[0])
    ap.add_argument("--cache-dir", type=Path, default=Path(tempfile.gettempdir()) / "hologram-bench-embed")
    ap.add_argument("--no-scale", action="store_true", help="skip the synthetic scale test")
    ap.add_argument("--fts5", action="store_true", help="also time SQLite FTS5 bm25() on the 100k documents")
    ap.add_argument(
        "--protocol",
        choices=("library", "stream", "both", "paraphrase"),
        default="both",
        help="library: the whole history pruned against each question at once (the upper bound); stream: "
        "turn by turn through SessionMemory and L2 on disk, as the kernel does (see memory_stream.py); "
        "paraphrase: only the Chinese and English paraphrase sets (no LOCOMO needed, memory_paraphrase.py)",
    )
    ap.add_argument(
        "--paraphrase",
        action="store_true",
        help="also the Chinese and English sets of facts said in passing, corrected, asked in paraphrase",
    )
    ap.add_argument(
        "--l3",
        action="store_true",
        help="stream protocol with the memory graph: cooling on the conversation's clock, then forced; "
        "evidence in context with L3 recall on and off; the extractor's yield (see memory_stream.py)",
    )
    ap.add_argument("--l3-share", type=float, default=None, help="[memory.graph] recall_share for --l3 (default 0.15)")
    ap.add_argument("--only", default="", help="comma-separated conversation names (e.g. the dev split 26,30,41)")
    ap.add_argument("--cross", action="store_true", help="the cross-session set instead (see memory_cross.py)")
    ap.add_argument("--window", type=int, default=4000, help="--cross: the model's context window")
    ap.add_argument("--sessions", type=int, default=100, help="--cross: sessions stored per language")
    args = ap.parse_args(argv)
    os.makedirs(args.cache_dir, exist_ok=True)
    if args.cross:
        from memory_cross import run_cross

        run_cross(args.cache_dir, args.embedder, window=args.window, sessions=args.sessions)
        return 0
    budgets = [int(b) for b in args.budgets.split(",")]
    if args.data_dir is None and args.protocol != "paraphrase":
        ap.error("LOCOMO is needed (only --protocol paraphrase and --cross run without it)")
    if args.protocol == "paraphrase" or args.paraphrase:
        run_paraphrase(budgets, args.pinned, args.cache_dir, args.embedder)
        print()
        if args.protocol == "paraphrase":
            return 0
    if args.protocol in ("stream", "both"):
        run_stream_protocol(
            args.data_dir, budgets, args.pinned, args.cache_dir, args.embedder, args.only, args.l3, args.l3_share
        )
        print()
    if args.protocol in ("library", "both"):
        run_locomo(args.data_dir, budgets, args.pinned, args.cache_dir, args.embedder)
    if not args.no_scale:
        print()
        run_scale(fts5=args.fts5)
    return 0


if __name__ == "__main__":
    sys.exit(main())
