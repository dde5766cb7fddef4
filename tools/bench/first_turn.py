"""The first answer after "ready" against a warm turn (issue 39 item 9: within 1.2x).

    PYTHONPATH=tools .venv/bin/python tools/bench/first_turn.py [--starts 5] [--rounds 10] [--trace] [--plugins-ready]
    PYTHONPATH=tools .venv/bin/python tools/bench/first_turn.py --ask|--http [--starts 3] [--rounds 5]
    ... [--vary]: a new sentence every turn (what a user sends) instead of "hello" each time
    ... [--jobs]: the kernel's executor jobs of the first turn and the second new session, with their CPU

Each start is a real `hologram up` of the default graph with the strict mock as its provider (instant
answers), as tools/bench/sweep.py starts it: wait for "ready" — the summary line ("Hologram is up"), which
comes once the start-up loads are done and the heap frozen, i.e. ``status``'s ``kernel.heap_frozen`` set just
before it (``--plugins-ready``: as soon as every plugin is ready, the old "ready") — then one-word turns through
the turn API, each from a new client connection — *first* (a new session), *second new* (another new session:
what a new session costs on a kernel that has answered once), then *warm* turns in that session. The
kernel's CPU of a turn is counted until it is quiet (its indexing after the answer included) and split into its
main thread (the event loop) and the others (the executor's workers: scenes, embedding, indexing). The
ratios are per start (first / median warm of the same start), reported as their median and worst.

``--http`` sends the first ``POST /v1/chat/completions`` of the http plugin (a new connection, a new session)
and then three kinds of warm request (`HTTP_KINDS`: the kept-alive connection in the same session, a new
connection in the same session, a new connection in a new session — like the first), each with the wall time and
the CPU of the kernel and of the http plugin, so the first is compared like with like as well as with what a
keep-alive client gets.

``--jobs`` lists the kernel's executor jobs in the first turn and in the second new session, each with its worker
CPU and the coroutine that submitted it (``tools/bench/diag_jobs/sitecustomize.py``).

``--trace`` records which modules the kernel imports during the first turn (an audit hook through a
``sitecustomize`` on the kernel's path, times on the system's monotonic clock): what still loads lazily on
the first answer.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/: bench, mock_llm

from bench._kernel import BenchKernel, configure_bytecode
from bench.proctree import tree
from bench.sweep import HELLO, settings_for, turn
from mock_llm import MockLLM

TRACER = """\
import sys, time
if any(a == "up" for a in sys.argv[1:3]):
    _out = open({path!r} + "/imports-%d.txt" % __import__("os").getpid(), "w", buffering=1)
    def _hook(event, args):
        if event == "import":
            _out.write("%.6f %s\\n" % (time.monotonic(), args[0]))
    sys.addaudithook(_hook)
"""


def cpu_ns(pid: int) -> int:
    """CPU time of every thread of `pid` so far, in ns (schedstat: the scheduler's clock, not 10 ms ticks)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError, ValueError, IndexError):  # a thread that just ended
            total += int((task / "schedstat").read_text().split()[0])
    return total


#: ``--vary``: each turn says something new (every turn saying "hello" may let later turns find what the first
#: one computed — a word's terms, a text's vector — where a user's next message would not).
TOPICS = ("garden", "train", "budget", "recipe", "holiday", "printer", "invoice", "violin", "marathon", "kitten")
_vary = [False]
_said = [0]


def text() -> str:
    """The next turn's input: "hello", or with ``--vary`` a sentence no earlier turn of the run said."""
    if not _vary[0]:
        return "hello"
    _said[0] += 1
    n = _said[0]
    return f"hello, a question about my {TOPICS[n % len(TOPICS)]} number {n} and the {TOPICS[(n * 5) % len(TOPICS)]}"


def main_ns(pid: int) -> int:
    """CPU time of `pid`'s main thread (its event loop) so far, in ns."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        return int(Path(f"/proc/{pid}/task/{pid}/schedstat").read_text().split()[0])
    return 0


def timed(kernel: BenchKernel, session: str | None) -> tuple[float, float, str, float, float]:
    """One turn: (wall s, the kernel's CPU s over it, session, the CPU s of its plugins' processes, the CPU s of
    the kernel's main thread). The CPU is counted until the kernel is quiet (`quiet`): a turn's indexing runs
    in worker threads after its answer, and was counted with the next turn before."""
    assert kernel.process is not None
    pid = kernel.process.pid
    others = [p for p in tree(pid) if p != pid]
    before, before_others, before_main = cpu_ns(pid), sum(cpu_ns(p) for p in others), main_ns(pid)
    wall, sid = asyncio.run(turn(kernel.data, text(), session))
    after = quiet((pid,))[0]
    plugins = (sum(cpu_ns(p) for p in others) - before_others) / 1e9
    return wall, (after - before) / 1e9, sid, plugins, (main_ns(pid) - before_main) / 1e9


def ask_start(root: Path, mock: MockLLM, rounds: int) -> dict[str, float]:
    """`--ask`: the first `hologram ask` after ready (a new process, as the issue measured it) and warm ones."""
    kernel = BenchKernel(root, settings_for(mock), builtins=True)
    try:
        kernel.start()
        while not kernel.status()["kernel"]["heap_frozen"]:
            time.sleep(0.02)
        mock.script([], default=HELLO)
        first = kernel.ask("hello")[0]
        warm = [kernel.ask("hello")[0] for _ in range(rounds)]
    finally:
        kernel.stop()
    return {"first": first, "warm": statistics.median(warm)}


def quiet(pids: tuple[int, ...], still_s: float = 0.05, limit_s: float = 2.0) -> list[int]:
    """The CPU of `pids` once none of them ran for `still_s` (at most `limit_s`): a turn's work after its answer
    (storing its end, indexing) counted with it, not with the next one."""
    last, since, deadline = [cpu_ns(p) for p in pids], time.monotonic(), time.monotonic() + limit_s
    while time.monotonic() < deadline:
        time.sleep(0.01)
        now = [cpu_ns(p) for p in pids]
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= still_s:
            break
    return last


def plugin_pid(kernel: BenchKernel, name: str) -> int:
    """The process id of plugin `name`, from the kernel's status."""
    return int(next(p["pid"] for p in kernel.status()["plugins"] if p["name"] == name))


#: ``--http``'s kinds of request after the first, each `rounds` times, interleaved so load drift spreads evenly.
#: The first request opens a connection and a session; what users send next differs by client: an OpenAI SDK
#: (or the bench's httpx.Client) keeps its connection and names the session again, a script with a new client per
#: question opens a connection each time, a new conversation a new session.
HTTP_KINDS = {
    "keep": "warm: the same connection (keep-alive), the same session",
    "conn": "warm: a new connection, the same session",
    "new": "like the first: a new connection, a new session",
}


def http_start(root: Path, mock: MockLLM, rounds: int) -> dict[str, Any]:
    """`--http`: the first ``POST /v1/chat/completions`` of the http plugin after ready (a new connection, a new
    session), then `HTTP_KINDS`' requests; per request the wall time and the CPU of the kernel and of http."""
    import json

    import httpx

    kernel = BenchKernel(root, settings_for(mock), builtins=True)
    try:
        kernel.start()
        while not kernel.status()["kernel"]["heap_frozen"]:
            time.sleep(0.02)
        mock.script([], default=HELLO)
        info = json.loads((kernel.data / "http.json").read_text(encoding="utf-8"))
        token = (kernel.data / "http-token").read_text(encoding="utf-8").strip()
        assert kernel.process is not None
        pids = (kernel.process.pid, plugin_pid(kernel, "http"))

        def client() -> httpx.Client:
            return httpx.Client(base_url=info["url"], headers={"authorization": f"Bearer {token}"}, timeout=60)

        def post(on: httpx.Client, session: str) -> tuple[float, float, float]:
            body = {"model": "hologram", "messages": [{"role": "user", "content": text()}]}
            cpu = [cpu_ns(p) for p in pids]
            started = time.perf_counter()
            on.post("/v1/chat/completions", json=body, headers={"x-hologram-session": session}).raise_for_status()
            wall = time.perf_counter() - started
            after = quiet(pids)  # the answer comes before the turn's end is stored: its CPU counted here too
            return wall, (after[0] - cpu[0]) / 1e9, (after[1] - cpu[1]) / 1e9

        samples: dict[str, list[tuple[float, float, float]]] = {kind: [] for kind in HTTP_KINDS}
        with client() as kept:
            first = post(kept, "first-turn")
            for i in range(rounds):
                samples["keep"].append(post(kept, "first-turn"))
                with client() as fresh:
                    samples["conn"].append(post(fresh, "first-turn"))
                with client() as fresh:
                    samples["new"].append(post(fresh, f"new-{i}"))
    finally:
        kernel.stop()
    row: dict[str, Any] = {"first": first}
    for kind, got in samples.items():
        row[kind] = tuple(statistics.median(s[j] for s in got) for j in range(3))
    return row


def http_report(rows: list[dict[str, Any]]) -> None:
    for i, row in enumerate(rows):
        wall, kcpu, hcpu = row["first"]
        parts = [f"first {wall * 1000:.1f} ms (kernel CPU {kcpu * 1000:.1f}, http {hcpu * 1000:.1f})"]
        parts += [f"{kind} {row[kind][0] * 1000:.1f} ms ({row[kind][1] * 1000:.1f}, {row[kind][2] * 1000:.1f})"
                  for kind in HTTP_KINDS]  # fmt: skip
        print(f"start {i}: " + ", ".join(parts))
    print("medians of the warm kinds: " + "; ".join(f"{k} = {v}" for k, v in HTTP_KINDS.items()))
    for kind, what in HTTP_KINDS.items():
        for j, measure in enumerate(("wall", "kernel CPU", "http CPU")):
            ratios = sorted(r["first"][j] / r[kind][j] for r in rows)
            print(
                f"HTTP API, first after ready / {what}, {measure}: "
                f"median {statistics.median(ratios):.2f}x, worst {ratios[-1]:.2f}x"
            )


def one_start(root: Path, mock: MockLLM, rounds: int, settle: bool = True) -> dict[str, float]:
    kernel = BenchKernel(root, settings_for(mock), builtins=True)
    try:
        kernel.start()
        while settle and not kernel.status()["kernel"]["heap_frozen"]:
            time.sleep(0.02)
        mock.script([], default=HELLO)
        began = time.monotonic()
        first, first_cpu, _, first_plugins, first_main = timed(kernel, None)
        first_end = time.monotonic()
        second, second_cpu, session, _, second_main = timed(kernel, None)
        second_end = time.monotonic()
        warm = [timed(kernel, session) for _ in range(rounds)]
        idle = []
        for _ in range(3):  # a warm turn after the kernel went idle (its idle trim ran), as the first one comes
            time.sleep(2.0)
            idle.append(timed(kernel, session)[0])
    finally:
        kernel.stop()
    return {
        "first": first, "second": second, "warm": statistics.median(w[0] for w in warm),
        "idle": statistics.median(idle), "first_cpu": first_cpu, "second_cpu": second_cpu,
        "warm_cpu": statistics.median(w[1] for w in warm),
        "first_plugins": first_plugins, "warm_plugins": statistics.median(w[3] for w in warm),
        "first_main": first_main, "second_main": second_main, "warm_main": statistics.median(w[4] for w in warm),
        "t0": began, "t1": first_end, "t2": second_end,
    }  # fmt: skip


def jobs_report(scratch: Path, row: dict[str, float]) -> None:
    """``--jobs``: the executor jobs of the first turn and of the second new session (tools/bench/diag_jobs), each
    with its worker CPU and what submitted it — which job makes the first turn's workers cost more."""
    lines = [line.split(" ", 4) for path in scratch.glob("jobs-*.txt") for line in path.read_text().splitlines()]
    for what, (t0, t1) in (("first turn", ("t0", "t1")), ("second new session", ("t1", "t2"))):
        during = [j for j in lines if row[t0] <= float(j[0]) <= row[t1]]
        print(f"  {what}: {len(during)} executor jobs, {sum(float(j[3]) for j in during):.1f} ms of worker CPU")
        for job in during:
            print(f"    {float(job[3]):6.2f} ms  {job[4]}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--starts", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--trace", action="store_true", help="list the kernel's imports during the first turn")
    ap.add_argument(
        "--plugins-ready", action="store_true", help="the first turn once every plugin is ready, before the loads"
    )
    ap.add_argument("--vary", action="store_true", help="a new sentence every turn instead of 'hello' each time")
    ap.add_argument("--jobs", action="store_true", help="list the kernel's executor jobs of the first two turns")
    ap.add_argument("--ask", action="store_true", help="time `hologram ask` (a new process each) instead")
    ap.add_argument("--http", action="store_true", help="time the HTTP API's chat completions instead")
    args = ap.parse_args()
    _vary[0] = args.vary
    rows = []
    with tempfile.TemporaryDirectory() as tmp, MockLLM("deepseek") as mock:
        scratch = Path(tmp)
        configure_bytecode(scratch)
        if args.trace:
            hook = scratch / "hook"
            hook.mkdir()
            (hook / "sitecustomize.py").write_text(TRACER.format(path=str(hook)))
            os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(hook), os.environ.get("PYTHONPATH")]))
        one_start(scratch / "warm-up", mock, 2)  # fills the bytecode cache and the page cache
        if args.jobs:
            hook = Path(__file__).resolve().parent / "diag_jobs"
            os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(hook), os.environ.get("PYTHONPATH")]))
            os.environ["HOLOGRAM_JOBS_DIR"] = str(scratch)
        if args.http:
            http_report([http_start(scratch / f"h{i}", mock, args.rounds) for i in range(args.starts)])
            return 0
        if args.ask:
            asks = [ask_start(scratch / f"a{i}", mock, args.rounds) for i in range(args.starts)]
            for i, row in enumerate(asks):
                print(f"start {i}: first {row['first'] * 1000:.0f} ms, warm median {row['warm'] * 1000:.0f} ms")
            ratios = sorted(r["first"] / r["warm"] for r in asks)
            print(
                "hologram ask, first after ready / warm: "
                f"median {statistics.median(ratios):.2f}x, "
                f"worst {ratios[-1]:.2f}x"
            )
            return 0
        for i in range(args.starts):
            for old in (scratch / "hook").glob("imports-*.txt") if args.trace else ():
                old.unlink()
            for old in scratch.glob("jobs-*.txt"):
                old.unlink()
            row = one_start(scratch / f"s{i}", mock, args.rounds, not args.plugins_ready)
            rows.append(row)
            print(
                f"start {i}: first {row['first'] * 1000:.1f} ms, second new session {row['second'] * 1000:.1f} ms, "
                f"warm median {row['warm'] * 1000:.1f} ms, warm after 2 s idle {row['idle'] * 1000:.1f} ms: "
                f"first / warm {row['first'] / row['warm']:.2f}x; kernel CPU first {row['first_cpu'] * 1000:.1f} ms, "
                f"second new session {row['second_cpu'] * 1000:.1f} ms, "
                f"warm median {row['warm_cpu'] * 1000:.1f} ms ({row['first_cpu'] / row['warm_cpu']:.2f}x); "
                f"of it the main thread {row['first_main'] * 1000:.1f}, {row['second_main'] * 1000:.1f}, "
                f"{row['warm_main'] * 1000:.1f} ms and the workers "
                f"{(row['first_cpu'] - row['first_main']) * 1000:.1f}, "
                f"{(row['second_cpu'] - row['second_main']) * 1000:.1f}, "
                f"{(row['warm_cpu'] - row['warm_main']) * 1000:.1f} ms; "
                f"the plugins' "
                f"CPU first {row['first_plugins'] * 1000:.1f} ms, warm {row['warm_plugins'] * 1000:.1f} ms",
                flush=True,
            )
            if args.jobs:
                jobs_report(scratch, row)
            if args.trace:
                for path in sorted((scratch / "hook").glob("imports-*.txt")):
                    during = []
                    for line in path.read_text().splitlines():
                        stamp, name = line.split(" ", 1)
                        if row["t0"] <= float(stamp) <= row["t1"]:
                            during.append(name)
                    if during:
                        print(f"  {path.name}: {len(during)} imports during the first turn: {', '.join(during[:60])}")
    ratios = sorted(r["first"] / r["warm"] for r in rows)
    seconds = sorted(r["second"] / r["warm"] for r in rows)
    idles = sorted(r["first"] / r["idle"] for r in rows)
    cpus = sorted(r["first_cpu"] / r["warm_cpu"] for r in rows)
    like = sorted(r["first_cpu"] / r["second_cpu"] for r in rows)
    workers = {k: statistics.median(r[f"{k}_cpu"] - r[f"{k}_main"] for r in rows) for k in ("first", "second", "warm")}
    mains = {k: statistics.median(r[f"{k}_main"] for r in rows) for k in ("first", "second", "warm")}
    print(
        "the kernel's CPU by thread, medians (first, second new session, warm) in ms: main "
        + ", ".join(f"{v * 1000:.1f}" for v in mains.values())
        + "; the other threads "
        + ", ".join(f"{v * 1000:.1f}" for v in workers.values())
    )
    print(
        f"first answer after ready / warm turn: median {statistics.median(ratios):.2f}x, worst {ratios[-1]:.2f}x; "
        f"a second new session / warm: median {statistics.median(seconds):.2f}x ({len(rows)} starts, "
        f"{args.rounds} warm turns each); first / warm after 2 s idle: median {statistics.median(idles):.2f}x, "
        f"worst {idles[-1]:.2f}x; the kernel's CPU, first / warm: median {statistics.median(cpus):.2f}x, "
        f"worst {cpus[-1]:.2f}x; first / second new session (both start a session): median "
        f"{statistics.median(like):.2f}x, worst {like[-1]:.2f}x"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
