"""Measure the peers the way `tools/bench/sweep.py` measures Hologram, on demand (never in CI).

    python tools/bench/peers/run.py [--dir /tmp/hologram-peers] [--only nanobot,hermes] \
        [--json peers.json] [--with sweep.json] [--warm 5] [--launches 3]

Like uv's benchmarks against pip and poetry: each peer is installed as a newcomer would (pip into a venv
of its own; npm for OpenClaw, with the `node@24` package for the Node it requires) into a throwaway
directory (`--dir`; nothing lands in the repository), pointed at the strict mock (`hologram.testing.mock_llm`, run
out of process, answering every request with "hello") and measured: the request a one-word "hello"
costs (from what the mock receives), idle PSS of the whole process tree after one turn, launch until
ready, launch until the first answer, a warm turn end to end, install size. A peer that cannot be
installed or driven gets a one-line reason in its column; the others are still measured.

Prints one markdown table and writes it as JSON in the shape of tools/bench/peers/table.py (`--with
sweep.json` adds sweep.py's columns, matched by measure key). Times are wall-clock on a shared machine:
repeat them when they matter; sizes and memory repeat closely.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tools/, so `bench.peers` imports as a script too

from bench.peers import table
from bench.peers.common import MockProcess, PeerError, Result
from bench.peers.hermes import Hermes
from bench.peers.nanobot import Nanobot
from bench.peers.openclaw import OpenClaw
from bench.peers.peer import Peer, describe, measure
from bench.peers.qwenpaw import QwenPaw

PEERS: dict[str, type[Peer]] = {"nanobot": Nanobot, "hermes": Hermes, "qwenpaw": QwenPaw, "openclaw": OpenClaw}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def one(peer: Peer, mock: MockProcess, warm: int, launches: int) -> Result:
    peer.root.mkdir(parents=True, exist_ok=True)
    result = Result(peer.system)
    try:
        if not peer.installed():
            started = time.monotonic()
            peer.install()
            result.details["install_s"] = round(time.monotonic() - started)
            print(f"[peers] {peer.system}: installed in {result.details['install_s']} s", file=sys.stderr)
        measure(peer, mock, result, warm_turns=warm, launches=launches)
    except (PeerError, RuntimeError, OSError, KeyError, ValueError) as exc:
        result.error = f"cannot be driven: {describe(exc)}"
        print(f"[peers] {peer.system}: {result.error} (log: {peer.log})", file=sys.stderr)
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/hologram-peers"), help="throwaway install directory")
    ap.add_argument("--only", default=",".join(PEERS), help=f"comma-separated, of {', '.join(PEERS)}")
    ap.add_argument("--json", type=Path, default=None, help="write the table here as JSON")
    ap.add_argument(
        "--with", dest="with_", type=Path, action="append", default=[], help="merge this table's columns in"
    )
    ap.add_argument("--warm", type=int, default=5, help="warm turns per peer (median reported)")
    ap.add_argument("--launches", type=int, default=1, help="launches per peer; start-up cells are their median")
    ap.add_argument("--install-timeout", type=float, default=1200, help="seconds per peer's install")
    args = ap.parse_args(argv)
    names = [n.strip().lower() for n in args.only.split(",") if n.strip()]
    unknown = [n for n in names if n not in PEERS]
    if unknown:
        ap.error(f"--only: unknown peer(s) {', '.join(unknown)}; known: {', '.join(PEERS)}")
    args.dir.mkdir(parents=True, exist_ok=True)
    results = []
    for name in names:
        peer = PEERS[name](args.dir, free_port())
        peer.install_timeout = args.install_timeout
        with MockProcess(args.dir, vendor=peer.vendor) as mock:
            print(f"[peers] {peer.system}: measuring (mock at {mock.base_url})", file=sys.stderr)
            results.append(one(peer, mock, args.warm, args.launches))
    columns = []
    for r in results:
        notes = dict(r.notes)
        if r.error:
            notes = {key: r.error for key in table.MEASURES if r.values.get(key) is None} | notes
        columns.append((r.system, r.values, notes))
    doc = table.build("peers", columns)
    doc["details"] = {r.system: {"error": r.error, **r.details} for r in results}
    shown = table.merge([*[table.load(p) for p in args.with_], doc]) if args.with_ else doc
    print(table.markdown(shown))
    if args.json:
        args.json.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
        print(f"[peers] wrote {args.json}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
