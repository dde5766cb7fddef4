"""The kernel's side of the L3 worker: a :class:`~hologram.memory.graph.store.GraphStore` whose every call is a
request to ``python -m hologram.memory.graph.worker`` (that module says why the database lives there).

Synchronous on purpose: the store's callers already run it in a worker thread (``GraphMemory``), and one
request at a time under a mutex is what the in-process store did too (one connection, one mutex).

A worker that dies — a segfault in the database library, ``kill -9``, out of memory — is seen as the pipe
closing; the call raises :class:`GraphWorkerCrashed` naming the signal and what it was doing, and every later
call raises the same at once. Starting a new one is the owner's decision (``GraphMemory``, with the crash
policy). The worker's stderr is logged line by line and its last lines kept for that report.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import signal
import subprocess
import sys
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import IO, Any

from hologram.base.errors import HologramError, Problem
from hologram.memory.graph import wire
from hologram.memory.graph.store import (
    GraphBlock,
    GraphCounts,
    GraphLockedError,
    MoveReport,
    Triple,
)

__all__ = ["GraphWorkerCrashed", "WorkerGraphStore", "describe_exit"]

log = logging.getLogger("hologram.memory")

WORKER_MODULE = "hologram.memory.graph.worker"
#: How long a closing worker may take to commit and exit before it is killed.
CLOSE_TIMEOUT_S = 30.0
_TAIL = 20


class GraphWorkerCrashed(RuntimeError):
    """The graph's process ended while (or before) answering a request."""

    def __init__(self, path: Path, returncode: int | None, doing: str, stderr: Sequence[str] = ()) -> None:
        self.path = path
        self.returncode = returncode
        self.doing = doing
        self.stderr = tuple(stderr)
        last = f"; its last words: {self.stderr[-1]}" if self.stderr else ""
        super().__init__(f"the memory graph's process {describe_exit(returncode)} while {doing}{last}")


def describe_exit(returncode: int | None) -> str:
    """``-11`` → "was killed by SIGSEGV", ``1`` → "exited with status 1"."""
    if returncode is None:
        return "stopped answering"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"was killed by {name}"
    return f"exited with status {returncode}"


class WorkerGraphStore:
    """:class:`~hologram.memory.graph.store.GraphStore` in a child process (module docstring). Opening starts
    the process and opens the database there; errors at open are raised as the in-process store raises them."""

    def __init__(self, path: Path, *, backend: str = "kuzu", threads: int = 1, python: str = sys.executable) -> None:
        self.path = path
        self._mutex = threading.Lock()
        self._dead: GraphWorkerCrashed | None = None
        self._closed = False
        self._next_id = 0
        self.stderr: collections.deque[str] = collections.deque(maxlen=_TAIL)
        self._proc = subprocess.Popen(
            [python, "-m", WORKER_MODULE],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            close_fds=True,
        )
        assert self._proc.stdin is not None and self._proc.stdout is not None and self._proc.stderr is not None
        self._in: IO[bytes] = self._proc.stdin
        self._out: IO[bytes] = self._proc.stdout
        self._err_reader = threading.Thread(
            target=self._read_stderr, args=(self._proc.stderr,), name="hologram-graph-stderr", daemon=True
        )
        self._err_reader.start()
        try:
            self._call("open", {"path": str(path), "backend": backend, "threads": threads}, doing="opening the graph")
        except BaseException:
            self._stop()
            raise

    @property
    def pid(self) -> int:
        return self._proc.pid

    @property
    def returncode(self) -> int | None:
        """The process's exit status once it ended (negative: the signal that ended it), else None."""
        return self._proc.poll()

    @property
    def alive(self) -> bool:
        return self._dead is None and not self._closed and self._proc.poll() is None

    # -- the calls ---------------------------------------------------------------------------------------

    def move(self, blocks: Sequence[GraphBlock], triples: Sequence[Triple], *, now: float) -> MoveReport:
        params = {"blocks": [wire.block_to(b) for b in blocks], "triples": [wire.triple_to(t) for t in triples]}
        return wire.report_from(self._call("move", params | {"now": now}, doing=f"moving {len(blocks)} blocks"))

    def held(self, block_ids: Iterable[str]) -> set[str]:
        return set(self._call("held", {"ids": list(block_ids)}))

    def events_held(self, event_ids: Iterable[str]) -> set[str]:
        return set(self._call("events_held", {"ids": list(event_ids)}))

    def blocks(self, block_ids: Iterable[str]) -> list[GraphBlock]:
        return [wire.block_from(v) for v in self._call("blocks", {"ids": list(block_ids)})]

    def neighbourhood(self, entity: str, *, hops: int = 1, limit: int = 50) -> list[Triple]:
        if hops not in (1, 2):
            raise ValueError(f"hops={hops}: the graph is read 1 or 2 hops out")
        found = self._call("neighbourhood", {"entity": entity, "hops": hops, "limit": limit})
        return [wire.triple_from(v) for v in found]

    def triples_of_events(self, event_ids: Iterable[str]) -> list[Triple]:
        return [wire.triple_from(v) for v in self._call("triples_of_events", {"ids": list(event_ids)})]

    def forget(self, event_ids: Iterable[str]) -> int:
        return int(self._call("forget", {"ids": list(event_ids)}, doing="deleting events"))

    def entities(self) -> dict[str, str]:
        found: dict[str, str] = self._call("entities", {})
        return found

    def fact_events(self) -> set[str]:
        return set(self._call("fact_events", {}))

    def blocks_of_events(self, event_ids: Iterable[str]) -> list[GraphBlock]:
        return [wire.block_from(v) for v in self._call("blocks_of_events", {"ids": list(event_ids)})]

    def find_blocks(self, words: Sequence[str], *, limit: int = 50) -> list[tuple[GraphBlock, int]]:
        found = self._call("find_blocks", {"words": list(words), "limit": limit})
        return [(wire.block_from(b), int(n)) for b, n in found]

    def counts(self) -> GraphCounts:
        return wire.counts_from(self._call("counts", {}))

    # -- lifetime ----------------------------------------------------------------------------------------

    def close(self) -> None:
        """Ask the worker to close the database and exit (killed if it does not within the timeout)."""
        with self._mutex:
            if self._closed:
                return
            if self._dead is None and self._proc.poll() is None:
                with contextlib.suppress(GraphWorkerCrashed, OSError):
                    self._request("close", {}, doing="closing the graph")
            self._closed = True
        self._stop()

    def _stop(self) -> None:
        self._closed = True
        with contextlib.suppress(OSError):
            self._in.close()
        try:
            self._proc.wait(timeout=CLOSE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            log.error("the memory graph's process %d did not exit in %.0f s after close; killed it",
                      self._proc.pid, CLOSE_TIMEOUT_S)  # fmt: skip
            self._proc.kill()
            self._proc.wait()
        self._out.close()
        self._err_reader.join(timeout=5)

    def __enter__(self) -> WorkerGraphStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the pipe ----------------------------------------------------------------------------------------

    def _call(self, method: str, params: dict[str, Any], *, doing: str = "") -> Any:
        with self._mutex:
            if self._dead is not None:
                raise self._dead
            if self._closed:
                raise RuntimeError(f"{self.path}: the memory graph's store is closed")
            return self._request(method, params, doing=doing or f"answering {method}")

    def _request(self, method: str, params: dict[str, Any], *, doing: str) -> Any:
        self._next_id += 1
        mid = self._next_id
        try:
            self._in.write(wire.encode({"jsonrpc": "2.0", "id": mid, "method": method, "params": params}))
            self._in.flush()
            line = self._out.readline()
        except (BrokenPipeError, ConnectionResetError, ValueError):
            line = b""
        if not line:
            raise self._died(doing)
        reply = wire.decode(line)
        if reply.get("id") != mid:
            raise self._died(f"{doing} (it answered request {reply.get('id')!r}, not {mid})")
        error = reply.get("error")
        if error is not None:
            raise _raised(self.path, error)
        return reply.get("result")

    def _died(self, doing: str) -> GraphWorkerCrashed:
        try:
            code: int | None = self._proc.wait(timeout=CLOSE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            code = self._proc.wait()
        self._err_reader.join(timeout=5)  # its last lines name the cause, when there are any
        self._dead = GraphWorkerCrashed(self.path, code, doing, list(self.stderr))
        log.debug("%s: %s", self.path, self._dead)  # the owner reports it, with what it does next
        return self._dead

    def _read_stderr(self, stream: IO[bytes]) -> None:
        for raw in stream:
            line = raw.decode("utf-8", "replace").rstrip()
            if line:
                self.stderr.append(line)
                log.warning("memory graph process %d: %s", self._proc.pid, line)
        stream.close()


def _raised(path: Path, error: dict[str, Any]) -> Exception:
    """The exception the in-process store would have raised for the worker's error answer."""
    data = error.get("data") or {}
    kind = data.get("type")
    if kind == "GraphLockedError":
        return GraphLockedError(path)
    if kind == "HologramError":
        return HologramError(
            Problem(str(data.get("message")), file=data.get("file"), key=data.get("key"), hint=data.get("hint"))
        )
    if kind == "ValueError":
        return ValueError(str(error.get("message", "")).removeprefix("ValueError: "))
    return RuntimeError(f"the memory graph: {error.get('message')}")
