"""How the L3 store's values cross the pipe to its worker process (``worker.py``, ``remote.py``).

One JSON-RPC 2.0 message per line, as everywhere in the project (``hologram.rpc.framing``), by orjson; block
text may hold lone surrogates that orjson refuses, and then both sides fall back to the standard library with
``surrogatepass`` — a block comes back from the worker exactly as it went in.

Values are positional lists (a move of 10k triples is a few MB; field names on every row would double it).
"""

from __future__ import annotations

import json
from typing import Any

import orjson

from hologram.memory.graph.store import GraphBlock, GraphCounts, MoveReport, Triple

__all__ = [
    "block_from",
    "block_to",
    "counts_from",
    "counts_to",
    "decode",
    "encode",
    "report_from",
    "report_to",
    "triple_from",
    "triple_to",
]


def encode(message: dict[str, Any]) -> bytes:
    """One message → one line: orjson (the project's JSON, ~10x the standard library's speed: a request's L3
    reads are a few hundred triples), the standard library with ``surrogatepass`` for what orjson refuses
    (a lone surrogate in a block's text). Both escape every newline inside strings."""
    try:
        return orjson.dumps(message) + b"\n"
    except TypeError:  # orjson.JSONEncodeError: str is not valid UTF-8
        text = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
        return text.encode("utf-8", "surrogatepass") + b"\n"


def decode(line: bytes) -> Any:
    """One line → the message (ValueError when it is not JSON)."""
    try:
        return orjson.loads(line)
    except ValueError:  # orjson.JSONDecodeError: the bytes of a lone surrogate (see `encode`)
        return json.loads(line.decode("utf-8", "surrogatepass"))


def block_to(b: GraphBlock) -> list[Any]:
    return [b.id, b.event, b.ordinal, b.kind, b.text, b.meta, b.session, b.ts_ms]


def block_from(v: list[Any]) -> GraphBlock:
    bid, event, ordinal, kind, text, meta, session, ts_ms = v
    return GraphBlock(bid, event, int(ordinal), kind, text, meta, session, int(ts_ms))


def triple_to(t: Triple) -> list[Any]:
    return [
        t.subject, t.predicate, t.value, t.source_event, t.source_block, t.confidence, t.valid_at, t.invalid_at,
        t.created, t.id,
    ]  # fmt: skip


def triple_from(v: list[Any]) -> Triple:
    subject, predicate, value, event, block, confidence, valid_at, invalid_at, created, tid = v
    return Triple(subject, predicate, value, event, block, float(confidence), valid_at, invalid_at, float(created), tid)


def report_to(r: MoveReport) -> list[Any]:
    return [list(r.moved), list(r.already_held), r.triples]


def report_from(v: list[Any]) -> MoveReport:
    return MoveReport(tuple(v[0]), tuple(v[1]), int(v[2]))


def counts_to(c: GraphCounts) -> list[int]:
    return [c.blocks, c.entities, c.triples]


def counts_from(v: list[Any]) -> GraphCounts:
    return GraphCounts(int(v[0]), int(v[1]), int(v[2]))
