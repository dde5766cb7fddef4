"""One search index per session over every event it ever had — L1 and L2 alike — in log order.

Why one index and not one per layer: the request's history is *one* ranking over L1 ∪ L2 (issue 11 §1).
Scoring L1 with one scorer and L2 with another (the global cold index, with its own IDF and its own
neighbours) made recalled events and kept events incomparable, and the cold ranker was the weaker of the two.
Here a layer decides only who *holds* an event (L2 membership is the cold store's), never how it scores.

What is indexed, per event: its token cost, its tool-call unit (a call and its results move together), its
turn (an input opens a turn; the model's responses and tool results belong to it) and its **passages**
(:mod:`hologram.memory.text.passages`), each with BM25 postings and, once the embedder has computed it in the
background, a dense vector. An event scores as its best passage on each signal.

Scoring (:meth:`SessionIndex.scores`) is :class:`~hologram.memory.rank.score.HybridScorer`'s method: z-normalised
BM25 and dense cosine averaged (BM25 alone where a vector is missing), then each event receives a share of its
neighbouring *turns'* best scores (:data:`TURN_NEIGHBOUR_WEIGHTS`). Smoothing by turns, not by
events: a real session interleaves every input with the model's response, and event-by-event smoothing made a
turn's own response its "neighbour".

Everything is a packed array, so scoring ~1,000 events is a handful of numpy operations, not Python loops.
"""

from __future__ import annotations

import logging
import math
import threading
from array import array
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hologram.memory.index.idhash import id_hash
from hologram.memory.index.index_segment import Layout, Segment, SegmentError, read_segment, write_segment
from hologram.memory.index.view import RequestView
from hologram.memory.index.window import old_bounded
from hologram.memory.rank.says_nothing import SAYS_NOTHING_BIT, SAYS_NOTHING_PENALTY, says_nothing
from hologram.memory.rank.score import neighbour_smooth, zscore
from hologram.memory.rank.speakers import (
    ASKS_BIT,
    KIND_MASK,
    MAX_SPEAKERS,
    OTHER_ASKS_PENALTY,
    SPEAKER_SHIFT,
    asks,
    named_speaker,
    speaker_label,
)
from hologram.memory.rank.specific import specificity
from hologram.memory.text.bounds import MAX_EMBEDDED_PASSAGES, indexed
from hologram.memory.text.monthcues import MONTH_BOOST
from hologram.memory.text.namings import namings
from hologram.memory.text.passages import passages
from hologram.memory.text.tfidf import TermVector

__all__ = [
    "DENSE_HORIZON",
    "DENSE_WEIGHT",
    "FAR_DENSE",
    "MERGE_FACTOR",
    "SEAL_EVENTS",
    "TIME_BOOST",
    "TIME_SELECT",
    "TURN_NEIGHBOUR_WEIGHTS",
    "WINDOW_BYTES",
    "IndexQuery",
    "SessionIndex",
]

log = logging.getLogger("hologram.memory")

#: Tail size (events) at which it is sealed into a segment on disk. Small enough that LoCoMo's conversations
#: (300-700 events) cross it, so the benchmark runs the sealed path; large enough that a turn's previous
#: turn and a call's results are nearly always still in the tail.
SEAL_EVENTS = 256
#: What a session's in-memory tail may weigh (bytes, estimated: :meth:`SessionIndex.tail_bytes`) before it is
#: sealed, whatever its event count: 256 long tool results held ~50 MB of postings and passage texts in the tail
#: (issue 39 item 7). The soak's short tool-using turns weigh ~2.6 kB an event in the tail, so they seal at ~100
#: events; four sessions' tails then swing the kernel by ~1 MB, not ~2.2 MB. ``[memory] index_window_bytes``.
WINDOW_BYTES = 256 * 1024
#: Estimated bytes of one event in the tail besides its text (its id, the packed rows, its unit key, the
#: record's objects), of a posting (two array slots, amortised growth), of a term first seen in the tail (its
#: dict entry, key and two arrays) and of a term of the record's own counts. Checked against ``tracemalloc``
#: (tests/memory/test_index_window.py: within a factor of two for short English, Chinese and long events).
_EVENT_BYTES, _POSTING_BYTES, _TERM_BYTES, _RECORD_TERM_BYTES = 1000, 10, 260, 100
#: A tail event's text is held about twice (the record's text and its blocks).
_TEXT_COPIES = 2
#: Segments of one size tier merged into one (tiered merging: O(log n) segments per session).
MERGE_FACTOR = 4
_KIND_CODES = {"input": 1, "response": 2, "tool_result": 3}
#: Terms whose sealed document frequency a session index keeps between seals (a query's words; then it starts over).
_SEALED_DF_KEPT = 512
_I32 = np.zeros(0, dtype=np.int32)
_NO_SLOTS = np.zeros(0, dtype=np.int64)

#: Share of the k-th neighbouring turn's best score an event receives (k = 1, 2; each side counts half).
#: Fitted on the dev split (26/30/41, 4k, stream): halving (0.5, 0.25) 0.902, (0.5, 0.5) 0.913, (0.75, 0.5)
#: 0.914, (0.5, 0.5, 0.5) 0.897, (1, 1) 0.903; held-out with (0.75, 0.5): 0.895 against 0.886 for halving.
#: Wider than the library scorer's event neighbours because a turn here is an input *and* its response.
#: Refitted with the snowball stemmer (issue 39, same split): (0.75, 0.5) 0.919, (0.75, 0.75) 0.927,
#: (0.6, 0.6) 0.922, (0.9, 0.75) 0.926, (0.75, 0.75, 0.25) 0.926, (1, 0.5) 0.915 — but (0.75, 0.75) cost the
#: Chinese paraphrase set (facts said in passing among unrelated turns) 0.944 -> 0.833 at 4k and the English
#: one 0.667 -> 0.611 at 2k (`memory.py --protocol paraphrase`): LoCoMo's question-and-reply pairs are not
#: every conversation's shape, so it stays.
TURN_NEIGHBOUR_WEIGHTS: tuple[float, ...] = (0.75, 0.5)

#: Events whose passages a request's dense product always covers (the newest): above LoCoMo's longest
#: conversation with its answers (~1,400 events), so every conversation of the benchmark ranks exactly as before;
#: ~400 soak turns. Older passages get a cosine only among the :data:`FAR_DENSE` that best match the query's
#: words (:meth:`SessionIndex.scores`): the product over every sealed passage grew a request's CPU with the
#: session (issue 39 item 7: +1.1 ms at 12,000 events with 256-d vectors, tools/bench/prepare_scale.py).
DENSE_HORIZON = 2048
#: Older passages (before the dense horizon) whose cosine a request computes: those with the best BM25.
FAR_DENSE = 64

#: The dense cosine's share of the fused score (z-scores; BM25 has the rest). 0.5 until the request's dense query
#: also carried the question's topic (memory/rank/reformulate.py); then LoCoMo at 4k, dev split 26/30/41: 0.4 /
#: 0.5 / 0.6 / 0.7 / 0.8 -> 0.951 / 0.959 / 0.963 / 0.965 / 0.964, held-out 0.939 -> 0.941 (0.6) / 0.944 (0.7).
#: 0.7 chosen on dev and confirmed on held-out (all 0.949; paraphrase sets up too — docs/memory.md, "evidence7b").
#: It moves tests/e2e/test_memory_e2e.py's oldest turn to L2 during the fillers (the prune note is a filler's
#: request's), and the question's request recalls it: the test reads the note where the prune happened.
DENSE_WEIGHT = 0.7

#: Added to the fused score of an event inside the window a time cue names (z-score units: a clear nudge,
#: never a filter — people misremember dates).
TIME_BOOST = 0.5
#: Added after smoothing to every event inside a time cue's window: the window's events rank first (among
#: themselves by relevance), then everything else competes for what is left — selection by the turns' real
#: times, so "what did I say yesterday?" gets yesterday's messages whenever truncation would (issue 39: 0/4
#: with the nudge alone, 4/4 by truncation). Still not a filter: other events fill the rest of the budget.
TIME_SELECT = 1000.0
_K1, _B = 1.2, 0.75
#: Passage vectors are kept in memory as int8 with one float32 scale per row (a quarter of float32: the
#: vectors are the largest thing a long session holds); scoring accumulates in float32 (``einsum`` over int8
#: costs ~2x float32 per row, float16 ~14x on the CPUs measured, hence not float16).
_LEVELS = 127.0


@dataclass(frozen=True, slots=True)
class IndexQuery:
    """A query as the index scores it (built by :func:`hologram.memory.rank.query.build_query`)."""

    terms: Mapping[str, float]
    """Term → weight multiplier (1 for the input's terms, 2 for distinctive names, 0.5 for the previous turn)."""
    dense: np.ndarray | None = None
    """Unit vector in the index's embedding space, or None (BM25 only)."""
    fingerprint: str | None = None
    window: tuple[float, float] | None = None
    """A time cue's window (epoch seconds): events inside it get :data:`TIME_BOOST`."""
    month: tuple[float, float] | None = None
    """A month named with its year (memory/text/monthcues.py): its events get ``MONTH_BOOST``, after smoothing."""
    speaker: int = 0
    """The slot of the one speaker the input names (memory/rank/speakers.py): the others' questions lose
    ``OTHER_ASKS_PENALTY``; 0: none."""


class SessionIndex:
    """Events and passages of one session (module docstring). Append-only, like the session log.

    `directory`: where sealed segments live (None: everything stays in the in-memory tail — tests, the
    inspector's cross-session index). `seal_events`: tail size at which it is sealed into a segment;
    `window_bytes`: what the tail may weigh before it is sealed with fewer events (:data:`WINDOW_BYTES`)."""

    def __init__(
        self, directory: Path | None = None, *, seal_events: int = SEAL_EVENTS, window_bytes: int = WINDOW_BYTES
    ) -> None:
        self.directory = directory
        self.seal_events = seal_events
        self.window_bytes = window_bytes
        self._tail_bytes = 0
        self._segments: list[_SegmentInfo] = []
        self._segments_lock = threading.Lock()
        self._merging = threading.Lock()
        """Held while the segment list is swapped (a merge) or a reader opens the files of the list."""
        self._base_event = 0
        self._base_passage = 0
        self._generation = 0
        self._reading = 0
        self._open: dict[Path, Segment] = {}
        self._columns: _Columns | None = None
        self._sealed_columns: tuple[tuple[Path, ...], dict[str, np.ndarray]] | None = None
        """The sealed segments' columns concatenated (owned copies, not views of the maps), by the segment list
        they were made from: kept between the requests of the session in use (:meth:`forget_between_requests`),
        so a turn's later requests concatenate only the tail onto them instead of every segment again."""
        self._sealed_df: tuple[int, dict[str, int]] = (-1, {})
        """(sealed events, term -> passages of the sealed segments containing it): :meth:`document_frequency`."""
        # the tail (global positions; its rows are position - base)
        self._seqs = array("q")
        self._ids: list[str] = []
        self._kinds = array("B")
        self._grouped = array("B")
        self._hash = array("Q")
        self._cost = array("i")
        self._turn = array("i")
        self._ts = array("d")
        self._unit_of = array("i")
        self._unit_key: dict[str, int] = {}
        self._first_passage = array("i")
        self._tools: dict[str, list[int]] = {}
        self._namings: dict[str, set[str]] = {}
        """The tail's namings (memory/text/namings.py): a noun's index term → the names given to it."""
        self._speakers: list[str] = []
        """The session's speaker labels in slot order (memory/rank/speakers.py): kept in every sealed segment's
        meta, so the whole session's, not the tail's."""
        self._turns = -1
        self._passage_event = array("i")
        self._passage_length = array("f")
        self.passage_text: list[str | None] = []
        """Text of a tail passage until its vector is computed (then None: the log keeps the text)."""
        self._done_below = 0
        """Every tail passage below this one has its vector (or no text): where :meth:`pending` starts."""
        self.postings: dict[str, tuple[array[int], array[int]]] = {}
        """The tail's postings: term → (global passage slots, term counts)."""
        self.total_length = 0
        """Terms in all passages (BM25's average length). No vocabulary is kept in memory: a term's document
        frequency is read from the segments' sorted term lists when a query asks for it
        (:meth:`document_frequency`) — a session's vocabulary grows with it (numbers, names, ids)."""
        self.fingerprint: str | None = None
        self._matrix: np.ndarray | None = None
        self._scale = np.zeros(0, dtype=np.float32)
        self._has_vector = np.zeros(0, dtype=bool)
        self.dense_rows = 0
        """Passages whose cosine the last dense product computed (the sealed ones kept for the query not
        counted): what :data:`DENSE_HORIZON` bounds (tests)."""
        self.bm25_rows = 0
        """Postings the last BM25 pass read: what a scoring window bounds (memory/index/window.py; tests)."""
        self._sealed_cosines: tuple[tuple[str, bytes], dict[Path, tuple[Layout, np.ndarray]]] | None = None
        """The sealed passages' cosines to the last dense query, by segment (a segment is immutable): a turn
        makes several requests with the same input, and each scored every sealed passage again. 4 bytes a
        sealed passage; the session memory keeps them for one session at a time (`forget_between_requests`)."""
        if directory is not None:
            self._load()

    def __len__(self) -> int:
        return self._base_event + len(self._ids)

    @property
    def passages(self) -> int:
        return self._base_passage + len(self._passage_event)

    @property
    def tail_bytes(self) -> int:
        """What the in-memory tail weighs, estimated as it grows (its texts, postings, terms and per-event rows,
        and the session memory's record of each of its events): what :attr:`window_bytes` bounds."""
        return self._tail_bytes

    @property
    def sealed(self) -> int:
        """How many events (the oldest) live in segments, not in the tail."""
        return self._base_event

    @property
    def segments(self) -> int:
        return len(self._segments)

    @property
    def last_segment_first_seq(self) -> int:
        """The seq of the oldest event of the newest segment (0: none): what the session log keeps from."""
        return int(self._segments[-1].first_seq) if self._segments else 0

    def log_start_seq(self) -> int:
        """The seq after which the session log needs to be held for this index (0: all of it): the last
        :attr:`seal_events` sealed events and the tail — the previous turn for the scene store, the events to
        index. Not the newest segment's first seq: after a merge that is one file of thousands of events, and a
        session read back after its idle release then decoded all of them, every turn (issue 39 item 7)."""
        if not self._segments:
            return 0
        at = max(0, self._base_event - self.seal_events)
        for info in reversed(self._segments):
            if info.first_event <= at:
                seg = read_segment(info.path, layout=info.layout)
                return max(0, int(seg["seq"][at - info.first_event]) - 1)
        return 0

    @property
    def last_sealed_seq(self) -> int:
        """The seq of the newest sealed event (0: none)."""
        return int(self._segments[-1].last_seq) if self._segments else 0

    # -- segments on disk --------------------------------------------------------------------------------

    def _load(self) -> None:
        """Open the session's segments (checksums verified once): the longest valid chain from position 0
        is kept; anything after a gap or a damaged file is deleted, with a warning, and rebuilt from the log
        by the caller (which adds the events after :attr:`last_sealed_seq`)."""
        assert self.directory is not None
        if not self.directory.is_dir():
            return
        infos: list[_SegmentInfo] = []
        problem = None
        files = sorted(self.directory.glob("seg-*.bin"))
        for tmp in self.directory.glob("*.tmp"):
            tmp.unlink(missing_ok=True)
        for path in files:
            try:
                stamp = _stamp(path)
                seg = read_segment(path, verify=stamp not in _VERIFIED)
                _remember_verified(stamp)
                info = _SegmentInfo.of(seg)
            except (SegmentError, OSError, ValueError, KeyError, TypeError) as exc:
                problem = str(exc)
                break
            if info.first_event != (infos[-1].end_event if infos else 0) or info.first_passage != (
                infos[-1].end_passage if infos else 0
            ):
                if infos and info.first_event < infos[-1].end_event:  # left over by an interrupted merge
                    path.unlink(missing_ok=True)
                    continue
                problem = (
                    f"{path.name}: starts at event {info.first_event}, expected {infos[-1].end_event if infos else 0}"
                )
                break
            try:
                length = _total_length(seg)
            except (ValueError, KeyError, TypeError) as exc:
                problem = f"{path.name}: unreadable postings ({exc})"
                break
            self.total_length += length
            infos.append(info)
            del seg
        if problem is not None:
            keep = {i.path for i in infos}
            for path in files:
                if path not in keep:
                    path.unlink(missing_ok=True)
            log.warning("session index %s: %s; rebuilding it from the session log after event %d",
                        self.directory.name, problem, infos[-1].end_event if infos else 0)  # fmt: skip
        self._segments = infos
        if infos:
            last = infos[-1]
            self._base_event, self._base_passage = last.end_event, last.end_passage
            self._turns = last.turns
            self.fingerprint = last.fingerprint
            self._speakers = list(last.speakers)

    def seal(self, *, vectors: bool) -> int:
        """Seal the tail into a segment when it holds :attr:`seal_events` events and (`vectors`: a model is
        computing them) every passage has its vector. Returns how many events were sealed (0: none)."""
        n = len(self._ids)
        if self.directory is None or n == 0 or (n < self.seal_events and self._tail_bytes < self.window_bytes):
            return 0
        if vectors and self.pending(1):
            return 0
        first_event, first_passage = self._base_event, self._base_passage
        p = len(self._passage_event)
        terms = sorted(self.postings)
        lengths = np.fromiter((len(self.postings[t][0]) for t in terms), dtype=np.int64, count=len(terms))
        offsets = np.zeros(len(terms) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        slots = np.concatenate([np.frombuffer(self.postings[t][0], dtype=np.int32) for t in terms] or [_I32])
        tfs = np.concatenate([np.frombuffer(self.postings[t][1], dtype=np.int32) for t in terms] or [_I32])
        tools = sorted(self._tools)
        tool_offsets = np.zeros(len(tools) + 1, dtype=np.int64)
        np.cumsum([len(self._tools[t]) for t in tools], out=tool_offsets[1:])
        tool_events = np.array([e for t in tools for e in self._tools[t]], dtype=np.int32)
        dim = self._matrix.shape[1] if self._matrix is not None else 0
        matrix = self._matrix[:p] if self._matrix is not None else np.zeros((p, 0), dtype=np.int8)
        if matrix.shape[0] < p:
            matrix = np.concatenate([matrix, np.zeros((p - matrix.shape[0], dim), dtype=np.int8)])
        arrays: dict[str, np.ndarray] = {
            "seq": np.array(self._seqs, dtype=np.int64),
            "kind": np.array(self._kinds, dtype=np.uint8),
            "grouped": np.array(self._grouped, dtype=np.uint8),
            "hash": np.array(self._hash, dtype=np.uint64),
            "ids": np.array([i.encode("utf-8", "surrogatepass") for i in self._ids], dtype=np.bytes_),
            "cost": np.array(self._cost, dtype=np.int32),
            "turn": np.array(self._turn, dtype=np.int32),
            "ts": np.array(self._ts, dtype=np.float64),
            "unit_of": np.array(self._unit_of, dtype=np.int32),
            "first_passage": np.array(self._first_passage, dtype=np.int32),
            "passage_event": np.array(self._passage_event, dtype=np.int32),
            "passage_length": np.array(self._passage_length, dtype=np.float32),
            "has_vector": _fit(self._has_vector, p, bool),
            "scale": _fit(self._scale, p, np.float32),
            "matrix": matrix,
            "terms": np.array([t.encode("utf-8", "surrogatepass") for t in terms] or [b""], dtype=np.bytes_)[
                : len(terms)
            ],
            "term_offsets": offsets,
            "slots": slots,
            "tfs": tfs,
            "tools": np.array([t.encode("utf-8", "surrogatepass") for t in tools] or [b""], dtype=np.bytes_)[
                : len(tools)
            ],
            "tool_offsets": tool_offsets,
            "tool_events": tool_events,
        }
        meta: dict[str, Any] = {
            "first_event": first_event, "events": n, "first_passage": first_passage, "passages": p,
            "first_seq": int(self._seqs[0]), "last_seq": int(self._seqs[-1]), "turns": self._turns,
            "fingerprint": self.fingerprint if self._matrix is not None else None,
        }  # fmt: skip
        if self._namings:  # a key only when there are some: the meta of most segments is unchanged
            meta["namings"] = {noun: sorted(names) for noun, names in sorted(self._namings.items())}
        if self._speakers:  # likewise: only a session whose messages name their speakers
            meta["speakers"] = list(self._speakers)
        path = self.directory / f"seg-{first_event:012d}-{first_event + n:012d}.bin"
        layout = write_segment(path, meta, arrays)
        info = _SegmentInfo(path, first_event, n, first_passage, p, meta["first_seq"], meta["last_seq"],
                            self._turns, meta["fingerprint"], layout, _namings_of(meta),
                            _speakers_of(meta))  # fmt: skip
        with self._segments_lock:
            self._segments = [*self._segments, info]
        self._base_event += n
        self._base_passage += p
        self._reset_tail()
        self._generation += 1
        return n

    def _reset_tail(self) -> None:
        for name in ("_seqs", "_kinds", "_grouped", "_hash", "_cost", "_turn", "_ts", "_unit_of",
                     "_first_passage", "_passage_event", "_passage_length"):  # fmt: skip
            old = getattr(self, name)
            setattr(self, name, array(old.typecode))
        self._ids = []
        self._unit_key = {}
        self._tools = {}
        self._namings = {}
        self.passage_text = []
        self._done_below = 0
        self.postings = {}
        self._tail_bytes = 0
        self._matrix = None if self._matrix is None else np.zeros((64, self._matrix.shape[1]), dtype=np.int8)
        self._scale = np.zeros(0 if self._matrix is None else 64, dtype=np.float32)
        self._has_vector = np.zeros(0 if self._matrix is None else 64, dtype=bool)

    def merge_plan(self) -> list[_SegmentInfo]:
        """The newest run of :data:`MERGE_FACTOR` segments of one size tier (tiered merging: a session has
        O(log n) segments), or [] when none is due."""
        segs = self._segments
        if len(segs) < MERGE_FACTOR:
            return []
        tail = segs[-MERGE_FACTOR:]
        tiers = {_tier(s.events, self.seal_events) for s in tail}
        return tail if len(tiers) == 1 else []

    def merge(self, group: Sequence[_SegmentInfo]) -> bool:
        """Merge `group` (consecutive segments, from :meth:`merge_plan`) into one file and swap it in. Safe in
        a worker thread while the loop reads: readers open the files under the list lock, and a file mapped
        by a reader stays readable after it is unlinked. Returns False when the list changed meanwhile."""
        if not group or self.directory is None or not self._merging.acquire(blocking=False):
            return False  # another merge runs (two indexers): it has the same plan
        try:
            return self._merge(group)
        except (OSError, SegmentError) as exc:  # derived data: the segments stay as they are
            log.warning("session index %s: merging segments failed (%s)", self.directory.name, exc)
            return False
        finally:
            self._merging.release()

    def _merge(self, group: Sequence[_SegmentInfo]) -> bool:
        assert self.directory is not None
        with self._segments_lock:
            current = self._segments
            at = next((k for k, s in enumerate(current) if s is group[0]), None)
            if at is None or current[at : at + len(group)] != list(group):
                return False
        segs = [read_segment(s.path, layout=s.layout) for s in group]
        arrays = _merged(segs)
        first, last = group[0], group[-1]
        meta: dict[str, Any] = {
            "first_event": first.first_event, "events": last.end_event - first.first_event,
            "first_passage": first.first_passage, "passages": last.end_passage - first.first_passage,
            "first_seq": first.first_seq, "last_seq": last.last_seq, "turns": last.turns,
            "fingerprint": last.fingerprint if all(s.fingerprint == last.fingerprint for s in group) else None,
        }  # fmt: skip
        named: dict[str, set[str]] = {}
        for s in group:
            for noun, names in s.namings.items():
                named.setdefault(noun, set()).update(names)
        if named:
            meta["namings"] = {noun: sorted(names) for noun, names in sorted(named.items())}
        if last.speakers:  # the latest segment's table holds every earlier one's (slots never change)
            meta["speakers"] = list(last.speakers)
        if meta["fingerprint"] is None:  # vectors of another model are of no use: dropped like set_vectors does
            arrays["has_vector"] = np.zeros_like(arrays["has_vector"])
        path = self.directory / f"seg-{first.first_event:012d}-{last.end_event:012d}.bin"
        layout = write_segment(path, meta, arrays)
        del segs, arrays
        info = _SegmentInfo(path, first.first_event, meta["events"], first.first_passage, meta["passages"],
                            first.first_seq, last.last_seq, last.turns, meta["fingerprint"], layout,
                            _namings_of(meta), _speakers_of(meta))  # fmt: skip
        with self._segments_lock:
            current = self._segments
            at = next((k for k, s in enumerate(current) if s is group[0]), None)
            if at is None or current[at : at + len(group)] != list(group):
                path.unlink(missing_ok=True)
                return False
            self._segments = [*current[:at], info, *current[at + len(group) :]]
            for s in group:
                s.path.unlink(missing_ok=True)
        return True

    @contextmanager
    def reading(self) -> Iterator[None]:
        """Keep the segments mapped (and the whole-index columns built once) for the duration of one
        request; they are dropped — unmapped — on exit."""
        self._reading += 1
        try:
            yield
        finally:
            self._reading -= 1
            if self._reading == 0:
                self._open = {}
                self._columns = None

    def _opened(self) -> list[Segment]:
        """The segments, mapped (kept in :attr:`_open` while :meth:`reading`)."""
        with self._segments_lock:
            infos = self._segments
            out = []
            for info in infos:
                seg = self._open.get(info.path)
                if seg is None:
                    seg = read_segment(info.path, layout=info.layout)
                    if self._reading:
                        self._open[info.path] = seg
                out.append(seg)
        return out

    def _cols(self) -> _Columns:
        cols = self._columns
        if cols is not None and cols.generation == self._generation and cols.n == len(self):
            return cols
        tail = {name: (getattr(self, attr), dtype) for name, (attr, dtype) in _TAIL_COLUMNS.items()}
        segments = self._opened()
        key = tuple(seg.path for seg in segments)
        kept = self._sealed_columns
        if kept is None or kept[0] != key:
            kept = self._sealed_columns = (key, {})
        cols = _Columns(self._generation, len(self), segments, {k: (a, len(a), d) for k, (a, d) in tail.items()},
                        kept[1])  # fmt: skip
        if self._reading:
            self._columns = cols
        return cols

    # -- whole-index columns (built per request: segments + tail) ------------------------------------------

    @property
    def seqs(self) -> np.ndarray:
        return self._cols().column("seq")

    def column(self, name: str) -> np.ndarray:
        """The whole-session column `name` (one of :data:`_TAIL_COLUMNS`)."""
        return self._cols().column(name)

    def gather(self, name: str, at: np.ndarray) -> np.ndarray:
        """Column `name` at ascending positions `at` (events, or passages for a passage column), without
        building it."""
        return self._cols().values_at_sorted(name, np.asarray(at, dtype=np.int64))

    def seq_at(self, i: int) -> int:
        """The log seq of the event at position `i` (negative from the end), without building :attr:`seqs`."""
        return int(self._cols().value_at("seq", i))

    def seqs_of(self, at: np.ndarray) -> np.ndarray:
        """The log seqs of the events at positions `at`, without building :attr:`seqs`."""
        return self._cols().values_at("seq", np.asarray(at, dtype=np.int64))

    def ts_of(self, at: np.ndarray) -> np.ndarray:
        """The times of the events at positions `at`, without building :attr:`ts`."""
        return self._cols().values_at("ts", np.asarray(at, dtype=np.int64))

    def ts_at(self, i: int) -> float:
        """The time of the event at position `i` (negative from the end), without building :attr:`ts`."""
        return float(self._cols().value_at("ts", i))

    @property
    def hashes(self) -> np.ndarray:
        """64-bit hashes of the event ids (:mod:`hologram.memory.index.idhash`): what membership is asked with."""
        return self._cols().column("hash")

    def hashes_from(self, start: int) -> np.ndarray:
        """The id hashes of the events from position `start` on: what a request asks the cold store about when
        it remembers the answer for the events before (:mod:`hologram.memory.layers`) — without building the
        whole column."""
        if start <= 0:
            return self.hashes
        cols = self._cols()
        parts = []
        for seg in cols.segments:
            lo = int(seg.meta["first_event"])
            if lo + int(seg.meta["events"]) > start:
                parts.append(seg["hash"][max(0, start - lo) :])
        tail, k, dtype = cols.tail["hash"]
        parts.append(np.array(tail, dtype=dtype)[max(0, start - self._base_event) : k])
        return np.concatenate(parts) if len(parts) > 1 else parts[0]

    @property
    def cost(self) -> np.ndarray:
        return self._cols().column("cost")

    @property
    def roles(self) -> np.ndarray:
        """Each event's role in a request whose older messages may be joined (memory/rank/fit.py's
        `fit_messages`): 1 an input, 2 a response outside any call group, 0 anything else (a call or its
        result: sent as it is)."""
        cols = self._cols()
        made = cols.derived.get("roles")
        if made is None:  # a request reads it three times (the fit, the markup twice): one pass over the tail
            sealed = cols.sealed.get("roles") if cols.segments else None
            if cols.segments and sealed is None:  # the sealed part's once, kept with the sealed columns
                sealed = roles_of(cols.sealed_part("kind"), cols.sealed_part("grouped"))
                sealed.flags.writeable = False
                cols.sealed["roles"] = sealed
            start = 0 if sealed is None else sealed.size
            tail = roles_of(cols.column("kind")[start:], cols.column("grouped")[start:])
            made = tail if sealed is None else np.concatenate((sealed, tail))
            made.flags.writeable = False  # shared by the request's readers
            cols.derived["roles"] = made
        return made

    @property
    def turn(self) -> np.ndarray:
        return self._cols().column("turn")

    @property
    def ts(self) -> np.ndarray:
        return self._cols().column("ts")

    @property
    def unit_of(self) -> np.ndarray:
        """Each event's unit: the position of the unit's first member."""
        return self._cols().column("unit_of")

    @property
    def first_passage(self) -> np.ndarray:
        return self._cols().column("first_passage")

    @property
    def units(self) -> list[list[int]]:
        """Members of each unit (for tests and diagnostics; requests use :attr:`unit_of`)."""
        out: dict[int, list[int]] = {}
        for i, u in enumerate(self.unit_of.tolist()):
            out.setdefault(u, []).append(i)
        return list(out.values())

    @property
    def ids(self) -> list[str]:
        """Every event id, in order (diagnostics: a Python list of the whole session)."""
        return [*(i.decode("utf-8", "surrogatepass") for s in self._opened() for i in s["ids"].tolist()), *self._ids]

    def id_at(self, i: int) -> str:
        if i >= self._base_event:
            return self._ids[i - self._base_event]
        for seg in self._opened():
            lo = int(seg.meta["first_event"])
            if lo <= i < lo + int(seg.meta["events"]):
                return bytes(seg["ids"][i - lo]).decode("utf-8", "surrogatepass")
        raise IndexError(i)

    def ids_at(self, positions: Sequence[int]) -> list[str]:
        """The event ids at `positions` (ascending), each segment's read in one slice of its id array."""
        out: list[str] = []
        k = 0
        for seg in self._opened() if positions and positions[0] < self._base_event else ():
            lo, hi = int(seg.meta["first_event"]), int(seg.meta["first_event"]) + int(seg.meta["events"])
            start = k
            while k < len(positions) and positions[k] < hi:
                k += 1
            if k > start:
                rel = np.asarray(positions[start:k], dtype=np.int64) - lo
                out += [i.decode("utf-8", "surrogatepass") for i in seg["ids"][rel].tolist()]
        out += [self._ids[p - self._base_event] for p in positions[k:]]
        return out

    def position_of_seq(self, seq: int) -> int | None:
        """The position of the event with log seq `seq`, or None when it is not indexed."""
        if seq > self.last_sealed_seq:  # the tail's (its seqs ascend, as the log's)
            tail = self._seqs
            at = int(np.searchsorted(np.frombuffer(tail, dtype=np.int64), seq)) if len(tail) else 0
            return self._base_event + at if at < len(tail) and tail[at] == seq else None
        for seg in self._opened():  # one segment's seqs (mapped), never the whole column
            if int(seg.meta["first_seq"]) <= seq <= int(seg.meta["last_seq"]):
                seqs = seg["seq"]
                at = int(np.searchsorted(seqs, seq))
                if at < seqs.size and int(seqs[at]) == seq:
                    return int(seg.meta["first_event"]) + at
                return None
        return None

    def with_tool(self, tool: str) -> np.ndarray:
        """Positions of the events whose blocks name `tool` (a call or its result)."""
        parts = [np.asarray(self._tools.get(tool, []), dtype=np.int64)]
        key = tool.encode("utf-8", "surrogatepass")
        for seg in self._opened():
            names = seg["tools"]
            if names.size == 0 or len(key) > names.dtype.itemsize:
                continue
            at = int(np.searchsorted(names, key))
            if at < names.size and bytes(names[at]) == key:
                lo, hi = seg["tool_offsets"][at : at + 2].tolist()
                parts.insert(-1, seg["tool_events"][lo:hi].astype(np.int64))
        return np.concatenate(parts)

    # -- building -------------------------------------------------------------------------------------

    def add(self, seq: int, event_id: str, kind: str, text: str, cost: int, *, group: str | None,
            ts: float, terms: TermVector | None = None, tools: Sequence[str] = ()) -> int:  # fmt: skip
        """Append one event (log order); returns its position. `terms`: the whole text's, when known;
        `tools`: the tool names its blocks carry (for :meth:`with_tool`)."""
        i = len(self)
        self._tail_bytes += _EVENT_BYTES + len(event_id) + _TEXT_COPIES * _text_bytes(text)
        if terms is not None:  # the record's own term counts (a dict entry and a key each)
            self._tail_bytes += _RECORD_TERM_BYTES * len(terms.counts)
        self._seqs.append(seq)
        self._ids.append(event_id)
        # the kind, a bit for an event that states nothing (memory/rank/says_nothing.py), and who asked
        # (memory/rank/speakers.py)
        said = indexed(text)
        self._kinds.append(_KIND_CODES.get(kind, 0) | (SAYS_NOTHING_BIT if says_nothing(kind, said) else 0)
                           | self._speaker_bits(kind, said))  # fmt: skip
        self._grouped.append(group is not None)
        self._hash.append(id_hash(event_id))
        self._cost.append(cost)
        if kind == "input":
            self._turns += 1
        self._turn.append(max(self._turns, 0))
        self._ts.append(ts)
        key = "\x00" + event_id if group is None else group
        unit = self._unit_key.get(key)
        if unit is None and group is not None:
            unit = self._sealed_unit(group)
        if unit is None:
            unit = i
        self._unit_key[key] = unit
        self._unit_of.append(unit)
        for tool in dict.fromkeys(tools):
            self._tools.setdefault(tool, []).append(i)
        for noun, name in namings(indexed(text)):  # "meet Toby, my puppy": a name the session gives
            self._namings.setdefault(noun, set()).add(name)
        self._first_passage.append(self.passages)
        parts = passages(indexed(text))  # bounded work per event: bounds.py
        for n, part in enumerate(parts):
            vec = terms if (len(parts) == 1 and terms is not None) else TermVector.from_text(part)
            self._add_passage(i, part, vec, embed=n < MAX_EMBEDDED_PASSAGES)
        self._generation += 1
        return i

    def _speaker_bits(self, kind: str, text: str) -> int:
        """The speaker's slot and the asks bit of an input or response labelled with its speaker (else 0)."""
        if kind not in ("input", "response"):
            return 0
        label = speaker_label(text)
        if label is None:
            return 0
        if label not in self._speakers:
            if len(self._speakers) >= MAX_SPEAKERS:
                return 0
            self._speakers.append(label)
        slot = self._speakers.index(label) + 1
        return (slot << SPEAKER_SHIFT) | (ASKS_BIT if asks(text) else 0)

    @property
    def speakers(self) -> tuple[str, ...]:
        """The session's speaker labels in slot order (casefolded; memory/rank/speakers.py)."""
        return tuple(self._speakers)

    def speaker_named(self, text: str) -> int:
        """The slot of the one speaker `text` names (memory/rank/speakers.py), or 0."""
        return named_speaker(text, self._speakers) if self._speakers else 0

    def _sealed_unit(self, group: str) -> int | None:
        """The unit of a call group whose call was sealed before its result arrived: the call's position
        (a response's group is ``call:<its seq>``), found in the segments."""
        head, _, seq = group.partition(":")
        if head != "call" or not seq.isdigit() or not self._segments or int(seq) > self.last_sealed_seq:
            return None
        at = self.position_of_seq(int(seq))
        if at is None:
            return None
        segs = self._opened()
        for seg in segs:
            lo = int(seg.meta["first_event"])
            inside = lo <= at < lo + int(seg.meta["events"])
            if not inside or not seg["grouped"][at - lo]:
                continue
            if (int(seg["kind"][at - lo]) & KIND_MASK) == _KIND_CODES["response"]:
                return int(seg["unit_of"][at - lo])
        return None

    def _add_passage(self, event: int, text: str, terms: TermVector, *, embed: bool = True) -> None:
        """One passage of `event`; `embed` False: BM25 only, never a vector (past an event's embedding cap)."""
        p = self.passages
        self._passage_event.append(event)
        self._passage_length.append(float(terms.length))
        kept = text if embed and text.strip() else None
        self.passage_text.append(kept)
        self.total_length += terms.length
        weight = _POSTING_BYTES * len(terms.counts) + (_text_bytes(kept) if kept is not None else 0)
        for term, count in terms.counts.items():
            post = self.postings.get(term)
            if post is None:
                weight += _TERM_BYTES + len(term)
                post = self.postings[term] = (array("i"), array("i"))
            post[0].append(p)
            post[1].append(count)
        self._tail_bytes += weight

    # -- dense vectors ----------------------------------------------------------------------------------

    def pending(self, limit: int) -> list[tuple[int, str]]:
        """Up to `limit` (passage, text) pairs still without a vector, oldest first (only the tail has any:
        a segment is sealed with its vectors)."""
        texts = self.passage_text
        while self._done_below < len(texts) and texts[self._done_below] is None:
            self._done_below += 1  # everything before has its vector: never scanned again
        out: list[tuple[int, str]] = []
        for p in range(self._done_below, len(texts)):
            text = texts[p]
            if text is not None:
                out.append((self._base_passage + p, text))
                if len(out) >= limit:
                    break
        return out

    def set_vectors(self, fingerprint: str, rows: Sequence[int], vectors: np.ndarray) -> None:
        """Store the vectors of passages `rows` (tail passages, unit length, from the model with
        `fingerprint`). Another model's vectors are dropped: scores are only computed within one embedding
        space (sealed segments of another model then score by BM25 alone)."""
        tail = len(self._passage_event)
        rel = np.asarray(rows, dtype=np.int64) - self._base_passage
        fresh = (rel >= 0) & (rel < tail)  # a concurrent indexer may have sealed some meanwhile: they have theirs
        if not fresh.all():
            rows, vectors = [int(r) for r, f in zip(rows, fresh.tolist(), strict=True) if f], vectors[fresh]
            if not rows:
                return
        if fingerprint != self.fingerprint or self._matrix is None or self._matrix.shape[1] != vectors.shape[1]:
            self.fingerprint = fingerprint
            self._matrix = np.zeros((max(64, tail), vectors.shape[1]), dtype=np.int8)
            self._scale = np.zeros(self._matrix.shape[0], dtype=np.float32)
            self._has_vector = np.zeros(self._matrix.shape[0], dtype=bool)
        if tail > self._matrix.shape[0]:
            size = max(tail, 2 * self._matrix.shape[0])
            grown = np.zeros((size, self._matrix.shape[1]), dtype=np.int8)
            grown[: self._matrix.shape[0]] = self._matrix
            self._matrix = grown
            self._scale = np.concatenate([self._scale, np.zeros(size - self._scale.size, np.float32)])
            self._has_vector = np.concatenate([self._has_vector, np.zeros(size - self._has_vector.size, bool)])
        idx = np.asarray(rows, dtype=np.int64) - self._base_passage
        values = np.asarray(vectors, dtype=np.float32)
        peak = np.abs(values).max(axis=1)
        peak[peak == 0] = 1.0
        self._matrix[idx] = np.rint(values / peak[:, None] * _LEVELS).astype(np.int8)
        self._scale[idx] = peak / _LEVELS
        self._has_vector[idx] = True
        texts = self.passage_text
        for p in idx.tolist():
            old = texts[p]
            if old is not None:  # the text goes, the vector's row stays (int8 + its scale)
                self._tail_bytes += values.shape[1] + 5 - _text_bytes(old)
                texts[p] = None
        self._generation += 1

    def _passage_rows(self, lo: int, hi: int) -> np.ndarray | None:
        """The vectors (float32, dequantised) of passages ``lo:hi`` that have one (one event's passages:
        all in the tail or all in one segment), or None."""
        if lo >= self._base_passage:
            if self._matrix is None:
                return None
            a, b = lo - self._base_passage, hi - self._base_passage
            have = self._has_vector[a:b] if b <= self._has_vector.size else self._has_vector[a : self._has_vector.size]
            rows = np.flatnonzero(have) + a
            if rows.size == 0:
                return None
            out: np.ndarray = self._matrix[rows].astype(np.float32) * self._scale[rows][..., None]
            return out
        for seg in self._opened():
            base = int(seg.meta["first_passage"])
            if base <= lo < base + int(seg.meta["passages"]):
                if seg.meta["fingerprint"] != self.fingerprint or seg["matrix"].shape[1] == 0:
                    return None
                rows = np.flatnonzero(seg["has_vector"][lo - base : hi - base]) + (lo - base)
                if rows.size == 0:
                    return None
                got: np.ndarray = seg["matrix"][rows].astype(np.float32) * seg["scale"][rows][..., None]
                return got
        return None

    def _passage_span(self, i: int) -> tuple[int, int]:
        if i >= self._base_event:
            k = i - self._base_event
            lo = self._first_passage[k]
            hi = self._first_passage[k + 1] if k + 1 < len(self._first_passage) else self.passages
            return lo, hi
        cols = self._cols()
        first = cols.made("first_passage")
        if first is None:  # two values, not the whole column (a request past its window never builds it)
            lo = int(cols.value_at("first_passage", i))
            return lo, int(cols.value_at("first_passage", i + 1)) if i + 1 < len(self) else self.passages
        return int(first[i]), int(first[i + 1]) if i + 1 < first.size else self.passages

    def event_vectors(self, positions: Sequence[int]) -> list[np.ndarray | None]:
        """:meth:`event_vector` of each of `positions` (ascending), their passage spans read in one gather: a
        request computes the vector of every event it moves to L2."""
        if not positions:
            return []
        cols = self._cols()
        at = np.asarray(positions, dtype=np.int64)
        first = cols.made("first_passage")
        if first is None:
            ends = np.minimum(at + 1, len(self) - 1)
            los = cols.values_at_sorted("first_passage", at).tolist()
            his = cols.values_at_sorted("first_passage", ends).tolist()
        else:
            los, his = first[at].tolist(), first[np.minimum(at + 1, len(self) - 1)].tolist()
        out = []
        for i, lo, hi in zip(positions, los, his, strict=True):
            out.append(self._event_vector(int(lo), int(hi) if i + 1 < len(self) else self.passages))
        return out

    def event_vector(self, i: int) -> np.ndarray | None:
        """One vector for event `i` (its passages' mean, renormalised), for the cold store's global search."""
        return self._event_vector(*self._passage_span(i))

    def _event_vector(self, lo: int, hi: int) -> np.ndarray | None:
        rows = self._passage_rows(lo, hi)
        if rows is None:
            return None
        v = rows.mean(axis=0)
        norm = float(np.linalg.norm(v))
        return (v / norm).astype(np.float32) if norm > 0 else None

    def passage_vector(self, p: int) -> np.ndarray | None:
        rows = self._passage_rows(p, p + 1)
        return None if rows is None else rows[0]

    def first_passage_of(self, i: int) -> int:
        return self._passage_span(i)[0]

    def passage_key(self, p: int) -> tuple[str, int]:
        """(event id, ordinal of the passage within its event): what the vector cache stores it by."""
        if p >= self._base_passage:
            event = self._passage_event[p - self._base_passage]
            return self._ids[event - self._base_event], p - self._first_passage[event - self._base_event]
        raise IndexError(f"passage {p} is sealed")

    def named(self, noun: str) -> set[str]:
        """The names the session gave to `noun` (an index term: "puppi" → {"tobi", "pixi"}), in every segment and
        the tail (memory/text/namings.py)."""
        out = set(self._namings.get(noun, ()))
        for seg in self._segments:
            out.update(seg.namings.get(noun, ()))
        return out

    def document_frequency(self, term: str) -> int:
        """How many passages contain `term` (the segments' term lists, then the tail's postings). The sealed
        part's count is kept until the next seal (a merge changes no count): a request's query asks it for each
        of its words, and each ask searched every segment's term list again."""
        memo = self._sealed_df
        if memo[0] != self._base_event:  # a seal: the sealed part grew
            memo = self._sealed_df = (self._base_event, {})
        sealed = memo[1].get(term)
        if sealed is None:
            sealed = sum(part[0].size for part in self._postings([term], self._opened(), tail=False)[0])
            if len(memo[1]) >= _SEALED_DF_KEPT:
                memo[1].clear()
            memo[1][term] = sealed
        post = self.postings.get(term)
        return sealed + (len(post[0]) if post is not None else 0)

    def document_share(self, term: str) -> float:
        """Share of passages containing `term` (what "distinctive" is measured by)."""
        return self.document_frequency(term) / self.passages if self.passages else 0.0

    def whole_units(self, mask: np.ndarray) -> np.ndarray:
        """`mask` widened to whole units: an event is in when any member of its call group is (a call
        never travels without its results)."""
        unit_of = self.unit_of
        hit = np.zeros(len(self), dtype=bool)
        hit[unit_of[mask]] = True
        out: np.ndarray = hit[unit_of]
        return out

    # -- a request's view (memory/index/view.py) ------------------------------------------------------

    def request_view(
        self,
        query: IndexQuery,
        *,
        window: int | None,
        horizon: int | None,
        keep: np.ndarray | None = None,
    ) -> RequestView:
        """The events a request ranks (memory/index/view.py): the whole session within `window` events; past
        it, the newest `window` events, the older ones the query's bounded postings name (memory/index/window.py:
        the far dense slots are among their passages), the older positions `keep` (still in L1, forced) and
        those inside the query's time cue, each with its whole unit. Needs ``horizon <= window`` (the dense
        product's passages all in the view), else the whole session."""
        n = len(self)
        if window is None or horizon is None or horizon > window or n <= window:
            return RequestView.whole(self, window=window)
        with self.reading():
            cols = self._cols()
            start = n - window
            first_recent = int(cols.value_at("first_passage", start))
            active = [(term, weight) for term, weight in query.terms.items() if weight > 0]
            postings: list[tuple[str, float, int, list[tuple[np.ndarray, np.ndarray]]]] = []
            old_slots: list[np.ndarray] = []
            read_parts = self._postings([t for t, _ in active], cols.segments)
            for (term, weight), found in zip(active, read_parts, strict=True):
                if not found:
                    continue
                df = sum(part[0].size for part in found)
                found, named_old = old_bounded(found, first_recent)
                if not found:
                    continue
                postings.append((term, weight, df, found))
                old_slots += named_old
            parts = [_NO_SLOTS]
            if old_slots:
                slots = np.unique(np.concatenate(old_slots))
                parts.append(cols.values_at("passage_event", slots).astype(np.int64))
            if keep is not None:
                parts.append(np.asarray(keep, dtype=np.int64)[keep < start])
            if query.window is not None:
                parts.append(self._old_in_time(query.window, start))
            window_units = cols.values_at("unit_of", np.arange(start, n, dtype=np.int64)).astype(np.int64)
            parts.append(np.unique(window_units[window_units < start]))  # a unit that straddles the window's start
            old = self._with_old_units(np.unique(np.concatenate(parts)), start)
            positions = np.concatenate([old, np.arange(start, n, dtype=np.int64)])
            return RequestView(self, positions, old=int(old.size), is_whole=False, postings=postings)

    def _with_old_units(self, old: np.ndarray, start: int) -> np.ndarray:
        """`old` (positions before `start`, ascending, unique) with every member before `start` of their units:
        from each unit's first member forward while the next event is the unit's (a call group's members follow
        each other in the log)."""
        if old.size == 0:
            return old
        cols = self._cols()
        grouped = old[cols.values_at("grouped", old) != 0]
        if grouped.size == 0:
            return old
        units = np.unique(cols.values_at("unit_of", grouped).astype(np.int64))
        members = [old, units]
        alive, k = units, 1
        while alive.size:
            at = alive + k
            inside = at < start
            alive, at = alive[inside], at[inside]
            if alive.size == 0:
                break
            same = cols.values_at("unit_of", at) == alive
            members.append(at[same])
            alive, k = alive[same], k + 1
        out: np.ndarray = np.unique(np.concatenate(members))
        return out

    def _old_in_time(self, window: tuple[float, float], start: int) -> np.ndarray:
        """Positions before `start` whose time is inside `window` (a time cue selects by time, whatever its age)."""
        found = [_NO_SLOTS]
        for seg in self._opened():
            lo = int(seg.meta["first_event"])
            if lo >= start:
                continue
            ts = seg["ts"][: start - lo]
            found.append(np.flatnonzero((ts >= window[0]) & (ts < window[1])) + lo)
        if self._base_event < start and len(self._ts):
            ts = np.frombuffer(self._ts, dtype=np.float64)[: start - self._base_event]
            found.append(np.flatnonzero((ts >= window[0]) & (ts < window[1])) + self._base_event)
        return np.concatenate(found).astype(np.int64)

    def positions_of_hashes(self, wanted: Any) -> np.ndarray:
        """Positions of the events whose id hashes `wanted` (an idhash.HashSet) contains: one segment at a time
        (its mapped hashes), never the whole column."""
        found = [_NO_SLOTS]
        for seg in self._opened():
            found.append(np.flatnonzero(wanted.contains(seg["hash"])) + int(seg.meta["first_event"]))
        if len(self._hash):
            tail = np.frombuffer(self._hash, dtype=np.uint64)
            found.append(np.flatnonzero(wanted.contains(tail)) + self._base_event)
        return np.concatenate(found).astype(np.int64)

    # -- scoring ----------------------------------------------------------------------------------------

    def _postings(
        self, terms: Sequence[str], segs: Sequence[Segment], *, tail: bool = True
    ) -> list[list[tuple[np.ndarray, np.ndarray]]]:
        """Per term, the (slots, term counts) of each part that has it: the segments in order (one vectorised
        lookup of all the terms per segment), then (`tail`) the tail."""
        out: list[list[tuple[np.ndarray, np.ndarray]]] = [[] for _ in terms]
        keys = [t.encode("utf-8", "surrogatepass") for t in terms]
        for seg in segs:
            vocab = seg["terms"]
            width = vocab.dtype.itemsize
            fits = [k for k, key in enumerate(keys) if len(key) <= width]
            if vocab.size == 0 or not fits:
                continue
            needles = np.array([keys[k] for k in fits], dtype=vocab.dtype)
            at = np.minimum(np.searchsorted(vocab, needles), vocab.size - 1)
            found = np.flatnonzero(vocab[at] == needles)
            if found.size == 0:
                continue
            offsets, slots, tfs = seg["term_offsets"], seg["slots"], seg["tfs"]
            los, his = offsets[at[found]].tolist(), offsets[at[found] + 1].tolist()
            for f, lo, hi in zip(found.tolist(), los, his, strict=True):
                out[fits[f]].append((slots[lo:hi], tfs[lo:hi]))
        for k, term in enumerate(terms if tail else ()):
            post = self.postings.get(term)
            if post is not None:
                out[k].append(
                    (np.frombuffer(post[0], dtype=np.int32).copy(), np.frombuffer(post[1], dtype=np.int32).copy())
                )
        return out

    def _bm25(
        self, terms: Mapping[str, float], window: int | None = None, view: RequestView | None = None
    ) -> np.ndarray:
        """Each passage's BM25 score for `terms` (with a `view`, each of the view's passages). With a `window`
        the session exceeds (events), the passages before the newest `window` events' get a word's share only
        when the word is rare among them (memory/index/window.py); the idf still counts every passage."""
        n = self.passages
        out = np.zeros(n if view is None else view.passage_count, dtype=np.float64)
        self.bm25_rows = 0
        if not terms or n == 0:
            return out
        cols = self._cols()
        avg = max(self.total_length / n, 1.0)
        first_recent = None
        if window is not None and len(self) > window:
            first_recent = int(cols.value_at("first_passage", len(self) - window))
        if view is not None and view.postings is not None:  # read, counted and bounded when the view was made
            read = view.postings
        else:
            active = [(term, weight) for term, weight in terms.items() if weight > 0]
            read = []
            read_parts = self._postings([t for t, _ in active], cols.segments)
            for (term, weight), found in zip(active, read_parts, strict=True):
                if not found:
                    continue
                df = sum(part[0].size for part in found)  # the parts' passages are disjoint
                if first_recent is not None:
                    found = old_bounded(found, first_recent)[0]
                    if not found:
                        continue
                read.append((term, weight, df, found))
        norm: np.ndarray | None = None
        once: np.ndarray | None = None
        for _term, weight, df, found in read:
            if norm is None and (first_recent is None or view is not None):
                # Each passage's length normalisation once a request, not once a posting: a long session's
                # common terms together have more postings than it has passages (a view's: as many as it has).
                # The same float32 operations on each element as on the gathered lengths, so the same values
                # (and ``tf + norm`` with tf = 1, the usual count, is ``once``, exactly).
                length = cols.column("passage_length") if view is None else view.passage_column("passage_length")
                norm = (_K1 * (1.0 - _B + _B * length / avg)).astype(np.float64)
                once = norm + 1.0
            idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
            # a word many of the session's passages say is generic here, however rare in English (rank/specific.py)
            weight = weight * specificity(df, n)
            # one set of numpy operations per term over all parts (their slots are disjoint)
            slots = np.concatenate([f[0] for f in found]) if len(found) > 1 else found[0][0]
            tf = np.concatenate([f[1] for f in found]) if len(found) > 1 else found[0][1]
            self.bm25_rows += slots.size
            if view is not None:
                slots = view.passage_index(slots)
            if norm is None:  # windowed: the normalisation of the read postings only, not of every passage
                at = (_K1 * (1.0 - _B + _B * cols.column("passage_length")[slots] / avg)).astype(np.float64)
                at_once = at + 1.0
            else:
                assert once is not None
                at, at_once = norm[slots], once[slots]
            scale = weight * idf
            if int(tf.max()) == 1:  # weight * idf * tf * (k1 + 1) / (tf + norm), each step rounded as there
                out[slots] += scale * (_K1 + 1.0) / at_once
            else:
                out[slots] += scale * tf * (_K1 + 1.0) / (tf + at)
        return out

    def _cosine(
        self,
        query: IndexQuery,
        bm25: np.ndarray | None = None,
        horizon: int | None = None,
        view: RequestView | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Best passage cosine per event (per view event), and the mask of events that have one. With a
        `horizon` the session exceeds, only the newest `horizon` events' passages and the :data:`FAR_DENSE`
        older passages with the best `bm25` (per passage) get a cosine (:meth:`scores`)."""
        n = len(self)
        first = self._cols().column("first_passage") if view is None else view.v_first
        if horizon is not None and bm25 is not None and n > horizon:
            first_recent = int(self._cols().value_at("first_passage", n - horizon))
            k0 = first_recent if view is None or view.is_whole else int(np.searchsorted(view.passages, first_recent))
            old = np.flatnonzero(bm25[:k0] > 0)
            if old.size > FAR_DENSE:
                old = np.sort(old[np.argpartition(-bm25[old], FAR_DENSE)[:FAR_DENSE]])
            slots = old if view is None or view.is_whole else view.passages[old]
            sims = self.passage_cosines_at(query, first_recent, slots, view)
        else:
            sims = self.passage_cosines_at(query, 0, _NO_SLOTS, view)
        m = first.size
        if sims is None:
            return np.zeros(m), np.zeros(m, dtype=bool)
        best = _best_of_events(sims, first)
        mask = np.isfinite(best)
        best[~mask] = 0.0
        return best, mask

    def passage_cosines_at(
        self, query: IndexQuery, since: int, slots: np.ndarray, view: RequestView | None = None
    ) -> np.ndarray | None:
        """:meth:`passage_cosines` for the passages from `since` on and at `slots` (ascending, before `since`)
        only — -inf elsewhere (:data:`DENSE_HORIZON`: the product over every sealed passage was the largest
        cost of a request that grew with its session). With a `view`, one value per view passage (every passage
        from `since` on, and each of `slots`, is the view's)."""
        if query.dense is None or query.fingerprint != self.fingerprint or self.fingerprint is None:
            return None
        dense = query.dense.astype(np.float32, copy=False)
        sims = np.full(self.passages if view is None else view.passage_count, -np.inf)
        shift = 0 if view is None else view.contiguous_from(since)
        any_vector = False
        computed = 0
        key = (self.fingerprint, dense.tobytes())
        kept = self._sealed_cosines[1] if self._sealed_cosines is not None and self._sealed_cosines[0] == key else {}
        memo: dict[Path, tuple[Layout, np.ndarray]] = {}
        for seg in self._opened():
            base, count = int(seg.meta["first_passage"]), int(seg.meta["passages"])
            if seg.meta["fingerprint"] != self.fingerprint or seg["matrix"].shape[1] != dense.size:
                continue
            if base >= since:  # wholly among the newest: kept for a turn's later requests, as passage_cosines does
                known = kept.get(seg.path)
                if known is not None and known[0] is seg.layout:
                    part = known[1]
                else:
                    part = _segment_cosines(seg, dense)
                    computed += count
                memo[seg.path] = (seg.layout, part)
                sims[base - shift : base - shift + count] = part
                any_vector = True
                continue
            a, b = np.searchsorted(slots, (base, base + count)).tolist()
            rows = np.concatenate([slots[a:b] - base, np.arange(max(since - base, 0), count)]).astype(np.int64)
            if rows.size == 0:
                continue
            # einsum, not BLAS gemv (see _segment_cosines)
            computed += rows.size
            part = np.einsum("ij,j->i", seg["matrix"][rows], dense, dtype=np.float32) * seg["scale"][rows]
            part[~seg["has_vector"][rows]] = -np.inf
            sims[base + rows if view is None else view.passage_index(base + rows)] = part
            any_vector = True
        self._sealed_cosines = (key, memo)
        tail = self._tail_cosines(dense, sims, view)  # the tail: the newest passages
        self.dense_rows = computed + max(tail, 0)
        return sims if any_vector or tail >= 0 else None

    def passage_cosines(self, query: IndexQuery) -> np.ndarray | None:
        """Each passage's cosine to the query's vector (-inf where a passage has none); None when no passage
        has one or the query has no vector in this index's space. :meth:`passage_cosines_at` with every passage
        among the newest."""
        return self.passage_cosines_at(query, 0, _NO_SLOTS)

    def _tail_cosines(self, dense: np.ndarray, sims: np.ndarray, view: RequestView | None = None) -> int:
        """The unsealed tail's cosines to `dense` written into `sims` (where a passage has a vector); the rows
        computed, or -1 when the tail has no matrix in this space. Every passage of the tail is among the newest,
        so both :meth:`passage_cosines` and :meth:`passage_cosines_at` compute all of it. `dense` may be several
        vectors (one a row: :meth:`cosines_to_events`'s sources): each passage then gets the best of them."""
        if self._matrix is None or self._matrix.shape[1] != dense.shape[-1]:
            return -1
        rows = int(min(len(self._passage_event), self._matrix.shape[0]))
        # einsum, not BLAS gemv: no thread-pool wake-ups inside a busy kernel (see score.py).
        if dense.ndim == 1:
            part = np.einsum("ij,j->i", self._matrix[:rows], dense, dtype=np.float32)
        else:
            part = np.einsum("ij,kj->ik", self._matrix[:rows], dense, dtype=np.float32).max(axis=1)
        part *= self._scale[:rows]
        have = self._has_vector[:rows]
        base = self._base_passage
        if view is None or view.is_whole:
            sims[base : base + rows][have] = part[have]
            return rows
        # a view's: the tail's passages it holds (all of them but in a rebuild that left a long tail unsealed)
        slots = base + np.flatnonzero(have)
        at = np.minimum(np.searchsorted(view.passages, slots), max(view.passages.size - 1, 0))
        inside = view.passages[at] == slots if view.passages.size else np.zeros(slots.size, dtype=bool)
        sims[at[inside]] = part[have][inside]
        return rows

    def cosines_to_events(
        self, positions: Sequence[int], horizon: int | None = None, *, view: RequestView | None = None
    ) -> np.ndarray | None:
        """Each event's best passage cosine to any of the events at `positions` (each one vector,
        :meth:`event_vector`), -inf where an event has no vector or is older than the newest `horizon` events;
        None when none of them has a vector. The query's kept cosines (:meth:`passage_cosines_at`) stay as they
        are: memory/rank/second_hop.py asks this beside a request's own query."""
        vectors = [v for i in positions if (v := self.event_vector(int(i))) is not None]
        if not vectors:
            return None
        stacked = np.stack(vectors).astype(np.float32)
        n = len(self)
        since = 0 if horizon is None or n <= horizon else int(self._cols().value_at("first_passage", n - horizon))
        sims = np.full(self.passages if view is None else view.passage_count, -np.inf, dtype=np.float32)
        shift = 0 if view is None else view.contiguous_from(since)
        for seg in self._opened():
            base, count = int(seg.meta["first_passage"]), int(seg.meta["passages"])
            lo = max(since - base, 0)
            if lo >= count or seg.meta["fingerprint"] != self.fingerprint or seg["matrix"].shape[1] != stacked.shape[1]:
                continue
            # einsum, not BLAS (see _segment_cosines); the best of the sources, then the row's scale (positive)
            part = np.einsum("ij,kj->ik", seg["matrix"][lo:], stacked, dtype=np.float32).max(axis=1)
            part *= seg["scale"][lo:]
            part[~seg["has_vector"][lo:]] = -np.inf
            sims[base + lo - shift : base + count - shift] = part
        self._tail_cosines(stacked, sims, view)
        return _best_of_events(sims, self._cols().column("first_passage") if view is None else view.v_first)

    @property
    def kinds(self) -> np.ndarray:
        """Each event's ``kind`` byte: its kind code, the says-nothing and asks bits, its speaker's slot
        (memory/rank/speakers.py)."""
        return self._cols().column("kind")

    def forget_cosines(self) -> None:
        """Drop the sealed passages' cosines kept for the last query (:meth:`_cosine`)."""
        self._sealed_cosines = None

    def forget_between_requests(self) -> None:
        """Drop what is kept for the session in use between its requests: the sealed passages' cosines and the
        sealed columns (~46 bytes a sealed event)."""
        self.forget_cosines()
        self._sealed_columns = None

    def scores(
        self,
        query: IndexQuery,
        *,
        segment: np.ndarray | None = None,
        dense_horizon: int | None = None,
        window: int | None = None,
        view: RequestView | None = None,
    ) -> np.ndarray:
        """The relevance of every event to `query` (module docstring), in log order. ``segment``: a label per
        event (the session, when one index holds several: hologram/memory/inspection.py); turns with another
        label are not each other's neighbours.

        ``dense_horizon`` (a request's ranking: :data:`DENSE_HORIZON`): in a session longer than that, the dense
        product — the one cost of a request that grew with every sealed passage — runs over the newest
        `dense_horizon` events' passages and over the :data:`FAR_DENSE` older passages that best match the
        query's words; every other older passage is scored as one without a vector is (BM25 alone).

        ``window`` (a request's ranking: memory/index/window.py's :data:`SCORE_WINDOW`): in a session longer than
        that, BM25 reads the older passages' postings only for the query's words that are rare among them.

        ``view`` (:meth:`request_view`): the relevance of the view's events only, one value each, every array
        of the ranking the view's size (memory/index/view.py); the z-scores are then taken over the view."""
        n = len(self)
        if n == 0:
            return np.zeros(0)
        with self.reading():
            cols = self._cols()
            column = cols.column if view is None else view.column
            bm25 = self._bm25(query.terms, window, view)
            first = cols.column("first_passage") if view is None else view.v_first
            lexical = zscore(_best_of_events(bm25, first)).astype(np.float64)
            dense, mask = self._cosine(query, bm25, dense_horizon, view)
            fused = lexical
            if mask.all():  # every event has a vector: the masked form below without its gathers, same values
                fused = (1.0 - DENSE_WEIGHT) * lexical + DENSE_WEIGHT * zscore(dense)
            elif mask.any():
                fused = lexical.copy()
                fused[mask] = (1.0 - DENSE_WEIGHT) * lexical[mask] + DENSE_WEIGHT * zscore(dense[mask])
            if query.window is not None:
                ts = column("ts")
                fused = fused + TIME_BOOST * ((ts >= query.window[0]) & (ts < query.window[1]))
            turn = column("turn")
            turn_starts = np.flatnonzero(np.diff(turn, prepend=-1))
            best_of_turn = np.maximum.reduceat(fused, turn_starts)
            labels = None if segment is None else segment[turn_starts]
            ordinal = turn  # each event's turn's place among the turns (the session's turns count from 0)
            if view is not None and not view.is_whole:  # the view's turns: a turn it lacks is no one's neighbour
                gaps = np.diff(turn[turn_starts]) > 1
                if gaps.any():
                    labels = np.concatenate(([0], np.cumsum(gaps)))
                ordinal = np.repeat(np.arange(turn_starts.size), np.diff(np.append(turn_starts, turn.size)))
            around = neighbour_smooth(best_of_turn, TURN_NEIGHBOUR_WEIGHTS, labels).astype(np.float64) - best_of_turn
            out: np.ndarray = fused + around[ordinal]
            if query.window is not None:  # after smoothing: the window's neighbours get no share of it
                out = out + TIME_SELECT * ((ts >= query.window[0]) & (ts < query.window[1]))
            # after smoothing: a question lends its neighbours its score and competes with less of it itself
            out = out - SAYS_NOTHING_PENALTY * ((column("kind") & SAYS_NOTHING_BIT) != 0)
            if query.speaker:  # another speaker's question points to the named one's answer (rank/speakers.py)
                kind = column("kind")
                slot = (kind >> SPEAKER_SHIFT) & MAX_SPEAKERS
                other = ((kind & ASKS_BIT) != 0) & (slot != 0) & (slot != query.speaker)
                out = out - OTHER_ASKS_PENALTY * other
            if query.month is not None:  # a month and year named: a nudge, never a selection (memory/text/monthcues.py)
                ts = column("ts")
                out = out + MONTH_BOOST * ((ts >= query.month[0]) & (ts < query.month[1]))
            return out


@dataclass(frozen=True, slots=True)
class _SegmentInfo:
    """What the index remembers of a segment between requests (its file is mapped only while read)."""

    path: Path
    first_event: int
    events: int
    first_passage: int
    passages: int
    first_seq: int
    last_seq: int
    turns: int
    fingerprint: str | None
    layout: Layout | None = None
    namings: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """A noun's names given in the segment's events (its meta's ``namings``; a segment written before: none)."""
    speakers: tuple[str, ...] = ()
    """The session's speaker labels in slot order as of this segment (its meta's ``speakers``; before: none)."""

    @property
    def end_event(self) -> int:
        return self.first_event + self.events

    @property
    def end_passage(self) -> int:
        return self.first_passage + self.passages

    @classmethod
    def of(cls, seg: Segment) -> _SegmentInfo:
        m = seg.meta
        info = cls(seg.path, int(m["first_event"]), int(m["events"]), int(m["first_passage"]),
                   int(m["passages"]), int(m["first_seq"]), int(m["last_seq"]), int(m["turns"]),
                   m["fingerprint"], seg.layout, _namings_of(m), _speakers_of(m))  # fmt: skip
        if seg["seq"].size != info.events or seg["passage_event"].size != info.passages:
            raise SegmentError(f"{seg.path.name}: array sizes do not match its meta")
        return info


#: The per-event (and per-passage) columns a request reads, by name: the tail's array and its dtype.
_TAIL_COLUMNS: dict[str, tuple[str, Any]] = {
    "seq": ("_seqs", np.int64), "hash": ("_hash", np.uint64), "cost": ("_cost", np.int32),
    "turn": ("_turn", np.int32), "ts": ("_ts", np.float64), "unit_of": ("_unit_of", np.int32),
    "first_passage": ("_first_passage", np.int32), "passage_length": ("_passage_length", np.float32),
    "kind": ("_kinds", np.uint8), "grouped": ("_grouped", np.uint8),
    "passage_event": ("_passage_event", np.int32),
}  # fmt: skip


class _Columns:
    """The whole index's columns for one request (the segments' mapped arrays + the tail's), each concatenated
    when first asked: a request ranks with cost, turn, unit and passages, and needs seq, hash and ts only at a
    few positions or for the events added since the last request (:meth:`SessionIndex.hashes_from`) — each
    column built needlessly was a copy of the whole session."""

    __slots__ = ("_made", "_parts", "derived", "generation", "n", "sealed", "segments", "tail")

    def __init__(
        self,
        generation: int,
        n: int,
        segments: list[Segment],
        tail: dict[str, tuple[array[Any], int, Any]],
        sealed: dict[str, np.ndarray] | None = None,
    ) -> None:
        self.generation, self.n, self.segments = generation, n, segments
        self.tail = tail
        """Per column: the tail's array, its length when the request began, the column's dtype."""
        self.sealed: dict[str, np.ndarray] = {} if sealed is None else sealed
        """Per column: the segments' part concatenated, shared with the index's other requests over the same
        segments (:attr:`SessionIndex._sealed_columns`)."""
        self._made: dict[str, np.ndarray] = {}
        self._parts: dict[str, tuple[list[np.ndarray], np.ndarray]] = {}
        """Per column: its sealed parts (each segment's view, or the kept concatenation) and where each ends."""
        self.derived: dict[str, np.ndarray] = {}
        """Arrays computed from the columns, kept for the request's other readers (read-only)."""

    def column(self, name: str) -> np.ndarray:
        made = self._made.get(name)
        if made is None:
            values, k, dtype = self.tail[name]
            tail = np.array(values, dtype=dtype)[:k]
            if not self.segments:
                made = self._made[name] = tail
                return made
            made = self._made[name] = np.concatenate((self.sealed_part(name), tail))
        return made

    def made(self, name: str) -> np.ndarray | None:
        """Column `name` when this request has built it already, else None."""
        return self._made.get(name)

    def value_at(self, name: str, i: int) -> Any:
        """Column `name` at position `i` (negative from the end), without building the column: a request asks
        the seq and the time of one event (its input's, the newest) and building either column for that was a
        copy of the whole session on every request of the soak's round robin, whose sessions' sealed columns
        are let go between requests (issue 39 item 7)."""
        if i < 0:
            i += self.n
        if not 0 <= i < self.n:
            raise IndexError(f"position {i} of an index of {self.n} events")
        return self.values_at(name, np.array([i], dtype=np.int64))[0]

    def values_at(self, name: str, at: np.ndarray) -> np.ndarray:
        """Column `name` at the positions `at` (each in range), without building the column: gathered from
        each segment (or the kept sealed part) and the tail — what a request reads of the seq and time columns
        for the few inputs it sends (memory's markup), a copy of the whole session otherwise."""
        made = self._made.get(name)
        if made is not None:
            picked: np.ndarray = made[at]
            return picked
        if at.size < 2 or bool((at[1:] >= at[:-1]).all()):  # ascending (the usual ask): a slice a part
            return self.values_at_sorted(name, at)
        order = np.argsort(at, kind="stable")  # any order: gathered ascending, put back where asked
        out = np.empty(at.size, dtype=self.tail[name][2])
        out[order] = self.values_at_sorted(name, at[order])
        return out

    def values_at_sorted(self, name: str, at: np.ndarray) -> np.ndarray:
        """:meth:`values_at` for ascending positions: each part's positions are one slice of `at` (found by one
        binary search a part), not a mask over all of them — a request's view gathers ~4,000 positions of each
        column it ranks with."""
        made = self._made.get(name)
        if made is not None:
            picked: np.ndarray = made[at]
            return picked
        values, _, dtype = self.tail[name]
        out = np.empty(at.size, dtype=dtype)
        # int64 once: positions in int32 (postings' slots) were cast whole at every search below; and every
        # part's end found in one search, not one call a part (a request gathers ~25 times)
        at = np.asarray(at, dtype=np.int64)
        parts, ends = self._sealed_parts(name)
        base = lo = 0
        for part, hi in zip(parts, at.searchsorted(ends).tolist(), strict=True):
            if hi > lo:
                out[lo:hi] = _slice_or_gather(part, at, lo, hi, base)
            lo, base = hi, base + part.size
        if lo < at.size:  # the tail's (a copy: no view of the growing array outlives this line)
            out[lo:] = _slice_or_gather(np.frombuffer(values, dtype=dtype), at, lo, at.size, base)
        return out

    def _sealed_parts(self, name: str) -> tuple[list[np.ndarray], np.ndarray]:
        """Column `name`'s sealed parts and their ends, looked up once a request: a long session's request view
        gathers ~25 times (its columns at its events and passages, times and seqs at a few), and each gather
        viewed every segment's array and summed their sizes anew (issue 39 item 7: 15,000 gathers over 300 late
        soak turns against 4,900 early; their own time under cProfile 0.34 -> 0.29 s with this and the slices)."""
        got = self._parts.get(name)
        if got is None:
            sealed = self.sealed.get(name)
            parts = [sealed] if sealed is not None else [s[name] for s in self.segments]
            ends = np.cumsum(np.fromiter((p.size for p in parts), dtype=np.int64, count=len(parts)))
            got = self._parts[name] = (parts, ends)
        return got

    def sealed_part(self, name: str) -> np.ndarray:
        """The segments' part of column `name`, concatenated once and kept (read-only)."""
        sealed = self.sealed.get(name)
        if sealed is None:  # a copy: the maps are closed after the request, the copy is kept
            parts = [s[name] for s in self.segments]
            sealed = np.concatenate(parts) if len(parts) > 1 else parts[0].copy()
            sealed.flags.writeable = False
            self.sealed[name] = sealed
        return sealed


def _slice_or_gather(part: np.ndarray, at: np.ndarray, lo: int, hi: int, base: int) -> np.ndarray:
    """``part[at[lo:hi] - base]`` for non-decreasing `at`: a slice when those positions are consecutive. A long
    session's request view is mostly its scoring window — the newest events one after the other — so most of
    the ~25 columns it gathers a request are whole runs of a segment or of the tail; a slice copies them where
    an index array computed each position and gathered it (issue 39 item 7: the gathers were the largest
    single part of the main thread's late-soak growth, `values_at_sorted` 28 -> 180 samples over 300 turns).
    Non-decreasing positions are consecutive exactly when their span is their count less one."""
    first = int(at[lo]) - base
    if int(at[hi - 1]) - base - first == hi - lo - 1:
        return part[first : first + hi - lo]
    gathered: np.ndarray = part[at[lo:hi] - base]
    return gathered


def roles_of(kind: np.ndarray, grouped: np.ndarray) -> np.ndarray:
    """:attr:`SessionIndex.roles` of the events whose kind bytes and grouped flags are given (elementwise)."""
    code = kind & np.uint8(KIND_MASK)
    out: np.ndarray = np.where(code == _KIND_CODES["input"], 1, 0).astype(np.uint8)
    out[(code == _KIND_CODES["response"]) & (grouped == 0)] = 2
    return out


def _namings_of(meta: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """A segment meta's namings (absent in a segment written before them, or unreadable: none)."""
    raw = meta.get("namings")
    if not isinstance(raw, dict):
        return {}
    return {str(k): tuple(str(n) for n in v) for k, v in raw.items() if isinstance(v, list)}


def _speakers_of(meta: Mapping[str, Any]) -> tuple[str, ...]:
    """A segment meta's speaker labels (absent in a segment written before them, or unreadable: none)."""
    raw = meta.get("speakers")
    if not isinstance(raw, list):
        return ()
    return tuple(str(label) for label in raw[:MAX_SPEAKERS])


def _best_of_events(values: np.ndarray, first_passage: np.ndarray) -> np.ndarray:
    """Each event's best passage value (``np.maximum.reduceat`` over its passages); `values` itself when every
    event has one passage (an event has at least one, so as many passages as events means one each), the
    common case, where reduceat's call per event is the cost."""
    n = first_passage.size
    if values.size == n and (n == 0 or int(first_passage[-1]) == n - 1):
        return values
    out: np.ndarray = np.maximum.reduceat(values, first_passage)
    return out


def _segment_cosines(seg: Segment, dense: np.ndarray) -> np.ndarray:
    """Cosine of each of a sealed segment's passages to `dense` (-inf where a passage has no vector)."""
    # einsum, not BLAS gemv: no thread-pool wake-ups inside a busy kernel (see score.py).
    part: np.ndarray = np.einsum("ij,j->i", seg["matrix"], dense, dtype=np.float32)
    part *= seg["scale"]
    part[~seg["has_vector"]] = -np.inf
    return part


def _total_length(seg: Segment) -> int:
    """A segment's total passage length, its postings checked for shape (what a request will read)."""
    offsets, terms = seg["term_offsets"], seg["terms"]
    if offsets.size != terms.size + 1 or (offsets.size and int(offsets[-1]) != seg["slots"].size):
        raise ValueError(f"{terms.size} terms, {offsets.size} offsets, {seg['slots'].size} postings")
    return round(float(seg["passage_length"].astype(np.float64).sum()))


#: Segment files whose checksum this process verified, by (path, inode, size, mtime): a session released when
#: idle ([memory] release_idle_s) is opened again by its next turn, and checking every page of its segments
#: each time was O(session) work a turn. A file rewritten or damaged since has another stamp and is checked.
_VERIFIED: OrderedDict[tuple[str, int, int, int], None] = OrderedDict()
_VERIFIED_KEPT = 4096


def _stamp(path: Path) -> tuple[str, int, int, int]:
    st = path.stat()
    return str(path), st.st_ino, st.st_size, st.st_mtime_ns


def _remember_verified(stamp: tuple[str, int, int, int]) -> None:
    _VERIFIED[stamp] = None
    _VERIFIED.move_to_end(stamp)
    while len(_VERIFIED) > _VERIFIED_KEPT:
        _VERIFIED.popitem(last=False)


def _text_bytes(text: str) -> int:
    """A str's payload as CPython holds it: one byte a character for ASCII, else two (a text with one Han
    character is stored two bytes a character; Latin-1 text takes one and emoji four, both counted as two)."""
    return len(text) if text.isascii() else 2 * len(text)


def _tier(events: int, seal: int) -> int:
    tier, size = 0, max(1, seal)
    while events >= size * MERGE_FACTOR:
        size *= MERGE_FACTOR
        tier += 1
    return tier


def _fit(values: np.ndarray, n: int, dtype: Any) -> np.ndarray:
    out = np.zeros(n, dtype=dtype)
    k = min(n, values.size)
    out[:k] = values[:k]
    return out


def _strings(parts: Sequence[np.ndarray]) -> np.ndarray:
    width = max((p.dtype.itemsize for p in parts), default=1)
    return np.concatenate([p.astype(f"S{max(width, 1)}") for p in parts])


def _merged(segs: Sequence[Segment]) -> dict[str, np.ndarray]:
    """One segment's arrays from consecutive segments (positions are global: the per-event and per-passage
    arrays concatenate; postings and tool lists are regrouped by term, slots ascending within a term)."""
    plain = ("seq", "kind", "grouped", "hash", "cost", "turn", "ts", "unit_of", "first_passage", "passage_event",
             "passage_length", "has_vector", "scale")  # fmt: skip
    out = {name: np.concatenate([s[name] for s in segs]) for name in plain}
    out["ids"] = _strings([s["ids"] for s in segs])
    dim = max(s["matrix"].shape[1] for s in segs)
    out["matrix"] = np.concatenate(
        [s["matrix"] if s["matrix"].shape[1] == dim else np.zeros((s["matrix"].shape[0], dim), np.int8) for s in segs]
    )
    for names, offsets, values in (
        ("terms", "term_offsets", ("slots", "tfs")),
        ("tools", "tool_offsets", ("tool_events",)),
    ):
        keys = _strings([s[names] for s in segs])
        counts = np.concatenate([np.diff(s[offsets]) for s in segs])
        unique, inverse = np.unique(keys, return_inverse=True)
        owner = np.repeat(inverse, counts)
        order = np.argsort(owner, kind="stable")  # segments are in order: slots stay ascending
        for v in values:
            out[v] = np.concatenate([s[v] for s in segs])[order]
        off = np.zeros(unique.size + 1, dtype=np.int64)
        np.cumsum(np.bincount(owner, minlength=unique.size), out=off[1:])
        out[names], out[offsets] = unique, off
    return out
