"""HTTP channel benchmark: time to the first delta through the web API's SSE stream, next to the same turn
through the control socket, alone and under load (20 sessions streaming at once, 5 clients on one more).

    .venv/bin/python tools/bench/http_turns.py [--quick] [--json]
    .venv/bin/python tools/bench/http_turns.py --long [--sessions 28] [--calls 400] [--answer-kb 120] [--json]

A real `hologram up` with the http plugin (port 0) and the strict mock LLM in this process, answering at
once: what is measured is Hologram's path, not a model. "First delta" is the time from sending the turn
(``POST /api/turns``; ``turn/start`` on the control socket) until its first ``content.delta`` arrives at the
client. Under load, every client's events are checked: each delta once, in order, adding up to the answer —
a lost or repeated delta fails the run. The mock and the clients share this process's GIL and the machine's
two cores with the kernel; absolute numbers are this machine's, the comparison between the paths is the
point (the same turns, the same kernel, interleaved).

``--long``: the memory the http plugin and the kernel keep after long turns relayed to a web client
(tools/bench/http_long.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/: mock_llm

import argparse
import asyncio
import json
import shutil
import tempfile
import time
from typing import Any

import httpx
import orjson

from bench._kernel import BenchKernel, kernel_env_option, provider_toml
from hologram.api import turn as api
from hologram.clients import TurnClient
from mock_llm import MockLLM

REPO = Path(__file__).resolve().parents[2]
ANSWER = "".join(f"w{i} 字{i} " for i in range(30))
SESSIONS, WATCHERS = 20, 5


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def summary(values: list[float]) -> dict[str, float]:
    return {"n": len(values), "p50_ms": pct(values, 0.5) * 1e3, "p99_ms": pct(values, 0.99) * 1e3}


def checked(events: list[dict[str, Any]]) -> None:
    seqs = [e["seq"] for e in events]
    if seqs != sorted(set(seqs)) or events[-1]["type"] != "turn.ended":
        raise AssertionError(f"events out of order or repeated: {seqs}")
    text = "".join(e["text"] for e in events if e["type"] == "content.delta")
    if text != ANSWER:
        why = [e.get("message") or e.get("stop_reason") for e in events if e["type"] in ("turn.error", "turn.ended")]
        raise AssertionError(f"deltas lost or repeated: {text!r} ({why})")


class Http:
    def __init__(self, url: str, token: str, clients: int) -> None:
        limits = httpx.Limits(max_connections=clients + 10, max_keepalive_connections=clients + 10)
        self.client = httpx.AsyncClient(
            base_url=url, headers={"authorization": f"Bearer {token}"}, limits=limits, timeout=120
        )

    async def stream(self, session: str, opened: asyncio.Event, sent: list[float]) -> tuple[float, list[Any]]:
        """Events of the session's next turn; the time from ``sent[0]`` to its first delta."""
        events: list[dict[str, Any]] = []
        first = 0.0
        async with self.client.stream("GET", f"/api/sessions/{session}/events") as response:
            async for line in response.aiter_lines():
                if line == ": connected":
                    opened.set()
                elif line.startswith("data: "):
                    event = orjson.loads(line[6:])
                    events.append(event)
                    if event["type"] == "content.delta" and not first:
                        first = time.perf_counter() - sent[0]
                    if event["type"] == "turn.ended":
                        break
        return first, events

    async def turns(self, names: list[str], watchers: int, shared: str) -> list[float]:
        """One turn in each of ``names`` at once (one stream each), plus ``watchers`` streams on ``shared``."""
        sent = [0.0]
        opened = [asyncio.Event() for _ in range(len(names) + watchers)]
        tasks = [asyncio.create_task(self.stream(n, opened[i], sent)) for i, n in enumerate(names)]
        tasks += [asyncio.create_task(self.stream(shared, opened[len(names) + j], sent)) for j in range(watchers)]
        await asyncio.gather(*(e.wait() for e in opened))
        sent[0] = time.perf_counter()
        posts = [self.client.post("/api/turns", json={"text": "go", "session": n}) for n in names]
        if watchers:
            posts.append(self.client.post("/api/turns", json={"text": "go", "session": shared}))
        for response in await asyncio.gather(*posts):
            response.raise_for_status()
        results = await asyncio.gather(*tasks)
        for _, events in results:
            checked(events)
        if watchers:
            shared_events = [events for _, events in results[len(names) :]]
            if any(events != shared_events[0] for events in shared_events):
                raise AssertionError("the watchers of one session saw different events")
        return [first for first, _ in results]


async def control_turns(data: Path, names: list[str]) -> list[float]:
    """The same turns through the control socket: one connection per session, started at once."""
    clients = [await TurnClient.connect(data, client="bench") for _ in names]
    try:

        async def one(client: TurnClient, name: str) -> float:
            started = time.perf_counter()
            turn = await client.start("go", session=name)
            first = 0.0
            events = []
            async for event in turn:
                events.append(api.wire(event))
                if isinstance(event, api.ContentDelta) and not first:
                    first = time.perf_counter() - started
            checked(events)
            return first

        return list(await asyncio.gather(*(one(c, n) for c, n in zip(clients, names, strict=True))))
    finally:
        for client in clients:
            await client.aclose()


async def run(kernel: Any, rounds: int) -> dict[str, Any]:
    info = json.loads((kernel.data / "http.json").read_text())
    token = (kernel.data / "http-token").read_text().strip()
    http = Http(info["url"], token, SESSIONS + WATCHERS)
    results: dict[str, list[float]] = {"http_one": [], "control_one": [], "http_load": [], "control_load": []}
    try:
        await http.turns(["warm-up"], 0, "")  # the first turn of a start pays for imports and caches
        await control_turns(kernel.data, ["warm-up-control"])
        for r in range(rounds):  # interleaved, so a burst of machine load lands on every row
            results["http_one"] += await http.turns([f"h1-{r}"], 0, "")
            results["control_one"] += await control_turns(kernel.data, [f"c1-{r}"])
            load = [f"hl-{r}-{i}" for i in range(SESSIONS)]
            results["http_load"] += await http.turns(load, WATCHERS, f"hs-{r}")
            results["control_load"] += await control_turns(kernel.data, [f"cl-{r}-{i}" for i in range(SESSIONS)])
    finally:
        await http.client.aclose()
    return {name: summary(values) for name, values in results.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="2 rounds instead of 10")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--long", action="store_true", help="the long-turns memory run (tools/bench/http_long.py)")
    parser.add_argument("--sessions", type=int, default=28, help="--long: sessions, one long turn each")
    parser.add_argument("--calls", type=int, default=400, help="--long: tool calls a turn")
    parser.add_argument("--answer-kb", type=int, default=120, help="--long: the answer's size")
    parser.add_argument("--settings", default="", help="--long: TOML added to settings.toml (\\n for new lines)")
    parser.add_argument(
        "--kernel-env", action="append", default=[], metavar="NAME=VALUE", help="set for the kernel's process only"
    )
    options = parser.parse_args()
    kernel_env_option(options.kernel_env)
    if options.long:
        from bench import http_long

        return http_long.main(options.sessions, options.calls, options.answer_kb, options.json, options.settings)
    rounds = 2 if options.quick else 10
    root = Path(tempfile.mkdtemp(prefix="hologram-bench-http-"))
    with MockLLM("deepseek") as mock:
        mock.script([], default={"content": ANSWER})
        (root / "manifests").mkdir(parents=True)
        shutil.copy(REPO / "manifests" / "http.toml", root / "manifests" / "http.toml")
        shutil.copy(REPO / "manifests" / "http.config.schema.json", root / "manifests")  # its config_schema
        settings = "[agent]\nmax_steps = 4\n\n" + provider_toml("mock", mock.base_url, max_retries=0)
        kernel = BenchKernel(root, settings, manifests=["manifests"])
        try:
            kernel.start()
            out = asyncio.run(run(kernel, rounds))
        finally:
            kernel.stop()
            shutil.rmtree(root, ignore_errors=True)
    out["clients"] = {"sessions": SESSIONS, "watchers_of_one": WATCHERS, "rounds": rounds}
    if options.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"time to first delta, ms ({rounds} rounds; load: {SESSIONS} sessions at once + {WATCHERS} on one more)")
    print(f"{'path':<28}{'n':>6}{'p50':>10}{'p99':>10}")
    rows = [
        ("one turn, control socket", "control_one"),
        ("one turn, HTTP SSE", "http_one"),
        ("under load, control socket", "control_load"),
        ("under load, HTTP SSE", "http_load"),
    ]
    for label, key in rows:
        row = out[key]
        print(f"{label:<28}{row['n']:>6}{row['p50_ms']:>10.1f}{row['p99_ms']:>10.1f}")
    print("every client got every delta of its session once, in order")
    return 0


if __name__ == "__main__":
    sys.exit(main())
