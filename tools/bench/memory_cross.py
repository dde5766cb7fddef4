"""Memory across sessions (issue 39 item 2): facts told in one session, asked in paraphrase in a new one.

    PYTHONPATH=tools/bench .venv/bin/python tools/bench/memory.py --cross [--window 4000] [--sessions 100]

The set is this repository's own (``tools/bench/data/cross_sessions.json``, Chinese and English, 44 facts
each, written for this and held out: only the ten facts marked ``dev`` were looked at while choosing
``memory/across/store.py``'s threshold). Per language, one data directory through the product's path
(``SessionMemory.open``: ``across.db``, ``cold.db``, the session index on disk, the default embedder):

* ``--sessions`` sessions (100) of the owner, each 6 chit-chat inputs drawn from the set's filler (seeded) with a
  short answer after each, one session every 12 hours; a fact is said in passing among the filler of one of
  them (one fact per session), and each correction's earlier value in an early session, its later value in a
  later one;
* then every question is asked in a **new session** (``preview``: nothing stored) with the same request
  budget as every other request (``history_budget(window, 0)``): *in request* = the fact's input is among what
  the request carries (the note of other sessions, memory/across/store.py);
* unrelated inputs ("write a limerick", "hi") are asked the same way: *recalled needlessly* = share of them
  whose request carries anything from other sessions, and its mean cost in tokens;
* corrections: the later value in the request, and shown after the earlier one when both are;
* prepare latency: ``preview`` of every question (its embedding included, never cached), p50 / p95 wall time,
  and below the table the process's CPU time per preview (steadier on a shared host).

Baselines with the same budget, over the same stored sessions: *truncation* — the newest events of all earlier
sessions that fit (what "the last conversations in the prompt" gives); *BM25* — a textbook Okapi BM25 over every
stored input (word tokens; character bigrams for Han text, as Lucene's CJK analyser), best first until the budget
is full: an upper bound on what a lexical search that fills the whole budget with old inputs finds (it spends
the request on them every time, needed or not).
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import statistics
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from memory_stream import CachedEmbedder

from hologram.memory.cold.overflow import history_budget
from hologram.memory.embed.embedder import load_embedder, preference
from hologram.memory.session_memory import MESSAGE_OVERHEAD, SessionMemory, record_of
from hologram.memory.text.tokens import estimate_tokens
from hologram.sessions import SessionStore

DATA = Path(__file__).parent / "data" / "cross_sessions.json"
T0 = 1_760_000_000.0
HALF_DAY = 43_200.0
FILLER_PER_SESSION = 6
ANSWER = {"en": "Okay, noted.", "zh": "好的，记下了。"}
_HAN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff]+")


@dataclass
class Said:
    sid: str
    seq: int
    text: str
    ts: float
    event_id: str = ""


@dataclass
class LangResult:
    found: list[bool] = field(default_factory=list)
    dev: list[bool] = field(default_factory=list)
    truncation: list[bool] = field(default_factory=list)
    bm25: list[bool] = field(default_factory=list)
    needless: list[bool] = field(default_factory=list)
    needless_tokens: list[int] = field(default_factory=list)
    note_tokens: list[int] = field(default_factory=list)
    later_in: list[bool] = field(default_factory=list)
    later_after: list[bool] = field(default_factory=list)
    latency_ms: list[float] = field(default_factory=list)
    cpu_ms: list[float] = field(default_factory=list)
    """The process's CPU time per preview (every thread): what a request costs, steadier than wall time on a
    loaded host."""
    stored_inputs: int = 0


def _tokens(text: str) -> list[str]:
    """The baseline's tokens: lower-cased words; Han runs as character bigrams (and single characters)."""
    out: list[str] = []
    for word in re.findall(r"\w+", text.lower()):
        out.extend(part for part in _HAN.split(word) if part)
        for run in _HAN.findall(word):
            out.extend([run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)])
    return out


class Bm25:
    """Okapi BM25 (k1 1.5, b 0.75) over `_tokens`: independent of memory's analyser."""

    def __init__(self, docs: Sequence[str]) -> None:
        self.tf = [dict(_count(_tokens(d))) for d in docs]
        self.len = [sum(c.values()) for c in self.tf]
        self.avg = sum(self.len) / max(1, len(self.len))
        df: dict[str, int] = {}
        for c in self.tf:
            for t in c:
                df[t] = df.get(t, 0) + 1
        n = len(docs)
        self.idf = {t: float(np.log((n - f + 0.5) / (f + 0.5) + 1.0)) for t, f in df.items()}

    def scores(self, query: str) -> np.ndarray:
        q = [t for t in set(_tokens(query)) if t in self.idf]
        out = np.zeros(len(self.tf))
        for i, (c, dl) in enumerate(zip(self.tf, self.len, strict=True)):
            norm = 1.5 * (1 - 0.75 + 0.75 * dl / self.avg)
            out[i] = sum(self.idf[t] * c[t] * 2.5 / (c[t] + norm) for t in q if t in c)
        return out


def _count(tokens: list[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for t in tokens:
        out[t] = out.get(t, 0) + 1
    return out


def _cost(text: str) -> int:
    return estimate_tokens(text) + MESSAGE_OVERHEAD


async def _run_language(
    lang: str, data: dict[str, Any], embedder: Any, root: Path, *, sessions: int, window: int, seed: int
) -> LangResult:
    rng = random.Random(seed)
    store = SessionStore(root / "sessions.db")
    memory = SessionMemory.open(root, store, load_model=False)
    memory.embedder = embedder
    facts: list[dict[str, Any]] = data["facts"]
    corrections: list[dict[str, Any]] = data["corrections"]
    filler: list[str] = data["filler"]
    plan: dict[int, list[tuple[str, int]]] = {}  # session index -> (kind, item index)
    for j in range(len(facts)):
        plan.setdefault(j * sessions // len(facts), []).append(("fact", j))
    for k in range(len(corrections)):
        plan.setdefault(1 + 2 * k, []).append(("earlier", k))
        plan.setdefault(sessions // 2 + 1 + 2 * k, []).append(("later", k))
    told: dict[tuple[str, int], Said] = {}
    log: list[tuple[float, str]] = []  # every stored event's (time, text) for truncation
    inputs: list[Said] = []
    for i in range(sessions):
        sid = f"{lang}-s{i:03d}"
        texts = rng.sample(filler, FILLER_PER_SESSION)
        items = plan.get(i, [])
        for kind, j in items:
            said = facts[j]["fact"] if kind == "fact" else corrections[j][kind]
            texts.insert(rng.randrange(1, len(texts)), said)
        ts = T0 + i * HALF_DAY
        for text in texts:
            seq = store.append(sid, "input", {"text": text}, channel="cli", ts=ts)
            await memory.prepare(sid, text, window_tokens=window, fixed_tokens=0)
            store.append(sid, "response", {"content": ANSWER[lang], "reasoning": None}, channel="cli", ts=ts + 5)
            said = Said(sid, seq, text, ts)
            inputs.append(said)
            log += [(ts, text), (ts + 5, ANSWER[lang])]
            for kind, j in items:
                if text == (facts[j]["fact"] if kind == "fact" else corrections[j][kind]):
                    told[(kind, j)] = said
            ts += 120
    for said in inputs:
        event = next(e for e in store.events(said.sid, after=said.seq - 1) if e.seq == said.seq)
        record = record_of(event)
        assert record is not None
        said.event_id = record.id
    for sid in {s.sid for s in inputs}:  # every vector computed, as a running kernel has them
        await memory.index(sid)
    result = LangResult(stored_inputs=len(memory.across or ()))
    budget = history_budget(window, 0)
    bm25 = Bm25([s.text for s in inputs])
    truncated: set[str] = set()
    room = budget
    for _ts, text in sorted(log, reverse=True):
        if _cost(text) > room:
            break
        room -= _cost(text)
        truncated.add(text)

    def bm25_kept(question: str) -> set[str]:
        order = np.argsort(-bm25.scores(question), kind="stable")
        kept, left = set(), budget
        for i in order.tolist():
            cost = _cost(inputs[i].text)
            if cost <= left:
                kept.add(inputs[i].text)
                left -= cost
        return kept

    if isinstance(embedder, CachedEmbedder):
        embedder.uncached.update(f["question"] for f in facts)
        embedder.uncached.update(c["question"] for c in corrections)
        embedder.uncached.update(data["unrelated"])
    asked = 0

    async def ask(question: str) -> Any:
        nonlocal asked
        asked += 1
        started, cpu = time.perf_counter(), time.process_time()
        prepared = await memory.preview(f"{lang}-ask-{asked}", question, window_tokens=window, fixed_tokens=0,
                                        now=T0 + (sessions + 2) * HALF_DAY)  # fmt: skip
        result.latency_ms.append((time.perf_counter() - started) * 1000)
        result.cpu_ms.append((time.process_time() - cpu) * 1000)
        return prepared

    for j, fact in enumerate(facts):
        prepared = await ask(fact["question"])
        said = told[("fact", j)]
        hit = said.event_id in prepared.across
        result.found.append(hit)
        if fact.get("dev"):
            result.dev.append(hit)
        result.truncation.append(said.text in truncated)
        result.bm25.append(said.text in bm25_kept(fact["question"]))
        note = str(prepared.note.content) if prepared.note is not None else ""
        result.note_tokens.append(estimate_tokens(note))
    for k, corr in enumerate(corrections):
        prepared = await ask(corr["question"])
        note = str(prepared.note.content) if prepared.note is not None else ""
        later, earlier = told[("later", k)], told[("earlier", k)]
        result.later_in.append(later.event_id in prepared.across)
        if later.event_id in prepared.across and earlier.event_id in prepared.across:
            result.later_after.append(note.find(corr["answer"]) > note.find(corr["stale"]) >= 0)
    for text in data["unrelated"]:
        prepared = await ask(text)
        result.needless.append(bool(prepared.across))
        if prepared.across and prepared.note is not None:
            result.needless_tokens.append(estimate_tokens(str(prepared.note.content)))
    await memory.aclose()
    store.close()
    return result


def _share(xs: Sequence[bool]) -> str:
    return f"{sum(xs) / len(xs):.3f} ({sum(xs)}/{len(xs)})" if xs else "-"


def _pct(xs: Sequence[float], p: float) -> float:
    return float(np.percentile(np.asarray(xs), p)) if xs else float("nan")


def run_cross(
    cache_dir: Path, prefer: str, *, window: int = 4000, sessions: int = 100, seed: int = 0, data: Path = DATA
) -> dict[str, LangResult]:
    """Both languages; prints the table (docs/memory.md, "Across sessions")."""
    sets = json.loads(data.read_text(encoding="utf-8"))
    loaded = load_embedder(preference(prefer))
    embedder = CachedEmbedder(loaded, cache_dir) if loaded is not None else None
    results: dict[str, LangResult] = {}
    for lang in ("en", "zh"):
        with tempfile.TemporaryDirectory() as tmp:
            results[lang] = asyncio.run(
                _run_language(lang, sets[lang], embedder, Path(tmp), sessions=sessions, window=window, seed=seed)
            )
        if isinstance(embedder, CachedEmbedder):
            embedder.save()
    model = embedder.model_id if embedder is not None else "none (BM25 only)"
    print(f"Across sessions: {sessions} sessions stored per language, window {window} "
          f"(history budget {history_budget(window, 0)} tokens), embedder {model}")  # fmt: skip
    print("| language | facts in request (ours) | held-out | dev | truncation | BM25 (whole budget) | "
          "recalled needlessly | note tokens (facts / needless) | later value in request | later shown after | "
          "prepare p50 / p95 ms |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for lang, r in results.items():
        held = [f for f, d in zip(r.found, _dev_flags(sets[lang]), strict=True) if not d]
        needless_tokens = statistics.fmean(r.needless_tokens) if r.needless_tokens else 0.0
        print(f"| {lang} | **{_share(r.found)}** | {_share(held)} | {_share(r.dev)} | {_share(r.truncation)} | "
              f"{_share(r.bm25)} | {_share(r.needless)} | {statistics.fmean(r.note_tokens):.0f} / "
              f"{needless_tokens:.0f} | {_share(r.later_in)} | {_share(r.later_after)} | "
              f"{_pct(r.latency_ms, 50):.1f} / {_pct(r.latency_ms, 95):.1f} |")  # fmt: skip
    cpu = "; ".join(f"{lang} {_pct(r.cpu_ms, 50):.1f} / {_pct(r.cpu_ms, 95):.1f}" for lang, r in results.items())
    print(f"prepare CPU time p50 / p95 ms (the process, every thread): {cpu}")
    return results


def _dev_flags(data: dict[str, Any]) -> list[bool]:
    return [bool(f.get("dev")) for f in data["facts"]]
