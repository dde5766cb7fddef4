"""The *stream* protocol of the memory benchmark: LoCoMo through the product's own memory path.

Each conversation is fed turn by turn into a real `SessionStore` and `ColdStore` on disk through
`SessionMemory` — the code the kernel runs before every LLM request, with its budget, pinning, overflow
and recall rules: every LoCoMo turn is a user input (``"speaker: text"``, at the session's date), the
request for it is prepared (history pruned, pruned events moved to L2), a short answer is stored as the
model's response, and the embedder indexes the new events, as it does between turns in the kernel. Then
each question is asked as a new turn in the same session, and the benchmark reads what the request would
carry: **evidence in context** = the share of the question's evidence turns among the events of the
prepared messages (L1 after pruning plus whatever was recalled from L2), averaged over questions.

The model never calls a tool here: what comes back comes back because the memory layer brought it.
Budgets are history budgets (the window is set so that `history_budget` gives exactly this many tokens).
Embeddings of the conversation are cached on disk by text (the same model's output, reused across runs);
the questions are embedded anew, so the prepare latency includes the query embedding as in the kernel.

**With L3** (``--l3``, :func:`run_stream_l3`): the same stream, with the product's memory graph attached
(``GraphMemory`` on a real Kùzu database in the run's directory, the deterministic extractor — no model is
configured) and cooling run on the *conversation's* clock: L2 records when an event arrived and when it was
last recalled at the conversation's time (the turn's timestamp), and at every LoCoMo session boundary cooling
runs with the product's policy (idle 72 h, at most 2 accesses) at that session's start. That is what the
hourly job would have done during the days between two sessions: eligibility only grows while nothing is
recalled, so one run at the next session's start moves exactly what the job would have moved by then. One
more run at question time (an hour after the last turn). The questions are then asked (``preview``) twice
against the same state: *L3 on* (the product: the L3 note in the request) and *L3 off* (recall from L3
returns nothing; what L3 holds is simply gone from L1/L2). Then *forced*: everything still in L2 is distilled
too (idle 0, any access count — the upper bound of what cooling can move) and the questions are asked again.

Evidence in context with L3 = the share of a question's evidence turns in the kept history (L1 + recalled L2)
or carried by the L3 note (``Prepared.l3_events``, or the turn's text quoted in the note); *only through L3*
= questions with an evidence turn the note carries and the history does not.
"""

from __future__ import annotations

import asyncio
import hashlib
import pickle
import statistics
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from hologram.memory.cold.blocks import EventRecord
from hologram.memory.cold.overflow import TARGET_FILL
from hologram.memory.cold.store import ColdStore
from hologram.memory.embed.embedder import Embedder
from hologram.memory.session_memory import SessionMemory
from hologram.memory.session_records import record_of
from hologram.memory.text.tokens import estimate_tokens
from hologram.sessions import SessionStore

ANSWER = "Noted."


class CachedEmbedder:
    """The embedder, with its vectors remembered by text on disk: the same model output, computed once."""

    def __init__(self, inner: Embedder, cache_dir: Path) -> None:
        self.inner = inner
        self.path = cache_dir / f"stream-{hashlib.sha256(inner.model_id.encode()).hexdigest()[:12]}.pkl"
        self.vectors: dict[str, np.ndarray] = {}
        if self.path.exists():
            self.vectors = pickle.loads(self.path.read_bytes())
        self.added = 0
        self.uncached: set[str] = set()
        """Texts always embedded anew (the questions: their embedding is part of the prepare latency the
        benchmark reports, as it is in the kernel)."""

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def fingerprint(self) -> str:
        return self.inner.fingerprint

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if self.uncached and any(t in self.uncached for t in texts):
            return np.asarray(self.inner.embed(texts), dtype=np.float32)
        missing = [t for t in dict.fromkeys(texts) if t not in self.vectors]
        if missing:
            for text, vector in zip(missing, self.inner.embed(missing), strict=True):
                self.vectors[text] = vector
            self.added += len(missing)
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack([self.vectors[t] for t in texts])

    def save(self) -> None:
        if self.added:
            tmp = self.path.with_suffix(".tmp")
            tmp.write_bytes(pickle.dumps(self.vectors, protocol=pickle.HIGHEST_PROTOCOL))
            tmp.replace(self.path)
            self.added = 0


@dataclass
class StreamTurn:
    dia_id: str
    text: str
    ts: float


@dataclass
class StreamResult:
    """Per budget: evidence in context per question (held-out or not), prepare latencies, L2 size."""

    recall: dict[int, list[float]] = field(default_factory=dict)
    held_out: dict[int, list[float]] = field(default_factory=dict)
    latency_ms: dict[int, list[float]] = field(default_factory=dict)
    l2_size: dict[int, list[int]] = field(default_factory=dict)
    recalled: dict[int, list[int]] = field(default_factory=dict)
    per_conversation: dict[int, dict[str, float]] = field(default_factory=dict)
    """Per budget: each conversation's mean evidence in context (the target holds for every one, not only the
    mean: issue 39 item 1)."""


def session_times(doc: dict[str, Any]) -> dict[int, float]:
    """Session number → its start as a timestamp ("1:56 pm on 8 May, 2023")."""
    out = {}
    for key, value in doc.items():
        if key.startswith("session_") and key.endswith("_date_time"):
            number = int(key.split("_")[1])
            try:
                out[number] = datetime.strptime(str(value), "%I:%M %p on %d %B, %Y").timestamp()
            except ValueError:
                out[number] = 0.0
    return out


async def _run_conversation(
    turns: Sequence[StreamTurn],
    questions: Sequence[tuple[str, set[str]]],
    budget: int,
    embedder: Embedder | None,
    root: Path,
    pinned: int,
    seen_out: list[set[str]] | None = None,
) -> tuple[list[float], list[float], int, list[int]]:
    """Scores, prepare latencies, L2 size and recalled counts per question; `seen_out` also gets each
    question's turn ids in the request (memory_paraphrase.py tells the stale statement from its correction)."""
    store = SessionStore(root / "sessions.db")
    # index segments on disk, as the kernel keeps them (SessionMemory.open): conversations cross SEAL_EVENTS
    memory = SessionMemory(store, ColdStore(root / "cold.db"), embedder, pinned_recent=pinned, index_dir=root / "index")
    window = int(budget / TARGET_FILL) + 1
    sid = store.create_session("bench")
    turn_of: dict[int, str] = {}

    async def one(text: str, ts: float) -> Any:
        seq = store.append(sid, "input", {"text": text}, ts=ts)
        started = time.perf_counter()
        prepared = await memory.prepare(sid, text, window_tokens=window, fixed_tokens=0)
        elapsed = (time.perf_counter() - started) * 1000
        store.append(sid, "response", {"content": ANSWER, "reasoning": None, "tool_calls": []}, ts=ts)
        await memory.index(sid)  # the kernel embeds between turns, in the background
        return seq, prepared, elapsed

    if isinstance(embedder, CachedEmbedder):
        embedder.uncached = {text for text, _ in questions}
    text_of: dict[int, str] = {}
    for turn in turns:
        seq, _, _ = await one(turn.text, turn.ts)
        turn_of[seq] = turn.dia_id
        text_of[seq] = turn.text
    scores, latencies, recalled = [], [], []
    end = max((t.ts for t in turns), default=0.0) + 3600
    for text, evidence in questions:
        # Each question against the state the conversation left (not after the previous questions): the
        # request `prepare` would send for it, with nothing stored or moved.
        started = time.perf_counter()
        prepared = await memory.preview(sid, text, window_tokens=window, fixed_tokens=0, now=end)
        latencies.append((time.perf_counter() - started) * 1000)
        seen = _sent(prepared, turn_of, text_of)
        scores.append(len(evidence & seen) / len(evidence))
        if seen_out is not None:
            seen_out.append(seen)
        recalled.append(len(prepared.recalled))
    l2 = len(memory.cold)
    await memory.aclose()
    store.close()
    return scores, latencies, l2, recalled


def _sent(prepared: Any, turn_of: dict[int, str], text_of: dict[int, str]) -> set[str]:
    """The turns the request really carries: an event behind its messages (`Prepared.seqs`) whose text is in
    one of them — joined older inputs (memory/joined.py) are read in the messages sent, not taken on trust."""
    sent = "\n".join(m.content for m in prepared.messages if isinstance(m.content, str))
    out = {turn_of[s] for s in prepared.seqs if s in turn_of and text_of[s] in sent}
    if len(out) < sum(1 for s in prepared.seqs if s in turn_of):
        raise AssertionError("an event of Prepared.seqs is not in the messages sent")
    return out


def run_stream(
    conversations: Sequence[tuple[str, list[StreamTurn], list[tuple[str, set[str]]]]],
    budgets: Sequence[int],
    embedder: Embedder | None,
    *,
    pinned: int,
    dev_split: frozenset[str],
) -> StreamResult:
    result = StreamResult()
    for name, turns, questions in conversations:
        for budget in budgets:
            with tempfile.TemporaryDirectory() as tmp:
                scores, latencies, l2, recalled = asyncio.run(
                    _run_conversation(turns, questions, budget, embedder, Path(tmp), pinned)
                )
            result.recall.setdefault(budget, []).extend(scores)
            result.per_conversation.setdefault(budget, {})[name] = statistics.fmean(scores) if scores else 0.0
            if name not in dev_split:
                result.held_out.setdefault(budget, []).extend(scores)
            result.latency_ms.setdefault(budget, []).extend(latencies)
            result.l2_size.setdefault(budget, []).append(l2)
            result.recalled.setdefault(budget, []).extend(recalled)
        if isinstance(embedder, CachedEmbedder):
            embedder.save()
    return result


def percentile(xs: Sequence[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, round(p / 100 * (len(s) - 1)))] if s else 0.0


def report(result: StreamResult, budgets: Sequence[int]) -> None:
    print("stream protocol: evidence in context (the product's path: SessionMemory, on-disk L1/L2, no tool call)")
    header = (
        f"{'budget':>7} | {'all':>6} | {'held-out':>8} | {'prepare p50':>11} | {'p99':>7} | "
        f"{'L2 size':>7} | {'recalled/q':>10} | {'min conv.':>12}"
    )
    print(header)
    print("-" * len(header))
    for b in budgets:
        lat = result.latency_ms[b]
        every, held = statistics.fmean(result.recall[b]), statistics.fmean(result.held_out.get(b) or [0.0])
        p50, p99 = percentile(lat, 50), percentile(lat, 99)
        per = result.per_conversation.get(b, {})
        worst = min(per, key=lambda name: per[name]) if per else ""
        print(
            f"{b:>7} | {every:>6.3f} | {held:>8.3f} | {p50:>8.2f} ms | {p99:>4.1f} ms | "
            f"{statistics.fmean(result.l2_size[b]):>7.0f} | {statistics.fmean(result.recalled[b] or [0]):>10.1f} | "
            f"{per.get(worst, 0.0):>5.3f} ({worst:>3})"
        )
    for b in budgets:
        per = result.per_conversation.get(b, {})
        print(f"  {b} per conversation: " + ", ".join(f"{n} {v:.3f}" for n, v in sorted(per.items())))


# ---------------------------------------------------------------- with L3 (--l3)


class ClockedColdStore(ColdStore):
    """The real L2 store, its clock the conversation's: an event's arrival (``put``) and its accesses
    (``touch``) are recorded at :attr:`now` — the timestamp of the turn being prepared — so that "idle 72 h"
    means 72 hours of the conversation, not of the benchmark's few minutes."""

    now: float | None = None

    def put(self, records: Sequence[EventRecord], *, now: float | None = None) -> None:
        super().put(records, now=self.now if now is None else now)

    def touch(self, ids: Iterable[str], *, now: float | None = None, once: bool = False) -> None:
        super().touch(ids, now=self.now if now is None else now, once=once)

    def clock(self) -> float:
        return time.time() if self.now is None else self.now


class L3Switch:
    """The run's ``GraphMemory`` as ``SessionMemory.graph``, with L3 recall switchable by the product's own
    setting: *off* shows ``[memory.graph] recall = false`` (requests carry nothing from L3; what L3 holds stays
    out of L1/L2 — ``held`` is the real one), *on* the configured settings. Everything else is the real object;
    its recall calls (``ranked``, ``recall``) are timed."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.on = True
        self.ms: float = 0.0
        """Time the recall calls of the last request took (the graph's part of it)."""
        graph = inner.settings.graph
        self._off = inner.settings.model_copy(update={"graph": graph.model_copy(update={"recall": False})})

    @property
    def settings(self) -> Any:
        return self.inner.settings if self.on else self._off

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def ranked(self, text: str, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return await self.inner.ranked(text, **kwargs)
        finally:
            self.ms += (time.perf_counter() - started) * 1000

    async def recall(self, text: str, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return await self.inner.recall(text, **kwargs)
        finally:
            self.ms += (time.perf_counter() - started) * 1000


def l3_note(prepared: Any) -> str:
    """The L3 part of a request's one system note (it starts with the L3 header), or ""."""
    from hologram.memory.graph.recall import HEADER

    content = prepared.note.content if prepared.note is not None else ""
    at = (content or "").find(HEADER)
    return content[at:] if at >= 0 else ""


@dataclass
class L3Row:
    """One (budget, state) of the L3 run: per question scores and counts, over all and held-out questions."""

    off: list[float] = field(default_factory=list)
    on: list[float] = field(default_factory=list)
    off_held: list[float] = field(default_factory=list)
    on_held: list[float] = field(default_factory=list)
    only_l3: int = 0
    """Questions with an evidence turn the L3 note carries and the history does not."""
    only_l3_held: int = 0
    in_l3: list[float] = field(default_factory=list)
    """Share of the question's evidence turns held by L3 at question time."""
    note_tokens: list[int] = field(default_factory=list)
    """Tokens of the L3 note per question (0: no note)."""
    coverage: list[float] = field(default_factory=list)
    """Per question with evidence held by L3: the share of those turns the note carries."""
    answers: list[float] = field(default_factory=list)
    """Per question with a note: the share of its items that are the bench's stored answer ("Noted."), a
    response block with nothing in it — budget the note spent on this benchmark's filler."""
    lat_on: list[float] = field(default_factory=list)
    recall_ms: list[float] = field(default_factory=list)
    """Time in ``GraphMemory.recall`` per question (0 when the request did not call it)."""


@dataclass
class L3Result:
    rows: dict[tuple[int, str], L3Row] = field(default_factory=dict)
    """(budget, "clock" | "forced") → row."""
    moved: dict[tuple[int, str], int] = field(default_factory=dict)
    triples: dict[tuple[int, str], int] = field(default_factory=dict)
    failed: dict[tuple[int, str], int] = field(default_factory=dict)
    l2_left: dict[tuple[int, str], int] = field(default_factory=dict)
    distill_s: dict[int, float] = field(default_factory=dict)
    questions: int = 0
    share: float = 0.0

    def row(self, budget: int, state: str) -> L3Row:
        return self.rows.setdefault((budget, state), L3Row())

    def add(self, key: tuple[int, str], into: dict[tuple[int, str], int], n: int) -> None:
        into[key] = into.get(key, 0) + n


def _session_of(dia_id: str) -> str:
    return dia_id.split(":", 1)[0]


async def _ask_l3(
    memory: SessionMemory,
    switch: L3Switch,
    sid: str,
    questions: Sequence[tuple[str, set[str]]],
    dia_of_seq: dict[int, str],
    dia_of_event: dict[str, str],
    text_of: dict[str, str],
    event_of: dict[str, str],
    window: int,
    now: float,
    row: L3Row,
    held_out: bool,
) -> None:
    """Every question against the current state, L3 recall on and off (module docstring)."""
    for text, evidence in questions:
        switch.on, switch.ms = True, 0.0
        started = time.perf_counter()
        on = await memory.preview(sid, text, window_tokens=window, fixed_tokens=0, now=now)
        row.lat_on.append((time.perf_counter() - started) * 1000)
        row.recall_ms.append(switch.ms)
        note = l3_note(on)
        items = [line for line in note.splitlines()[1:] if line.startswith("- ")]
        if items:
            row.answers.append(sum(f"“{ANSWER}”" in line for line in items) / len(items))
        row.note_tokens.append(estimate_tokens(note) if note else 0)
        history = {dia_of_seq[s] for s in on.seqs if s in dia_of_seq}
        carried = {dia_of_event[e] for e in getattr(on, "l3_events", []) if e in dia_of_event}
        carried |= {d for d in evidence - history - carried if note and text_of[d][:200] in note}
        switch.on = False
        off = await memory.preview(sid, text, window_tokens=window, fixed_tokens=0, now=now)
        switch.on = True
        history_off = {dia_of_seq[s] for s in off.seqs if s in dia_of_seq}
        ordered = sorted(evidence)
        held = switch.held([event_of[d] for d in ordered])
        in_l3 = {d for d, h in zip(ordered, held, strict=True) if h}
        if in_l3:
            row.coverage.append(len(in_l3 & carried) / len(in_l3))
        score_on = len(evidence & (history | carried)) / len(evidence)
        score_off = len(evidence & history_off) / len(evidence)
        only = bool(evidence & (carried - history))
        row.on.append(score_on)
        row.off.append(score_off)
        row.only_l3 += only
        row.in_l3.append(len(in_l3) / len(evidence))
        if held_out:
            row.on_held.append(score_on)
            row.off_held.append(score_off)
            row.only_l3_held += only


async def _run_conversation_l3(
    turns: Sequence[StreamTurn],
    questions: Sequence[tuple[str, set[str]]],
    budget: int,
    embedder: Embedder | None,
    root: Path,
    pinned: int,
    result: L3Result,
    held_out: bool,
    settings: Any,
) -> None:
    from hologram.memory.graph.service import GraphMemory

    store = SessionStore(root / "sessions.db")
    cold = ClockedColdStore(root / "cold.db")
    memory = SessionMemory(store, cold, embedder, pinned_recent=pinned)
    graph = GraphMemory.open(root, settings, cold, clock=cold.clock)
    switch = L3Switch(graph)
    memory.graph = switch  # type: ignore[assignment]  # the real GraphMemory behind a recall switch
    window = int(budget / TARGET_FILL) + 1
    sid = store.create_session("bench")
    dia_of_seq: dict[int, str] = {}
    distill_s = 0.0

    counts = {"moved": 0, "triples": 0, "failed": 0}

    async def cool(**policy: Any) -> None:
        """One cooling run; `counts` are cumulative over the conversation (what L3 holds after it)."""
        nonlocal distill_s
        started = time.perf_counter()
        report = await graph.distill(**policy)
        distill_s += time.perf_counter() - started
        counts["moved"] += len(report.moved)
        counts["triples"] += report.triples
        counts["failed"] += len(report.failed)

    def tally(state: str) -> None:
        key = (budget, state)
        result.add(key, result.moved, counts["moved"])
        result.add(key, result.triples, counts["triples"])
        result.add(key, result.failed, counts["failed"])
        result.add(key, result.l2_left, len(cold))

    if isinstance(embedder, CachedEmbedder):
        embedder.uncached = {text for text, _ in questions}
    previous: str | None = None
    for turn in turns:
        cold.now = turn.ts
        if previous is not None and _session_of(turn.dia_id) != previous:
            await cool()  # the product's policy, at the new session's start (module docstring)
        previous = _session_of(turn.dia_id)
        seq = store.append(sid, "input", {"text": turn.text}, ts=turn.ts)
        await memory.prepare(sid, turn.text, window_tokens=window, fixed_tokens=0)
        store.append(sid, "response", {"content": ANSWER, "reasoning": None, "tool_calls": []}, ts=turn.ts)
        await memory.index(sid)
        dia_of_seq[seq] = turn.dia_id
    end = max((t.ts for t in turns), default=0.0) + 3600
    cold.now = end
    await cool()
    text_of = {t.dia_id: t.text for t in turns}
    event_of: dict[str, str] = {}
    for event in store.events(sid):
        record = record_of(event)
        if record is not None and event.seq in dia_of_seq:
            event_of[dia_of_seq[event.seq]] = record.id
    dia_of_event = {e: d for d, e in event_of.items()}
    args = (memory, switch, sid, questions, dia_of_seq, dia_of_event, text_of, event_of, window, end)
    await _ask_l3(*args, result.row(budget, "clock"), held_out)
    tally("clock")
    await cool(idle_hours=0, max_accesses=1 << 30)  # forced: everything L2 still holds
    await _ask_l3(*args, result.row(budget, "forced"), held_out)
    tally("forced")
    result.distill_s[budget] = result.distill_s.get(budget, 0.0) + distill_s
    await graph.aclose()
    await memory.aclose()
    store.close()


def run_stream_l3(
    conversations: Sequence[tuple[str, list[StreamTurn], list[tuple[str, set[str]]]]],
    budgets: Sequence[int],
    embedder: Embedder | None,
    *,
    pinned: int,
    dev_split: frozenset[str],
    share: float | None = None,
) -> L3Result:
    """The L3 stream over `conversations` (module docstring); `share`: ``[memory.graph] recall_share`` (None:
    the default), to see how much of the L3 note's yield its budget limits."""
    from hologram.config.settings import GraphSettings, MemorySettings

    settings = MemorySettings() if share is None else MemorySettings(graph=GraphSettings(recall_share=share))
    result = L3Result(share=settings.graph.recall_share)
    for name, turns, questions in conversations:
        result.questions += len(questions)
        for budget in budgets:
            with tempfile.TemporaryDirectory() as tmp:
                asyncio.run(
                    _run_conversation_l3(
                        turns,
                        questions,
                        budget,
                        embedder,
                        Path(tmp),
                        pinned,
                        result,
                        name not in dev_split,
                        settings,
                    )
                )
        if isinstance(embedder, CachedEmbedder):
            embedder.save()
    return result


def _mean(xs: Sequence[float]) -> str:
    return f"{statistics.fmean(xs):.3f}" if xs else "-"


def report_l3(result: L3Result, baseline: StreamResult, budgets: Sequence[int]) -> None:
    print(
        "stream protocol with L3: evidence in context after cooling (clock = the product's policy on the "
        f"conversation's clock; forced = then all of L2); [memory.graph] recall_share = {result.share:.2f}"
    )
    header = (
        f"{'budget':>6} | {'cooling':>7} | {'no cooling':>10} | {'L3 off':>6} | {'L3 on':>6} | "
        f"{'only L3':>7} | {'ev. in L3':>9} | {'carried':>7} | {'note tok p50/p95':>16} | "
        f"{'preview p50/p95':>17} | {'L3 recall p50/p95':>17}"
    )
    print(header)
    print("-" * len(header))
    for b in budgets:
        for state in ("clock", "forced"):
            row = result.rows.get((b, state))
            if row is None:
                continue
            tok, lat, rec = row.note_tokens, row.lat_on, row.recall_ms
            print(
                f"{b:>6} | {state:>7} | {_mean(baseline.recall.get(b, [])):>10} | {_mean(row.off):>6} | "
                f"{_mean(row.on):>6} | {row.only_l3:>7} | {_mean(row.in_l3):>9} | {_mean(row.coverage):>7} | "
                f"{percentile(tok, 50):>7.0f} / {percentile(tok, 95):>6.0f} | "
                f"{percentile(lat, 50):>5.1f} / {percentile(lat, 95):>5.1f} ms | "
                f"{percentile(rec, 50):>5.1f} / {percentile(rec, 95):>5.1f} ms"
            )
    if any(row.on_held for row in result.rows.values()):
        print("held-out (outside the dev split):")
        for b in budgets:
            for state in ("clock", "forced"):
                row = result.rows.get((b, state))
                if row is not None:
                    print(
                        f"{b:>6} | {state:>7} | {_mean(baseline.held_out.get(b, [])):>10} | "
                        f"{_mean(row.off_held):>6} | {_mean(row.on_held):>6} | {row.only_l3_held:>7}"
                    )
    print(
        f"({result.questions} questions. L3 off: recall from L3 answers nothing, what L3 holds is out of L1/L2. "
        "only L3 = questions with an evidence turn the L3 note carries and the history does not; ev. in L3 = "
        "share of evidence turns L3 holds; carried = of those, the share the note carries (over questions with "
        "any); note tokens over all questions, 0 = no note; preview = the whole request with L3 on, query "
        "embedding included; L3 recall = the time in GraphMemory.recall)"
    )
    for b in budgets:
        for state in ("clock", "forced"):
            key = (b, state)
            if key in result.rows:
                print(
                    f"  {b} {state}: {result.moved.get(key, 0)} events moved to L3, {result.triples.get(key, 0)} "
                    f"triples, {result.failed.get(key, 0)} failed, {result.l2_left.get(key, 0)} left in L2; "
                    f"note items that are the bench's stored answer {_mean(result.rows[key].answers)}"
                )
        print(f"  {b}: distillation {result.distill_s.get(b, 0.0):.1f} s in all")
