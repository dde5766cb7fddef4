"""The L3 store's own process: ``python -m hologram.memory.graph.worker`` (issue 39 item 8).

Kùzu is a native library; a damaged ``graph.kz`` made it segfault on open (4 KB of random bytes in the middle
of the file, three seeds of three), and inside the kernel that was the kernel's death. Here the database runs
in a child process that the kernel talks to over its stdin/stdout, one JSON-RPC 2.0 message per line
(``wire.py``), one request at a time (the store serialises its calls anyway). A segfault ends this process
only: the kernel's client (``remote.py``) sees the pipe close and reports the crash; L1/L2 and turns go on.

Requests: ``open`` (path, backend, threads) first, then the :class:`~hologram.memory.graph.store.GraphStore`
methods by name, then ``close``. An error is answered with code -32000 and ``data.type`` (``GraphLockedError``,
``HologramError`` with its problem, ``ValueError``, anything else by name), so the client raises what the
in-process store would have raised.

**Lifetime.** The process ends when its stdin closes (the kernel exited, even by ``kill -9``) or on ``close``;
it ignores SIGINT so Ctrl-C in the kernel's terminal reaches the kernel, which then closes the store cleanly
(a database killed by the terminal's SIGINT mid-move would only roll back, but the kernel decides). Its
stdout is the protocol's alone: anything the library prints goes to stderr, which the kernel logs.

``--check PATH`` (``hologram doctor``): open the graph read-only, count it, print one JSON line and exit 0;
exit 3 when another process holds it, 2 when it cannot be opened; a crash is the caller's to see (a signal).
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import importlib
import json
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

from hologram.base.errors import HologramError
from hologram.memory.graph import wire
from hologram.memory.graph.store import BACKENDS, GraphLockedError, GraphStore, open_graph_store

SERVER_ERROR = -32000
EXIT_LOCKED = 3
EXIT_UNOPENABLE = 2


def _methods(store: GraphStore) -> dict[str, Callable[[dict[str, Any]], Any]]:
    """Request name → handler of its params, each answering with ``wire`` values."""
    return {
        "move": lambda p: wire.report_to(
            store.move(
                [wire.block_from(b) for b in p["blocks"]], [wire.triple_from(t) for t in p["triples"]], now=p["now"]
            )
        ),
        "held": lambda p: sorted(store.held(p["ids"])),
        "events_held": lambda p: sorted(store.events_held(p["ids"])),
        "blocks": lambda p: [wire.block_to(b) for b in store.blocks(p["ids"])],
        "neighbourhood": lambda p: [
            wire.triple_to(t) for t in store.neighbourhood(p["entity"], hops=p["hops"], limit=p["limit"])
        ],
        "triples_of_events": lambda p: [wire.triple_to(t) for t in store.triples_of_events(p["ids"])],
        "forget": lambda p: store.forget(p["ids"]),
        "entities": lambda p: store.entities(),
        "fact_events": lambda p: sorted(store.fact_events()),
        "blocks_of_events": lambda p: [wire.block_to(b) for b in store.blocks_of_events(p["ids"])],
        "find_blocks": lambda p: [[wire.block_to(b), n] for b, n in store.find_blocks(p["words"], limit=p["limit"])],
        "counts": lambda p: wire.counts_to(store.counts()),
    }


def _error(exc: BaseException) -> dict[str, Any]:
    data: dict[str, Any] = {"type": type(exc).__name__}
    if isinstance(exc, HologramError):
        data["type"] = "GraphLockedError" if isinstance(exc, GraphLockedError) else "HologramError"
        first = exc.problems[0]
        data.update(message=first.message, file=first.file, key=first.key, hint=first.hint)
    return {"code": SERVER_ERROR, "message": f"{type(exc).__name__}: {exc}", "data": data}


def serve(requests: BinaryIO, answers: BinaryIO) -> int:
    """Answer requests until ``close`` or the end of `requests`; returns the exit status."""
    store: GraphStore | None = None
    methods: dict[str, Callable[[dict[str, Any]], Any]] = {}
    try:
        for line in requests:
            if not line.strip():
                continue
            message = wire.decode(line)
            method, params, mid = message.get("method"), message.get("params") or {}, message.get("id")
            reply: dict[str, Any] = {"jsonrpc": "2.0", "id": mid}
            try:
                if method == "open":
                    if store is None:
                        store = open_graph_store(Path(params["path"]), backend=params["backend"],
                                                 threads=params.get("threads", 1))  # fmt: skip
                        methods = _methods(store)
                    reply["result"] = {"pid": os.getpid()}
                elif method == "close":
                    reply["result"] = {}
                elif method in methods:
                    reply["result"] = methods[method](params)
                else:
                    reply["error"] = {"code": -32601, "message": f"no method {method!r} (open the store first)"}
            except Exception as exc:  # the store's error goes back to the caller, the process goes on
                reply["error"] = _error(exc)
            answers.write(wire.encode(reply))
            answers.flush()
            if method == "close":
                break
    finally:
        if store is not None:
            store.close()
    return 0


def check(path: Path, backend: str) -> int:
    """Open the graph read-only and count it (``hologram doctor``): one JSON line on stdout."""
    lock = open(f"{path}.lock", "a+b")  # noqa: SIM115 - held until exit
    try:
        fcntl.flock(lock, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        print(json.dumps({"locked": True}))
        return EXIT_LOCKED
    module = None
    for name in BACKENDS.get(backend, ()):
        with contextlib.suppress(ImportError):
            module = importlib.import_module(name)
            break
    if module is None:
        print(json.dumps({"error": f"graph backend {backend!r} is not installed"}))
        return EXIT_UNOPENABLE
    try:
        db = module.Database(str(path), read_only=True, max_num_threads=1, buffer_pool_size=64 * 1024 * 1024)
        conn = module.Connection(db)
        counts = {}
        for name, query in (
            ("blocks", "MATCH (b:Block) RETURN count(b)"),
            ("entities", "MATCH (e:Entity) RETURN count(e)"),
            ("triples", "MATCH ()-[f:Fact]->() RETURN count(f)"),
        ):
            counts[name] = int(conn.execute(query).get_all()[0][0])
    except Exception as exc:  # the library refused the file: damaged in a way it reports
        print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}))
        return EXIT_UNOPENABLE
    print(json.dumps(counts))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hologram.memory.graph.worker", description=__doc__)
    parser.add_argument("--check", metavar="PATH", help="open the graph read-only, print its counts, exit")
    parser.add_argument("--backend", default="kuzu", choices=sorted(BACKENDS))
    args = parser.parse_args(argv)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    answers = os.fdopen(os.dup(1), "wb")  # the protocol's own stdout; fd 1 becomes stderr for the library
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    if args.check:
        sys.stdout = os.fdopen(answers.fileno(), "w", closefd=False)
        try:
            return check(Path(args.check), args.backend)
        finally:
            sys.stdout.flush()
    return serve(sys.stdin.buffer, answers)


if __name__ == "__main__":
    sys.exit(main())
