"""The performance sweep (issue 22): one command, the product's real path, one table (and JSON).

    .venv/bin/python tools/bench/sweep.py [--quick] [--starts 5] [--soak 1000] [--json out.json]
                                          [--compare old.json] [--only start,cli,turn,footprint,request,soak,install]

Everything runs as a user runs it: `hologram build` + `hologram up` on the default graph (the shipped
manifests), the strict mock (hologram.testing.mock_llm, DeepSeek dialect, answering instantly) as the only provider,
turns through the turn API (`hologram.clients.TurnClient` over the control socket, as a channel does) and
through `hologram ask` (a new process per turn, as a person at a shell does). Rows:

* start: `hologram up` (process start) until every plugin is ready, and until the first answer (a turn is
  sent as soon as the control socket accepts one), median of ``--starts`` cold starts, for the default graph
  and with synthetic plugins added (tools/bench/synthetic_plugin.py, no delay) to 20 and 50 plugins;
* cli: `hologram --version`, `hologram status`, a warm `hologram ask`: median and p90;
* turn: turn-API latency, the first turn after ready and the warm median/p90 (one-word turn, instant mock);
  and a warm turn through the HTTP API as the peers are measured (tools/bench/peers/): a non-streamed
  ``POST /v1/chat/completions`` of the http plugin with its token, one session (``X-Hologram-Session``);
* footprint: RSS and PSS (/proc/PID/smaps_rollup) of every process of the tree and the total, idle (start-up
  heap frozen + 1 s) after an English and a Chinese turn, and the peak sampled during a tool-using turn;
* request: the first request the mock received for a one-word turn: bytes (its Content-Length), tool schemas
  (count, bytes), deferred tools named in ``tools_load`` (agent/tools.py), system prompt bytes, ≈ tokens
  (chars / 4 of the compact JSON sent, as the issue's peers table counts);
* soak: N tool-using turns (files_write, notes_search) round-robin over several sessions, English and
  Chinese, with a small ``context_window`` so every turn prunes and pruned events go to cold memory (L2);
  sampled along the way: PSS and open fds of every process, SQLite file sizes, turn latency; growth is
  reported after a warm-up (the first 10% of turns, at least 50); then (``--paired-rounds``) its end against its
  early turns side by side: a second kernel fed the soak's first 1.5 warm-ups of turns, then one turn on each
  kernel a round (bench/_paired.py) — latency growth measured on one host state, not twelve minutes apart;
* install: the size of this venv (``sys.prefix``).

Times are noisy on a shared machine (report them with that caveat); counts (bytes, fds, PSS) repeat.
``--compare old.json`` prints each numeric value of this run over the old run's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/: bench, mock_llm

from bench import _threads as threads
from bench._kernel import HOLOGRAM, BenchKernel, configure_bytecode, provider_toml, stop_on_terminate
from bench._paired import EarlyKernel, LateKernel, Plan, cpu_s, host_ticks, run_paired, steal_share
from bench.proctree import tree
from hologram.base.errors import HologramError
from hologram.clients import TurnClient
from hologram.plan.lock import read_lock
from mock_llm import MockLLM

HERE = Path(__file__).resolve().parent
Result = dict[str, Any]
HELLO = {"reasoning_content": "greet", "content": "Hello!"}
SECTIONS = ("start", "cli", "turn", "footprint", "request", "soak", "install")
ENGLISH = "Please keep a note that the meeting moved to Thursday afternoon, and check the file."
CHINESE = "请记下会议改到星期四下午了，然后检查一下文件。"


# -- measuring helpers --------------------------------------------------------------------------------------


def p90(xs: list[float]) -> float:
    ordered = sorted(xs)
    return ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]


def proc_memory_kb(pid: int) -> tuple[int, int] | None:
    """(Rss, Pss) in kB from smaps_rollup, or None if the process is gone."""
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return None
    fields = {line.split(":")[0]: int(line.split()[1]) for line in text.splitlines()[1:] if line.endswith("kB")}
    return fields.get("Rss", 0), fields.get("Pss", 0)


def proc_fds(pid: int) -> int | None:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None


def pss_by_file_kb(pid: int) -> dict[str, int]:
    """A process's PSS in kB by what is mapped: "[anonymous]" (heaps, arenas, stacks) or a file's name."""
    out: dict[str, int] = {}
    kind = "[anonymous]"
    try:
        lines = Path(f"/proc/{pid}/smaps").read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        head = line.split(maxsplit=5)
        if len(head) >= 5 and "-" in head[0] and not line.endswith(" kB"):
            name = head[5] if len(head) > 5 else ""
            kind = "[anonymous]" if not name or name.startswith("[") else name.rsplit("/", 1)[-1]
        elif line.startswith("Pss:"):
            out[kind] = out.get(kind, 0) + int(line.split()[1])
    return out


def names(kernel: BenchKernel) -> dict[int, str]:
    """pid -> a readable name: the kernel, its plugins by name, anything else by its command line."""
    status = kernel.status()
    out = {int(status["kernel"]["pid"]): "kernel"}
    out.update({int(p["pid"]): f"plugin {p['name']}" for p in status["plugins"] if p.get("pid")})
    return out


def label(pid: int, known: dict[int, str]) -> str:
    if pid in known:
        return known[pid]
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return f"pid {pid}"
    words = [w.decode(errors="replace") for w in cmd if w]
    tail = " ".join(w.rsplit("/", 1)[-1] for w in words[:4])
    return "zygote" if "zygote" in tail else tail[:40]


def snapshot(kernel: BenchKernel, known: dict[int, str] | None = None) -> dict[str, dict[str, float]]:
    """Every process of the tree: {name: {rss_mb, pss_mb, fds}} (MB = MiB, as /proc counts); `known`: the
    names from the kernel's status, when the caller has them (a sampler must not wait on the kernel)."""
    assert kernel.process is not None
    known = names(kernel) if known is None else known
    out: dict[str, dict[str, float]] = {}
    for pid in tree(kernel.process.pid):
        mem, fds = proc_memory_kb(pid), proc_fds(pid)
        if mem is None or fds is None:
            continue
        name = label(pid, known)
        while name in out:
            name += "'"
        out[name] = {"rss_mb": mem[0] / 1024, "pss_mb": mem[1] / 1024, "fds": fds}
    return out


def total(snap: dict[str, dict[str, float]], key: str) -> float:
    return sum(p[key] for p in snap.values())


def wait_idle(kernel: BenchKernel, timeout: float = 60) -> None:
    """Until the start-up heap is frozen (models loaded), then one more second (as cold_open.py)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not kernel.status()["kernel"]["heap_frozen"]:
        time.sleep(0.1)
    time.sleep(1.0)


@contextmanager
def peak_sampler(kernel: BenchKernel, every: float = 0.05) -> Iterator[dict[str, Any]]:
    """Samples the tree in a thread while the body runs; yields {"total_pss_mb", "per_process"} maxima."""
    peak: dict[str, Any] = {"total_pss_mb": 0.0, "total_rss_mb": 0.0, "per_process": {}}
    stop = threading.Event()
    known = names(kernel)

    def run() -> None:
        while not stop.is_set():
            snap = snapshot(kernel, known)
            peak["total_pss_mb"] = max(peak["total_pss_mb"], total(snap, "pss_mb"))
            peak["total_rss_mb"] = max(peak["total_rss_mb"], total(snap, "rss_mb"))
            for name, row in snap.items():
                peak["per_process"][name] = max(peak["per_process"].get(name, 0.0), row["pss_mb"])
            stop.wait(every)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield peak
    finally:
        stop.set()
        thread.join()


def busy_step() -> dict[str, Any]:
    """The peak-footprint turn: every kind of tool at once, a shell command and a program running for a while."""
    code = "import time\nxs = list(range(200000))\ntime.sleep(0.8)\nprint(len(xs))\n"
    calls = [
        {"id": "s{n}", "name": "shell_run", "arguments": json.dumps({"command": "sleep 0.8; echo done"})},
        {"id": "c{n}", "name": "code_run", "arguments": json.dumps({"code": code})},
        {"id": "f{n}", "name": "files_write", "arguments": json.dumps({"path": "peak.txt", "content": "x\n"})},
        {"id": "n{n}", "name": "notes_create", "arguments": json.dumps({"title": "peak", "body": "the meeting"})},
    ]  # fmt: skip
    return {
        "by_last_role": {
            "user": {"reasoning_content": "use the tools", "tool_calls": calls},
            "tool": {"reasoning_content": "done", "content": "all done"},
        }
    }


def tool_step(session_file: str = "soak.txt") -> dict[str, Any]:
    """One tool-using turn for the mock: a file write and a notes search, then an answer."""
    calls = [
        {"id": "f{n}", "name": "files_write", "arguments": json.dumps({"path": session_file, "content": "x\n" * 20})},
        {"id": "n{n}", "name": "notes_search", "arguments": json.dumps({"query": "meeting thursday"})},
    ]  # fmt: skip
    return {
        "by_last_role": {
            "user": {"reasoning_content": "use the tools", "tool_calls": calls},
            "tool": {"reasoning_content": "done", "content": "Noted; the file is fine. " * 8},
        }
    }


def settings_for(mock: MockLLM, *, context_window: int | None = None) -> str:
    extra: dict[str, Any] = {"max_retries": 0, "timeout_s": 30}
    if context_window:
        extra["context_window"] = context_window
    return (
        "[agent]\nmax_steps = 4\ntool_timeout_s = 30\n\n"
        + provider_toml("mock", mock.base_url, **extra)
        + '\n[plugins.shell]\nmode = "allow"\n\n[plugins.code]\nmode = "allow"\n'
    )


def answered(ended: Any, events: Sequence[Any] = ()) -> None:
    """A benchmark of failing turns measures the failure path: stop at the first one, saying why (the turn's
    ``turn.failed`` messages among its `events`)."""
    if ended.stop_reason != "answer":
        failed = [f"{e.kind}: {e.message}" for e in events if getattr(e, "type", "") == "turn.error"]
        why = "; ".join(failed) or ended.errors or ended.output
        raise RuntimeError(f"a turn ended with {ended.stop_reason!r}: {why!r}")


async def turn(data: Path, text: str, session: str | None = None) -> tuple[float, str]:
    """One turn through the turn API: (seconds from the request to its end, session id)."""
    async with await TurnClient.connect(data, client="sweep") as client:
        started = time.perf_counter()
        stream = await client.start(text, session=session)
        ended = await stream.result()
        elapsed = time.perf_counter() - started
    answered(ended)
    return elapsed, stream.session or ""


# -- start ----------------------------------------------------------------------------------------------------


def default_plugin_count(root: Path) -> int:
    """How many plugins the default graph has: what `hologram build` puts in the lock (built-ins + installed)."""
    lock = root / "default.lock"
    subprocess.run([*HOLOGRAM, "build", "-o", str(lock)], check=True, capture_output=True, cwd=root)
    return len(read_lock(lock).plugins)


def synthetic_manifests(directory: Path, count: int) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        (directory / f"s{i:03d}.toml").write_text(
            "[plugin]\n"
            f'name = "s{i:03d}"\nversion = "1.0.0"\n'
            f'run = {{ module = "synthetic_plugin", env = {{ PYTHONPATH = "{HERE}" }} }}\n\n'
            f'[facilities]\nprovides = ["sweep.s{i:03d}"]\nrequires = ["kernel.tools"]\n\n'
            "[config]\ndelay = 0\n",
            encoding="utf-8",
        )


def cold_start(kernel: BenchKernel, timeout: float = 90) -> tuple[float, float, int]:
    """(seconds until every plugin is ready, seconds until the first answer, plugins) of one `hologram up`: the
    turn is sent the moment the control socket accepts a client, and the readiness poll runs beside it."""
    plugins = 0

    async def run(started: float) -> tuple[float, float]:
        deadline = time.monotonic() + timeout
        while True:
            assert kernel.process is not None
            if kernel.process.poll() is not None:
                raise RuntimeError(f"hologram up exited with {kernel.process.returncode}")
            try:
                client = await TurnClient.connect(kernel.data, client="sweep")
                break
            except (HologramError, OSError):
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.01)
        async with client:

            async def ready() -> float:
                nonlocal plugins
                while time.monotonic() < deadline:
                    status = await client.connection.request("status", {})
                    plugins = len(status["plugins"])
                    if all(p["state"] == "ready" or p.get("on_demand") for p in status["plugins"]):
                        return time.perf_counter() - started
                    await asyncio.sleep(0.01)
                raise RuntimeError("the graph did not get ready")

            async def answer() -> float:
                stream = await client.start("hello")
                answered(await stream.result())
                return time.perf_counter() - started

            ready_s, answer_s = await asyncio.gather(ready(), answer())
        return ready_s, answer_s

    stop_on_terminate()
    started = time.perf_counter()
    kernel.process = subprocess.Popen(
        [*HOLOGRAM, "up", "--port", "0", "--lock", str(kernel.lock), "--data", str(kernel.data)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=kernel.root,
        text=True,
    )
    try:
        ready_s, answer_s = asyncio.run(run(started))
    finally:
        kernel.stop()
    return ready_s, answer_s, plugins


def measure_start(root: Path, mock: MockLLM, starts: int, sizes: list[int]) -> Result:
    mock.script([], default=HELLO)
    base = sizes[0]
    kernels: dict[int, BenchKernel] = {}
    for size in sizes:
        where = root / f"start-{size}"
        extra = max(0, size - base)
        if extra:
            synthetic_manifests(where / "synthetic", extra)
        kernels[size] = BenchKernel(where, settings_for(mock), builtins=True, manifests=["synthetic"] if extra else [])
        cold_start(kernels[size])  # warm: bytecode, page cache, the models' files
    seen: dict[int, list[tuple[float, float, int]]] = {size: [] for size in sizes}
    for i in range(starts):  # interleaved, so a burst of load lands on every size
        for size in sizes if i % 2 == 0 else sizes[::-1]:
            seen[size].append(cold_start(kernels[size]))
    out: Result = {}
    for size in sizes:
        key = "default" if size == base else str(size)
        out[key] = {
            "plugins": seen[size][-1][2],
            "ready_s": statistics.median(r for r, _, _ in seen[size]),
            "first_answer_s": statistics.median(a for _, a, _ in seen[size]),
            "runs": len(seen[size]),
        }
    return out


# -- cli, turn, footprint, request ------------------------------------------------------------------------------


def timed(argv: list[str], rounds: int) -> dict[str, float]:
    samples = []
    for _ in range(rounds + 1):
        started = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True)
        samples.append(time.perf_counter() - started)
    samples = samples[1:]  # the first warms the bytecode and page cache
    return {"median_s": statistics.median(samples), "p90_s": p90(samples), "runs": len(samples)}


def measure_cli(kernel: BenchKernel, mock: MockLLM, rounds: int) -> Result:
    mock.script([], default=HELLO)
    data = ["--data", str(kernel.data)]
    return {
        "version": timed([*HOLOGRAM, "--version"], rounds),
        "status": timed([*HOLOGRAM, "status", *data], rounds),
        "ask": timed([*HOLOGRAM, "ask", *data, "hello"], rounds),
    }


def measure_turns(kernel: BenchKernel, mock: MockLLM, rounds: int) -> Result:
    """The first turn-API turn after ready (called right after start), then warm turns in one session."""
    mock.script([], default=HELLO)
    first, session = asyncio.run(turn(kernel.data, "hello"))
    warm = [asyncio.run(turn(kernel.data, "hello", session))[0] for _ in range(rounds)]
    return {"first_s": first, "warm_median_s": statistics.median(warm), "warm_p90_s": p90(warm), "runs": rounds}


def measure_http_turns(kernel: BenchKernel, mock: MockLLM, rounds: int) -> Result:
    """Warm one-word turns through the OpenAI-compatible endpoint of the http plugin, in one session, as
    tools/bench/peers/ drives every peer (a new request each, non-streamed, the answer read whole)."""
    import httpx

    mock.script([], default=HELLO)
    info = json.loads((kernel.data / "http.json").read_text(encoding="utf-8"))
    token = (kernel.data / "http-token").read_text(encoding="utf-8").strip()
    headers = {"authorization": f"Bearer {token}", "x-hologram-session": "sweep-http"}
    body = {"model": "hologram", "messages": [{"role": "user", "content": "hello"}]}
    times: list[float] = []
    with httpx.Client(base_url=info["url"], headers=headers, timeout=60) as client:
        for i in range(rounds + 1):  # the first one opens the session and pays the plugin's lazy imports
            started = time.perf_counter()
            answer = client.post("/v1/chat/completions", json=body)
            elapsed = time.perf_counter() - started
            answer.raise_for_status()
            content = answer.json()["choices"][0]["message"]["content"]
            if content != HELLO["content"]:
                raise RuntimeError(f"the HTTP API answered {content!r}")
            if i:
                times.append(elapsed)
    return {"warm_median_s": statistics.median(times), "warm_p90_s": p90(times), "runs": rounds}


def measure_footprint(kernel: BenchKernel, mock: MockLLM) -> Result:
    mock.script([], default=HELLO)
    asyncio.run(turn(kernel.data, "Hello, how are you today?"))
    asyncio.run(turn(kernel.data, "你好，今天过得怎么样？"))
    wait_idle(kernel)
    idle = snapshot(kernel)
    mock.script([], default=busy_step())
    with peak_sampler(kernel) as peak:
        asyncio.run(turn(kernel.data, ENGLISH))
    return {
        "idle": {"processes": idle, "total_rss_mb": total(idle, "rss_mb"), "total_pss_mb": total(idle, "pss_mb")},
        "peak_tool_turn": peak,
    }


def measure_request(kernel: BenchKernel, mock: MockLLM) -> Result:
    mock.reset()
    mock.script([], default=HELLO)
    asyncio.run(turn(kernel.data, "hello"))
    request = mock.requests[0]
    body = request.body
    # The body as it went over the wire (httpx: compact separators); bytes from its Content-Length, as the
    # guard and tools/bench/peers count them, and chars / 4 of the same compact JSON.
    raw = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
    tools = body.get("tools") or []
    system = "".join(str(m.get("content") or "") for m in body["messages"] if m.get("role") == "system")
    schema_bytes = len(json.dumps(tools, ensure_ascii=False, separators=(",", ":")).encode())
    load = next((t["function"] for t in tools if t["function"]["name"] == "tools_load"), None)
    return {
        "bytes": int(request.headers.get("content-length") or len(raw.encode())),
        "tokens_approx": len(raw) // 4,
        "tools": len(tools),
        "tools_named": len(load["description"].split(":", 1)[1].split(".", 1)[0].split(",")) if load else 0,
        "tool_schema_bytes": schema_bytes,
        "system_prompt_bytes": len(system.encode()),
    }


# -- soak -----------------------------------------------------------------------------------------------------


def sqlite_sizes(data: Path) -> dict[str, int]:
    """Bytes of every SQLite file under the data directory (with its -wal), by path relative to it."""
    out: dict[str, int] = {}
    for path in sorted(data.rglob("*.db")):
        size = path.stat().st_size
        wal = path.with_name(path.name + "-wal")
        out[str(path.relative_to(data))] = size + (wal.stat().st_size if wal.exists() else 0)
    return out


def private_kb(pid: int) -> dict[str, int]:
    """A process's Anonymous and private (Private_Clean + Private_Dirty) kB from smaps_rollup: in a process
    forked from the zygote, growth of private memory with flat anonymous memory is copy-on-write of inherited
    pages (bounded by what was inherited), growth of anonymous memory is new memory."""
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return {}
    fields = {line.split(":")[0]: int(line.split()[1]) for line in text.splitlines()[1:] if line.endswith("kB")}
    return {
        "anon_kb": fields.get("Anonymous", 0),
        "private_kb": fields.get("Private_Clean", 0) + fields.get("Private_Dirty", 0),
    }


def _threads_seen(samples: list[dict[str, Any]], base: dict[str, Any], last: dict[str, Any]) -> dict[str, Any]:
    """The kernel's threads and glibc thread heaps after the warm-up and at the end, and the most seen: a thread
    started after the warm-up is a malloc arena the baseline did not have (tools/bench/_threads.py)."""
    seen = [s["kernel_threads"] for s in samples if s.get("kernel_threads")]
    if not seen or not base.get("kernel_threads") or not last.get("kernel_threads"):
        return {}
    a, b = base["kernel_threads"], last["kernel_threads"]
    return {
        "after_warmup": a["threads"],
        "end": b["threads"],
        "max": max(t["threads"] for t in seen),
        "heaps_after_warmup": a["thread_heaps"],
        "heaps_end": b["thread_heaps"],
        "arenas_mb_after_warmup": a["anon_mb_by_kind"].get("thread_arena"),
        "arenas_mb_end": b["anon_mb_by_kind"].get("thread_arena"),
    }


def soak_text(i: int) -> str:
    """The soak's input for its turn `i`: English and Chinese in turn, numbered."""
    return f"{ENGLISH if i % 2 == 0 else CHINESE} ({i})"


def early_kernel_at(root: Path, settings: str) -> EarlyKernel:
    """How the side-by-side part starts its early kernel: the default graph in `root` with the soak's `settings`;
    stopped again if it does not get ready (no kernel outlives the sweep)."""

    def start() -> tuple[Path, int, Callable[[], None]]:
        early = BenchKernel(root, settings, builtins=True)
        try:
            early.start()
            pid = int(early.status()["kernel"]["pid"])
        except BaseException:
            early.stop()
            raise
        return early.data, pid, early.stop

    return start


def measure_soak(
    kernel: BenchKernel,
    mock: MockLLM,
    turns: int,
    sessions: int,
    log: Callable[[str], None],
    *,
    early_kernel: EarlyKernel | None = None,
    paired_rounds: int = 200,
) -> Result:
    """The soak; with `early_kernel`, then its end against its early turns side by side (bench/_paired.py)."""
    mock.reset()
    mock.script([], default=tool_step())
    warmup = max(50, turns // 10)
    every = max(10, turns // 20)
    samples: list[dict[str, Any]] = []
    latencies: list[float] = []
    ids: list[str | None] = [None] * sessions
    started = time.perf_counter()
    kernel_pid = int(kernel.status()["kernel"]["pid"])
    known = names(kernel)
    cpu_mark = [cpu_s(kernel_pid), 0]  # the kernel's CPU seconds at the last sample, and that sample's turn

    async def run() -> None:
        async with await TurnClient.connect(kernel.data, client="sweep-soak") as client:
            for i in range(turns):
                slot = i % sessions
                text = soak_text(i)
                t0 = time.perf_counter()
                stream = await client.start(text, session=ids[slot])
                answered(await stream.result())
                latencies.append(time.perf_counter() - t0)
                ids[slot] = stream.session
                if (i + 1) % every == 0 or i + 1 == warmup:
                    with mock.state.lock:  # the mock keeps every request; that is the bench's memory, not ours
                        sent = [r.body for r in mock.state.requests if isinstance(r.body, dict)]
                        mock.state.requests.clear()
                    most = max(sent, key=lambda b: len(b.get("messages", [])))
                    snap = snapshot(kernel)
                    window = latencies[-every:]
                    mapped = pss_by_file_kb(kernel_pid)
                    cpu_now = cpu_s(kernel_pid)
                    cpu_per_turn = (cpu_now - cpu_mark[0]) / (i + 1 - cpu_mark[1])
                    cpu_mark[:] = [cpu_now, i + 1]
                    anon_pss = mapped.get("[anonymous]", 0) / 1024
                    for pid in tree(kernel.process.pid) if kernel.process is not None else []:
                        row = snap.get(label(pid, known))
                        if row is not None:
                            row.update({k: v / 1024 for k, v in private_kb(pid).items()})
                    samples.append(
                        {
                            "turn": i + 1,
                            "pss_mb": total(snap, "pss_mb"),
                            "fds": int(total(snap, "fds")),
                            "processes": snap,
                            "sqlite_bytes": sqlite_sizes(kernel.data),
                            "latency_median_s": statistics.median(window),
                            "kernel_cpu_ms_per_turn": 1000 * cpu_per_turn,
                            "max_messages": len(most.get("messages", [])),
                            "kernel_pss_kb_by_mapping": mapped,
                            "max_request_bytes": max(len(json.dumps(b)) for b in sent),
                            # the kernel alone (issue 39 item 7 is about its memory): PSS and anonymous MB
                            "kernel_pss_mb": snap.get("kernel", {}).get("pss_mb"),
                            "kernel_anon_mb": snap.get("kernel", {}).get("anon_kb"),
                            # its PSS in two parts: the heap, and file pages (libraries) whose share moves with
                            # what other processes map the same files
                            "kernel_pss_anon_mb": anon_pss,
                            "kernel_pss_file_mb": sum(mapped.values()) / 1024 - anon_pss,
                            "kernel_cpu_s": cpu_now,
                            # how fast this host runs Python right now (one round of calibration_ms, in the
                            # bench's process): the normalised latency line below divides by it
                            "calibration_ms": calibration_ms(rounds=1),
                            # the host's CPU ticks, stolen and all, since boot (the windows' steal share)
                            "host_ticks": host_ticks(),
                            # its threads and glibc heaps (a thread started late brings a malloc arena)
                            "kernel_threads": threads.census(kernel_pid),
                        }
                    )
                    log(
                        f"  soak turn {i + 1}/{turns}: PSS {samples[-1]['pss_mb']:.1f} MB, fds {samples[-1]['fds']}, "
                        f"latency {samples[-1]['latency_median_s'] * 1000:.0f} ms, "
                        f"kernel CPU {samples[-1]['kernel_cpu_ms_per_turn']:.1f} ms a turn, "
                        f"request ≤ {samples[-1]['max_messages']} messages / {samples[-1]['max_request_bytes']:,} B, "
                        f"{(i + 1) / (time.perf_counter() - started):.1f} turns/s"
                    )
                    log(f"    kernel anonymous {samples[-1]['kernel_anon_mb'] or 0:.1f} MB; "
                        f"{threads.line(samples[-1]['kernel_threads'])}")  # fmt: skip

    asyncio.run(run())
    elapsed = time.perf_counter() - started
    side_by_side: Result = {}
    if early_kernel is not None:  # after the last sample: a second kernel would share the first one's pages

        def tidy() -> None:
            with mock.state.lock:
                mock.state.requests.clear()

        early_turns = warmup * 3 // 2  # the middle of the windowed figures' early window (warm-up → 2 × warm-up)
        log(f"paired: an early kernel fed {early_turns} turns, then {paired_rounds} rounds of a turn on each")
        plan = Plan(early_turns, paired_rounds, feed=soak_text, check=answered, tidy=tidy, log=log)
        side_by_side = run_paired(LateKernel(kernel.data, ids, turns, kernel_pid), early_kernel, plan)
    rejected = len(mock.rejections)
    base = next(s for s in samples if s["turn"] >= warmup)
    last = samples[-1]
    per_process = {
        name: {
            "pss_growth_pct": 100 * (row["pss_mb"] / base["processes"][name]["pss_mb"] - 1),
            "fd_growth": int(row["fds"] - base["processes"][name]["fds"]),
            **{
                f"{key[:-3]}_growth_mb": row[key] - base["processes"][name][key]
                for key in ("anon_kb", "private_kb")
                if key in row and key in base["processes"][name]
            },
        }
        for name, row in last["processes"].items()
        if name in base["processes"]
    }
    before, after = base["kernel_pss_kb_by_mapping"], last["kernel_pss_kb_by_mapping"]
    grown = {k: (after.get(k, 0) - before.get(k, 0)) / 1024 for k in set(before) | set(after)}
    kernel_growth = dict(sorted(((k, v) for k, v in grown.items() if abs(v) >= 0.5), key=lambda kv: -abs(kv[1])))
    early = (
        statistics.median(latencies[warmup : warmup + every]) if turns > warmup + every else base["latency_median_s"]
    )
    kernel_mem = _kernel_memory(samples, base, last)
    steady = _windowed(samples, latencies, warmup)
    after = [s for s in samples if s["turn"] > warmup]  # CPU a turn over the sample windows after the warm-up
    cpu_early = after[0]["kernel_cpu_ms_per_turn"] if after else base["kernel_cpu_ms_per_turn"]
    return {
        "turns": turns,
        "sessions": sessions,
        "warmup_turns": warmup,
        "seconds": elapsed,
        "turns_per_s": turns / elapsed,
        "pss_after_warmup_mb": base["pss_mb"],
        "pss_end_mb": last["pss_mb"],
        "pss_growth_pct": 100 * (last["pss_mb"] / base["pss_mb"] - 1),
        "fds_after_warmup": base["fds"],
        "fds_end": last["fds"],
        "fd_growth": last["fds"] - base["fds"],
        "latency_early_s": early,
        "latency_end_s": last["latency_median_s"],
        "latency_ratio": last["latency_median_s"] / early,
        "kernel_cpu_ms_per_turn_early": cpu_early,
        "kernel_cpu_ms_per_turn_end": last["kernel_cpu_ms_per_turn"],
        "kernel_cpu_ratio": last["kernel_cpu_ms_per_turn"] / cpu_early,
        "sqlite_after_warmup": base["sqlite_bytes"],
        "sqlite_end": last["sqlite_bytes"],
        "mock_rejections": rejected,
        "max_messages_end": last["max_messages"],
        "max_request_bytes_end": last["max_request_bytes"],
        "per_process": per_process,
        **kernel_mem,
        **({"windowed": steady} if steady else {}),
        **({"paired": side_by_side} if side_by_side else {}),
        "kernel_pss_growth_mb_by_mapping": kernel_growth,
        "kernel_threads": _threads_seen(samples, base, last),
        "samples": [
            {k: v for k, v in s.items() if k not in ("processes", "kernel_pss_kb_by_mapping")} for s in samples
        ],
    }


def _kernel_memory(samples: list[dict[str, Any]], base: dict[str, Any], last: dict[str, Any]) -> Result:
    """The kernel's own PSS after the warm-up and at the end, its growth, and its anonymous memory's growth per
    1,000 turns (a least-squares slope over the samples after the warm-up, so one sample's swing between two
    heap trims does not decide it)."""
    if base.get("kernel_pss_mb") is None or last.get("kernel_pss_mb") is None:
        return {}
    out: Result = {
        "kernel_pss_after_warmup_mb": base["kernel_pss_mb"],
        "kernel_pss_end_mb": last["kernel_pss_mb"],
        "kernel_pss_growth_pct": 100 * (last["kernel_pss_mb"] / base["kernel_pss_mb"] - 1),
    }
    points = [
        (s["turn"], s["kernel_anon_mb"]) for s in samples if s["turn"] >= base["turn"] and s.get("kernel_anon_mb")
    ]
    if len(points) >= 2:
        mx = statistics.fmean(t for t, _ in points)
        my = statistics.fmean(a for _, a in points)
        slope = sum((t - mx) * (a - my) for t, a in points) / sum((t - mx) ** 2 for t, _ in points)
        out["kernel_anon_mb_per_1000_turns"] = 1000 * slope
        out["kernel_anon_growth_mb"] = points[-1][1] - points[0][1]
    return out


def _windowed(samples: list[dict[str, Any]], latencies: list[float], window: int) -> Result:
    """The same ratios as the summary's, each side a window of `window` turns (the warm-up's length) rather
    than one sample: the first window after the warm-up (turns `window` → 2 × `window`) against the last
    (`turns - window` → `turns`). Memory: the median of the samples in each window (one sample can fall in a
    trough of the heap's trim cycle); latency: the median of every turn's latency in each window; kernel CPU
    a turn: the kernel's CPU seconds over each window over its turns (CPU time is what a loaded host's
    wall-clock noise leaves out). An addition beside the summary's one-sample figures, which stay as they are
    (the target's definition). Empty when the run is too short for two windows that do not overlap."""
    turns = len(latencies)
    if turns < 3 * window or not samples or "kernel_cpu_s" not in samples[0]:
        return {}
    first = [s for s in samples if window <= s["turn"] <= 2 * window]
    end = [s for s in samples if s["turn"] >= turns - window]
    out: Result = {"window_turns": window, "first": [window, 2 * window], "end": [turns - window, turns]}

    def both(key: str, name: str) -> None:
        a = [s[key] for s in first if s.get(key) is not None]
        b = [s[key] for s in end if s.get(key) is not None]
        if a and b:
            early, late = statistics.median(a), statistics.median(b)
            out[name] = {"early": early, "end": late, "growth": late - early, "ratio": late / early if early else 0}

    both("kernel_pss_mb", "kernel_pss_mb")
    both("kernel_pss_anon_mb", "kernel_pss_anon_mb")
    both("kernel_pss_file_mb", "kernel_pss_file_mb")
    both("kernel_anon_mb", "kernel_anon_mb")
    early_lat = statistics.median(latencies[window : 2 * window])
    end_lat = statistics.median(latencies[turns - window :])
    out["latency_s"] = {"early": early_lat, "end": end_lat, "ratio": end_lat / early_lat}
    cal_a = [s["calibration_ms"] for s in first if s.get("calibration_ms")]
    cal_b = [s["calibration_ms"] for s in end if s.get("calibration_ms")]
    if cal_a and cal_b:  # beside the raw latency, never instead of it: each window's over the host's speed then
        early_cal, end_cal = statistics.median(cal_a), statistics.median(cal_b)
        out["latency_per_calibration"] = {
            "early_cal_ms": early_cal,
            "end_cal_ms": end_cal,
            "ratio": (end_lat / end_cal) / (early_lat / early_cal),
        }
    if first[0].get("host_ticks") and end[0].get("host_ticks"):  # how much of the host the hypervisor took
        out["host_steal_share"] = {
            "early": steal_share(first[0]["host_ticks"], first[-1]["host_ticks"]),
            "end": steal_share(end[0]["host_ticks"], end[-1]["host_ticks"]),
        }
    cpu_first = (first[-1]["kernel_cpu_s"] - first[0]["kernel_cpu_s"]) / max(1, first[-1]["turn"] - first[0]["turn"])
    cpu_end = (end[-1]["kernel_cpu_s"] - end[0]["kernel_cpu_s"]) / max(1, end[-1]["turn"] - end[0]["turn"])
    if cpu_first > 0 and cpu_end > 0:
        out["kernel_cpu_ms_per_turn"] = {"early": 1000 * cpu_first, "end": 1000 * cpu_end, "ratio": cpu_end / cpu_first}
    return out


def measure_install() -> Result:
    done = subprocess.run(["du", "-sb", sys.prefix], capture_output=True, text=True, check=True)
    return {"venv": sys.prefix, "bytes": int(done.stdout.split()[0])}


# -- output ---------------------------------------------------------------------------------------------------


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def table(result: Result) -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    for key, row in result.get("start", {}).items():
        rows.append((f"up → all ready, {row['plugins']} plugins ({key})", f"{row['ready_s']:.2f} s"))
        rows.append((f"up → first answer, {row['plugins']} plugins ({key})", f"{row['first_answer_s']:.2f} s"))
    for key, row in result.get("cli", {}).items():
        cmd = {"version": "hologram --version", "status": "hologram status", "ask": "hologram ask (warm)"}[key]
        rows.append((f"{cmd}, median / p90", f"{ms(row['median_s'])} / {ms(row['p90_s'])}"))
    if "turn" in result:
        t = result["turn"]
        rows.append(("turn API: first turn after ready", ms(t["first_s"])))
        rows.append(("turn API: warm turn, median / p90", f"{ms(t['warm_median_s'])} / {ms(t['warm_p90_s'])}"))
        if "http" in t:
            h = t["http"]
            rows.append(("HTTP API (/v1/chat/completions): warm turn, median / p90",
                         f"{ms(h['warm_median_s'])} / {ms(h['warm_p90_s'])}"))  # fmt: skip
    if "footprint" in result:
        idle = result["footprint"]["idle"]
        for name, row in idle["processes"].items():
            rows.append((f"idle {name}: RSS / PSS", f"{row['rss_mb']:.1f} / {row['pss_mb']:.1f} MB"))
        rows.append(
            ("idle total (en + zh turn): RSS / PSS", f"{idle['total_rss_mb']:.0f} / {idle['total_pss_mb']:.0f} MB")
        )
        peak = result["footprint"]["peak_tool_turn"]
        rows.append(
            ("peak during a tool turn: RSS / PSS total", f"{peak['total_rss_mb']:.0f} / {peak['total_pss_mb']:.0f} MB")
        )
    if "request" in result:
        r = result["request"]
        rows.append(("one-word request: bytes (≈ tokens)", f"{r['bytes']:,} ({r['tokens_approx']:,})"))
        rows.append(("  tool schemas: count, bytes", f"{r['tools']}, {r['tool_schema_bytes']:,}"))
        if r.get("tools_named"):
            rows.append(("  deferred tools named in tools_load", f"{r['tools_named']}"))
        rows.append(("  system prompt bytes", f"{r['system_prompt_bytes']:,}"))
    if "soak" in result:
        s = result["soak"]
        head = f"soak {s['turns']:,} turns / {s['sessions']} sessions"
        rows.append((f"{head}: rate", f"{s['turns_per_s']:.1f} turns/s ({s['seconds']:.0f} s)"))
        rows.append(
            (
                "  PSS after warm-up → end",
                f"{s['pss_after_warmup_mb']:.1f} → {s['pss_end_mb']:.1f} MB ({s['pss_growth_pct']:+.1f}%)",
            )
        )
        if "kernel_pss_growth_pct" in s:
            rows.append(
                (
                    "  kernel PSS after warm-up → end",
                    f"{s['kernel_pss_after_warmup_mb']:.1f} → {s['kernel_pss_end_mb']:.1f} MB "
                    f"({s['kernel_pss_growth_pct']:+.1f}%)",
                )
            )
        if "kernel_anon_mb_per_1000_turns" in s:
            rows.append(
                (
                    "  kernel anonymous memory: growth, slope",
                    f"{s['kernel_anon_growth_mb']:+.2f} MB, {s['kernel_anon_mb_per_1000_turns']:+.3f} MB / 1,000 turns",
                )
            )
        w = s.get("windowed")
        if w:
            span = f"turns {w['first'][0]:,}–{w['first'][1]:,} → {w['end'][0]:,}–{w['end'][1]:,}"
            for key, what in (("kernel_pss_mb", "PSS"), ("kernel_pss_anon_mb", "PSS, heap part"),
                              ("kernel_pss_file_mb", "PSS, file part"), ("kernel_anon_mb", "anonymous")):  # fmt: skip
                if key in w:
                    v = w[key]
                    rows.append(
                        (
                            f"  kernel {what}, medians {span}",
                            f"{v['early']:.1f} → {v['end']:.1f} MB "
                            f"({100 * (v['ratio'] - 1):+.1f}%, {v['growth']:+.2f} MB)",
                        )
                    )
            lat = w["latency_s"]
            rows.append(
                (f"  turn latency, medians {span}", f"{ms(lat['early'])} → {ms(lat['end'])} ({lat['ratio']:.2f}x)")
            )
            if "latency_per_calibration" in w:
                n = w["latency_per_calibration"]
                rows.append(
                    (
                        f"  turn latency over calibration, {span}",
                        f"{lat['ratio']:.2f}x raw, calibration {n['early_cal_ms']:.0f} → {n['end_cal_ms']:.0f} ms: "
                        f"{n['ratio']:.2f}x normalised",
                    )
                )
            if "kernel_cpu_ms_per_turn" in w:
                c = w["kernel_cpu_ms_per_turn"]
                rows.append(
                    (f"  kernel CPU a turn, {span}", f"{c['early']:.1f} → {c['end']:.1f} ms ({c['ratio']:.2f}x)")
                )
            if "host_steal_share" in w:
                h = w["host_steal_share"]
                steal = f"{100 * h['early']:.1f} → {100 * h['end']:.1f}%"
                rows.append((f"  host CPU stolen by the hypervisor, {span}", steal))
        pr = s.get("paired")
        if pr:  # bench/_paired.py: the end against an early kernel, turn for turn on the same host
            span = f"turn {pr['late_turns']:,} beside turn {pr['early_turns']:,}, {pr['rounds']} rounds"
            lat, c = pr["latency_s"], pr["kernel_cpu_ms_per_turn"]
            rows.append(
                (
                    f"  turn latency side by side, {span}",
                    f"{ms(lat['early'])} → {ms(lat['end'])} ({lat['ratio']:.2f}x; "
                    f"pairs' median {pr['pair_ratio_median']:.2f}x)",
                )
            )
            steal = f"{100 * pr['host_steal_share']:.1f}%"
            rows.append(("  host CPU stolen by the hypervisor during the rounds", steal))
            rows.append(
                (
                    f"  kernel CPU a turn side by side, {span}",
                    f"{c['early']:.1f} → {c['end']:.1f} ms ({c['ratio']:.2f}x)",
                )
            )
        rows.append(
            ("  open fds after warm-up → end", f"{s['fds_after_warmup']} → {s['fds_end']} ({s['fd_growth']:+d})")
        )
        t = s.get("kernel_threads")
        if t:
            rows.append(
                (
                    "  kernel threads / glibc thread heaps, warm-up → end",
                    f"{t['after_warmup']} → {t['end']} (max {t['max']}) / {t['heaps_after_warmup']} → {t['heaps_end']}"
                    + (
                        f"; thread arenas {t['arenas_mb_after_warmup']:.1f} → {t['arenas_mb_end']:.1f} MB"
                        if t.get("arenas_mb_end") is not None
                        else ""
                    ),
                )
            )
        rows.append(
            (
                "  turn latency early → end",
                f"{ms(s['latency_early_s'])} → {ms(s['latency_end_s'])} ({s['latency_ratio']:.2f}x)",
            )
        )
        for name, size in s["sqlite_end"].items():
            before = s["sqlite_after_warmup"].get(name, 0)
            rows.append((f"  {name} after warm-up → end", f"{before / 1e6:.2f} → {size / 1e6:.2f} MB"))
        rows.append(
            (
                "  largest request at the end: messages, bytes",
                f"{s['max_messages_end']}, {s['max_request_bytes_end']:,}",
            )
        )
        rows.append(("  requests the strict mock rejected", str(s["mock_rejections"])))
        if "kernel_cpu_ratio" in s:
            rows.append(
                (
                    "  kernel CPU a turn early → end",
                    f"{s['kernel_cpu_ms_per_turn_early']:.1f} → {s['kernel_cpu_ms_per_turn_end']:.1f} ms "
                    f"({s['kernel_cpu_ratio']:.2f}x)",
                )
            )
        for name, row in s["per_process"].items():
            if abs(row["pss_growth_pct"]) >= 1 or row["fd_growth"]:
                detail = (
                    f", anonymous {row['anon_growth_mb']:+.2f} MB, private {row['private_growth_mb']:+.2f} MB"
                    if "anon_growth_mb" in row
                    else ""
                )
                rows.append((f"  {name} grew", f"PSS {row['pss_growth_pct']:+.1f}%, fds {row['fd_growth']:+d}{detail}"))
        grown = ", ".join(f"{k} {v:+.1f}" for k, v in list(s["kernel_pss_growth_mb_by_mapping"].items())[:5])
        rows.append(("  kernel PSS growth by mapping (MB)", grown or "none"))
    if "install" in result:
        rows.append(("install size (this venv)", f"{result['install']['bytes'] / 1e6:.0f} MB"))
    return rows  # fmt: skip


def flatten(value: Any, prefix: str = "") -> Iterator[tuple[str, float]]:
    if isinstance(value, dict):
        for key, item in value.items():
            if key != "samples":
                yield from flatten(item, f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield prefix, float(value)


def compare(new: Result, old: Result) -> list[str]:
    before = dict(flatten(old))
    lines = []
    for key, value in flatten(new):
        if before.get(key):
            lines.append(f"{key:70s} {before[key]:12.4g} → {value:12.4g}  {value / before[key]:6.2f}x")
    return lines


def calibration_ms(rounds: int = 5) -> float:
    """A fixed pure-Python workload (a million-step loop of integer arithmetic), the median of ``rounds``: the
    start and the CLI rows are mostly the interpreter's own work, so this says how fast this machine runs
    Python right now. Sittings (a faster machine, a busier hour) compare by it, not by the load average."""
    times = []
    for _ in range(rounds):
        began = time.perf_counter()
        total = 0
        for i in range(1_000_000):
            total += i * i % 7
        times.append((time.perf_counter() - began) * 1000)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="3 starts, 5 CLI rounds, a 100-turn soak")
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=20, help="CLI runs and warm turns")
    parser.add_argument("--soak", type=int, default=1000)
    parser.add_argument("--sessions", type=int, default=4)
    parser.add_argument(
        "--paired-rounds",
        type=int,
        default=200,
        help="after the soak, rounds of one turn on its kernel and one on a kernel fed only its early turns "
        "(bench/_paired.py: latency growth measured on the same host); 0: skip",
    )
    parser.add_argument("--context-window", type=int, default=6000, help="tokens; small, so the soak prunes")
    parser.add_argument("--sizes", default="20,50", help="plugin counts besides the default graph")
    parser.add_argument("--only", default=",".join(SECTIONS))
    parser.add_argument("--json", type=Path, help="write the result here")
    parser.add_argument("--compare", type=Path, help="a previous --json: print this run's values over it")
    parser.add_argument(
        "--no-pyc-cache", action="store_true", help="keep the inherited bytecode settings (bench/_kernel.py)"
    )
    args = parser.parse_args()
    if args.quick:
        args.starts, args.rounds, args.soak = min(args.starts, 3), min(args.rounds, 5), min(args.soak, 100)
        args.paired_rounds = min(args.paired_rounds, 20)
    only = set(args.only.split(","))
    unknown = only - set(SECTIONS)
    if unknown:
        parser.error(f"--only: unknown section(s) {sorted(unknown)}; the sections are {', '.join(SECTIONS)}")

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    machine = {"cpus": os.cpu_count(), "calibration_ms_before": calibration_ms()}
    result: Result = {"machine": machine, "args": {k: str(v) for k, v in vars(args).items()}}
    with tempfile.TemporaryDirectory() as tmp, MockLLM("deepseek") as mock:
        root = Path(tmp)
        machine["bytecode"] = configure_bytecode(root, not args.no_pyc_cache)
        if "start" in only:
            sizes = [default_plugin_count(root)] + [int(s) for s in args.sizes.split(",") if s]
            log(f"start: {args.starts} cold starts each of {sizes} plugins")
            result["start"] = measure_start(root, mock, args.starts, sizes)
        if only & {"cli", "turn", "footprint", "request"}:
            kernel = BenchKernel(root / "main", settings_for(mock), builtins=True)
            try:
                kernel.start()
                if "turn" in only:
                    log("turn: the turn API")
                    result["turn"] = measure_turns(kernel, mock, args.rounds)
                    result["turn"]["http"] = measure_http_turns(kernel, mock, args.rounds)
                if "request" in only:
                    result["request"] = measure_request(kernel, mock)
                if "footprint" in only:
                    log("footprint: idle after an English and a Chinese turn, peak in a tool turn")
                    result["footprint"] = measure_footprint(kernel, mock)
                if "cli" in only:
                    log("cli: --version, status, ask")
                    result["cli"] = measure_cli(kernel, mock, args.rounds)
            finally:
                kernel.stop()
        if "soak" in only and args.soak:
            log(f"soak: {args.soak} tool-using turns, context window {args.context_window} tokens")
            settings = settings_for(mock, context_window=args.context_window)
            kernel = BenchKernel(root / "soak", settings, builtins=True)

            early = early_kernel_at(root / "soak-early", settings) if args.paired_rounds else None
            try:
                kernel.start()
                result["soak"] = measure_soak(
                    kernel, mock, args.soak, args.sessions, log, early_kernel=early, paired_rounds=args.paired_rounds
                )
            finally:
                kernel.stop()
        if "install" in only:
            result["install"] = measure_install()
    machine["calibration_ms_after"] = calibration_ms()
    rows = table(result)
    width = max(len(name) for name, _ in rows)
    print(f"hologram sweep ({os.cpu_count()} CPUs; times are noisy on a shared machine)")
    print(
        f"calibration: a fixed pure-Python loop took {machine['calibration_ms_before']:.0f} ms before the run and "
        f"{machine['calibration_ms_after']:.0f} ms after it (compare sittings by it); bytecode: {machine['bytecode']}"
    )
    for name, value in rows:
        print(f"{name:{width}s}  {value}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, ensure_ascii=False), encoding="utf-8")
    if args.compare:
        print(f"\nthis run over {args.compare}:")
        for line in compare(result, json.loads(args.compare.read_text(encoding="utf-8"))):
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
