"""The long-turns mode of tools/bench/http_turns.py (``--long``): what the http plugin and the kernel keep after
long turns relayed to a web client (issue 41 item 1).

    .venv/bin/python tools/bench/http_turns.py --long [--sessions 28] [--calls 400] [--answer-kb 120]
                                               [--settings '[delivery]\nreplay_idle_bytes = 0']

A real `hologram up` with the http and files plugins and the strict mock LLM in this process. Each session runs
one long turn, one after another, as the report that opened the issue did: the mock makes ``--calls`` tool calls
(``files_list``, ten per step) and then streams an answer of ``--answer-kb`` KB (UTF-8, English and Chinese, four
characters a delta: ~24k events a turn with the defaults). A client reads each turn as the page and
`hologram chat --url` do: ``POST /api/turns``, then the session's SSE stream from ``seq`` 0 to ``turn.ended``;
every event is checked (seqs rising, none twice, the deltas adding up to the answer).

Printed: the http plugin's RSS and PSS and the kernel's PSS, and its anonymous part (/proc/PID/smaps_rollup
Pss_Anon: the heap; a PSS's file part moves with how many other processes share the same library files, on a
machine running other Hologram processes by several MB between two samples) at the start (idle after a
warm-up turn), at the peak (sampled every 0.1 s during the turns) and idle after the run (no turn, no client,
the processes' idle heap trim done), with the growth and the ratio to the start. Targets: the plugin idle
after within 10 MB of its start, the kernel within 10 % of its idle PSS at the start. Run from a checkout of
an older commit (this file copied there) for the before numbers.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import orjson

from bench._kernel import BenchKernel, provider_toml
from bench._threads import is_thread_heap
from bench.sweep import cpu_s, proc_memory_kb
from mock_llm import MockLLM

REPO = Path(__file__).resolve().parents[2]
CALLS_PER_STEP = 10
IDLE_S = 4.0  # after the run: the idle heap trims (1 s after the last work) and the kernel's timers settle
IDLE_STEP_S = 0.5  # how often the final idle is read
PLUGIN_TARGET_MB = 10.0
KERNEL_TARGET = 1.10


def answer_text(kb: int) -> str:
    """About ``kb`` KB of UTF-8, English and Chinese (a Chinese character is three bytes)."""
    parts: list[str] = []
    size, i = 0, 0
    while size < kb * 1024:
        piece = f"line {i} of the answer, 第{i}行的回答。\n"
        parts.append(piece)
        size += len(piece.encode())
        i += 1
    return "".join(parts)


def turn_script(calls: int, answer: str) -> list[dict[str, Any]]:
    """The mock's steps for one turn: ``calls`` files_list calls, ten a step, then the answer."""
    steps: list[dict[str, Any]] = []
    for step in range(0, calls, CALLS_PER_STEP):
        batch = [
            {"id": f"l{{n}}_{i}", "name": "files_list", "arguments": json.dumps({"path": "."})}
            for i in range(min(CALLS_PER_STEP, calls - step))
        ]
        steps.append({"reasoning_content": f"step {step // CALLS_PER_STEP}", "tool_calls": batch})
    steps.append({"reasoning_content": "the answer", "content": answer})
    return steps


def _pss_anon_kb(pid: int) -> int:
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return 0
    return next((int(line.split()[1]) for line in text.splitlines() if line.startswith("Pss_Anon:")), 0)


MIB = 1 << 20
_GUARD_MAX = 64 << 10  # a thread stack's guard: a ---p map of a page or a few just below the stack


def anon_mappings(pid: int) -> dict[str, int]:
    """The process's anonymous memory (kB, Rss) by mapping kind, from /proc/PID/smaps."""
    return classify_anon(Path(f"/proc/{pid}/smaps").read_text())


def classify_anon(smaps: str) -> dict[str, int]:
    """Anonymous memory (kB) by kind, from the text of a /proc/PID/smaps: ``heap`` (glibc's main heap),
    ``thread_arena`` (its per-thread heaps), ``thread_stack``, ``arena_1m`` (pymalloc's 1 MiB arenas),
    ``other_anon`` (every other anonymous map: glibc's mmapped blocks of 128 KiB and more, named maps), and
    ``arena_1m_mapped`` (the arenas' size, resident or not).

    pymalloc maps each arena on its own, 1 MiB, and the kernel merges neighbouring anonymous maps into one
    mapping: arenas next to each other, and arenas next to an odd-sized glibc block. Sorting whole mappings by
    size (a multiple of 1 MiB or not) then moved a region from one kind to the other when its odd neighbour was
    mapped or unmapped — in the soak, pymalloc's "maps" jumped +2-3 MB at one turn while "other" fell by the
    same. So a mapping is split: its whole MiBs are arenas, its odd remainder another block, counted resident
    first (a glibc block is written whole when used; an arena's pools are touched one by one). A mapping right
    above a small ---p guard is a thread stack (8 MiB each, mostly untouched), not arenas."""
    out = dict.fromkeys(("heap", "arena_1m", "thread_arena", "thread_stack", "other_anon", "file", "anon_total"), 0)
    out["arena_1m_mapped"] = 0
    maps: list[tuple[int, int, str, str, int]] = []  # lo, hi, permissions, name, Anonymous kB
    for line in smaps.splitlines():
        head = line.split()
        if not head:
            continue
        if "-" in head[0] and not head[0].endswith(":"):
            lo, hi = (int(x, 16) for x in head[0].split("-"))
            maps.append((lo, hi, head[1], head[5] if len(head) > 5 else "", 0))
        elif head[0] == "Anonymous:" and maps:
            maps[-1] = (*maps[-1][:4], int(head[1]))
    below: tuple[int, int, str, str, int] | None = None
    for (lo, hi, perms, name, kb), above in zip(maps, [*maps[1:], None], strict=True):
        size = hi - lo
        out["anon_total"] += kb
        if name == "[heap]":
            out["heap"] += kb
        elif name.startswith("/"):
            out["file"] += kb
        elif name or not perms.startswith("rw"):
            out["other_anon"] += kb
        elif is_thread_heap((lo, hi, perms, name), above and above[:4]):
            out["thread_arena"] += kb
        elif below is not None and below[1] == lo and below[2].startswith("---") and below[1] - below[0] <= _GUARD_MAX:
            out["thread_stack"] += kb
        else:
            whole, odd_kb = size // MIB * MIB, (size % MIB) >> 10
            arenas = max(0, kb - odd_kb) if whole else 0
            out["arena_1m"] += arenas
            out["other_anon"] += kb - arenas
            out["arena_1m_mapped"] += whole >> 10
        below = (lo, hi, perms, name, kb)
    return out


class Memory:
    """The http plugin's and the kernel's (RSS, PSS) in MB, now and the maxima seen by `peak`."""

    def __init__(self, kernel: BenchKernel) -> None:
        status = kernel.status()
        self.kernel_pid = int(status["kernel"]["pid"])
        self.http_pid = next(int(p["pid"]) for p in status["plugins"] if p["name"] == "http")
        self.maxima = {"http_rss": 0.0, "http_pss": 0.0, "kernel_pss": 0.0, "kernel_rss": 0.0, "kernel_anon": 0.0}

    def now(self) -> dict[str, float]:
        http, kernel = proc_memory_kb(self.http_pid), proc_memory_kb(self.kernel_pid)
        if http is None or kernel is None:
            raise RuntimeError("the kernel or the http plugin is gone")
        return {
            "http_rss": http[0] / 1024,
            "http_pss": http[1] / 1024,
            "kernel_rss": kernel[0] / 1024,
            "kernel_pss": kernel[1] / 1024,
            "kernel_anon": _pss_anon_kb(self.kernel_pid) / 1024,
        }

    def kinds(self) -> dict[str, float]:
        """The kernel's anonymous memory by mapping kind (MB, resident)."""
        return {k: v / 1024 for k, v in anon_mappings(self.kernel_pid).items()}

    @contextmanager
    def peak(self, every: float = 0.1) -> Iterator[dict[str, float]]:
        stop = threading.Event()

        def run() -> None:
            while not stop.is_set():
                for key, value in self.now().items():
                    self.maxima[key] = max(self.maxima[key], value)
                stop.wait(every)

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        try:
            yield self.maxima
        finally:
            stop.set()
            thread.join()


def checked(events: list[dict[str, Any]], answer: str) -> None:
    seqs = [e["seq"] for e in events]
    if seqs != sorted(set(seqs)) or not events or events[-1]["type"] != "turn.ended":
        raise AssertionError("events out of order, repeated, or no turn.ended")
    text = "".join(e["text"] for e in events if e["type"] == "content.delta")
    if text != answer:
        raise AssertionError(f"deltas lost or repeated ({len(text)} of {len(answer)} characters)")
    if events[-1]["stop_reason"] != "answer":
        raise AssertionError(f"the turn ended with {events[-1]['stop_reason']}")


async def one_turn(client: httpx.AsyncClient, session: str, text: str) -> list[dict[str, Any]]:
    """Start a turn and read its events as `hologram chat --url` does (the stream from seq 0)."""
    started = await client.post("/api/turns", json={"text": text, "session": session})
    started.raise_for_status()
    turn = started.json()["turn"]
    events: list[dict[str, Any]] = []
    async with client.stream("GET", f"/api/sessions/{session}/events", params={"after": "0"}) as response:
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                event = orjson.loads(line[6:])
                if event["turn"] != turn:
                    continue
                events.append(event)
                if event["type"] == "turn.ended":
                    break
    return events


async def settled(kernel: BenchKernel, timeout: float = 300.0) -> float:
    """Wait until the kernel's start-up loads are done and its heap frozen and trimmed (``status``'s
    ``kernel.heap_frozen``; hologram/cli/up_cmd.py): they are released by the first answer, the warm-up's, and
    on a loaded host could still be running at the start's sample, which then left the embedding model's load
    to the growth. Returns the seconds waited."""
    began = time.perf_counter()
    while not kernel.status()["kernel"]["heap_frozen"]:
        if time.perf_counter() - began > timeout:
            raise RuntimeError(f"the kernel's start-up loads were not done after {timeout:g} s")
        await asyncio.sleep(0.1)
    return time.perf_counter() - began


def kernel_facts(kernel: BenchKernel) -> dict[str, Any]:
    """What the kernel says of itself in ``status``: its allocator (read in its own process) and pymalloc's live
    blocks (0 under malloc) — a count of live objects, which fragmentation does not move."""
    return {k: v for k, v in kernel.status()["kernel"].items() if k in ("allocator", "pid", "allocated_blocks")}


async def idle(memory: Memory, seconds: float) -> dict[str, float]:
    await asyncio.sleep(seconds)
    return memory.now()


#: After which sessions the kernel's maps are read (at once, no pause: the turns stay back to back).
SAMPLE_AT = (1, 2, 4, 8, 16, 28)


async def run(kernel: BenchKernel, mock: MockLLM, sessions: int, calls: int, answer: str) -> dict[str, Any]:
    info = json.loads((kernel.data / "http.json").read_text())
    token = (kernel.data / "http-token").read_text().strip()
    memory = Memory(kernel)
    async with httpx.AsyncClient(
        base_url=info["url"], headers={"authorization": f"Bearer {token}"}, timeout=600
    ) as client:
        mock.script(turn_script(CALLS_PER_STEP, "warm"))  # imports, caches, the first turn's loads
        checked(await one_turn(client, "warm-up", "go"), "warm")
        waited = await settled(kernel)
        start = await idle(memory, IDLE_S)
        kinds = {"start": memory.kinds()}
        facts_start = kernel_facts(kernel)
        events = 0
        began = time.perf_counter()
        cpu_began = cpu_s(memory.kernel_pid)
        with memory.peak() as peak:
            for i in range(sessions):
                mock.script(turn_script(calls, answer))
                got = await one_turn(client, f"long-{i}", "a long task")
                checked(got, answer)
                events += len(got)
                if i + 1 in SAMPLE_AT:  # where the growth is made: the first turn or the later ones
                    kinds[f"after {i + 1}"] = {**memory.kinds(), "kernel_anon": memory.now()["kernel_anon"]}
        elapsed = time.perf_counter() - began
        kernel_cpu = cpu_s(memory.kernel_pid) - cpu_began
    # the final idle, read every IDLE_STEP_S: what the last session's release, its vectors and the idle trim do
    # (for sessions 1-27 the same work falls inside the next session's turn)
    for step in range(round(IDLE_S / IDLE_STEP_S)):
        await asyncio.sleep(IDLE_STEP_S)
        memory_status = kernel.status().get("memory") or {}
        kinds[f"idle {(step + 1) * IDLE_STEP_S:g}"] = {
            **memory.kinds(),
            "kernel_anon": memory.now()["kernel_anon"],
            "released": float(memory_status.get("sessions_released") or 0),
            "indexing": float(memory_status.get("indexing") or 0),
        }
    after = memory.now()
    kinds["after"] = memory.kinds()
    out = {"start": start, "peak": dict(peak), "after": after, "events": events, "seconds": elapsed, "kinds": kinds}
    out.update(kernel=kernel_facts(kernel), kernel_start=facts_start)
    return {**out, "settle_s": waited, "kernel_cpu_s": kernel_cpu}


_KINDS = (
    ("arena_1m", "whole-MiB maps (pymalloc)"),
    ("heap", "heap"),
    ("thread_arena", "thread arenas"),
    ("other_anon", "other"),
)


def report(out: dict[str, Any]) -> str:
    start, peak, after = out["start"], out["peak"], out["after"]
    cpu = out.get("kernel_cpu_s", 0.0)
    blocks = [out.get(k, {}).get("allocated_blocks", 0) for k in ("kernel_start", "kernel")]
    lines = [
        f"long turns: {out['sessions']} sessions one after another, {out['calls']} tool calls and a "
        f"{out['answer_kb']} KB answer each, {out['events'] / out['sessions']:.0f} events a turn "
        f"({out['seconds']:.0f} s; the start-up loads done {out.get('settle_s', 0):.1f} s after the warm-up)",
        f"kernel CPU {cpu:.1f} s over the turns ({cpu / out['sessions']:.2f} s a long turn); its allocator: "
        f"{out.get('kernel', {}).get('allocator', '?')}; pymalloc's live blocks "
        f"{blocks[0]:,} -> {blocks[1]:,}",
        f"{'MB':<14}{'start':>9}{'peak':>9}{'after':>9}{'after-start':>13}{'after/start':>13}",
    ]
    rows = [("http_rss", "http RSS"), ("http_pss", "http PSS"), ("kernel_pss", "kernel PSS")]
    rows.append(("kernel_anon", "  anonymous"))
    for key, name in rows:
        growth = after[key] - start[key]
        lines.append(
            f"{name:<14}{start[key]:>9.1f}{peak[key]:>9.1f}{after[key]:>9.1f}{growth:>+13.1f}"
            f"{after[key] / start[key]:>13.2f}"
        )
    kinds = out.get("kinds")
    if kinds:  # where the kernel's anonymous growth is: pymalloc's arenas, the main heap, glibc's thread arenas
        a, b = kinds["start"], kinds["after"]
        parts = [f"{name} {a[key]:.1f} -> {b[key]:.1f}" for key, name in _KINDS]
        lines.append(f"  by kind: {', '.join(parts)}")
        points = [(k.split()[1], v) for k, v in kinds.items() if k.startswith("after ")]
        if points:  # read as each of those sessions ended, no idle pause (the next turn starts at once)
            seen = ", ".join(
                f"{n}: {v['arena_1m']:.1f}/{v['arena_1m_mapped']:.0f} (anon {v['kernel_anon']:.1f})" for n, v in points
            )
            lines.append(
                f"  pymalloc maps resident/mapped MB after sessions (start {a['arena_1m']:.1f}/"
                f"{a.get('arena_1m_mapped', 0):.0f}; end {b['arena_1m']:.1f}/{b.get('arena_1m_mapped', 0):.0f}): {seen}"
            )
        idles = [(k.split()[1], v) for k, v in kinds.items() if k.startswith("idle ")]
        if idles:  # the last session's release and the idle trim, as they happen
            seen = ", ".join(
                f"+{n} s: {v['arena_1m']:.1f} (anon {v['kernel_anon']:.1f}, heap {v['heap']:.1f}, threads "
                f"{v['thread_arena']:.1f}; released {v['released']:.0f}, indexing {v['indexing']:.0f})"
                for n, v in idles
            )
            lines.append(f"  pymalloc maps resident MB in the final idle: {seen}")
    plugin_ok = after["http_rss"] - start["http_rss"] <= PLUGIN_TARGET_MB
    kernel_ok = after["kernel_pss"] <= KERNEL_TARGET * start["kernel_pss"]
    anon_ok = after["kernel_anon"] - start["kernel_anon"] <= (KERNEL_TARGET - 1) * start["kernel_pss"]
    lines.append(
        f"targets: http plugin within {PLUGIN_TARGET_MB:g} MB of its start: {'ok' if plugin_ok else 'MISSED'}; "
        f"kernel within {KERNEL_TARGET - 1:.0%} of its idle PSS: {'ok' if kernel_ok else 'MISSED'} "
        f"(its anonymous growth alone: {'ok' if anon_ok else 'MISSED'})"
    )
    return "\n".join(lines)


def main(sessions: int, calls: int, answer_kb: int, as_json: bool, extra_settings: str = "") -> int:
    answer = answer_text(answer_kb)
    root = Path(tempfile.mkdtemp(prefix="hologram-bench-long-"))
    with MockLLM("deepseek") as mock:
        (root / "manifests").mkdir(parents=True)
        for name in ("http", "files"):
            shutil.copy(REPO / "manifests" / f"{name}.toml", root / "manifests")
            shutil.copy(REPO / "manifests" / f"{name}.config.schema.json", root / "manifests")
        steps = calls // CALLS_PER_STEP + 2
        # the same call 400 times is the workload, not a loop to stop: the loop guard off, the call limit above it
        agent = f"[agent]\nmax_steps = {steps}\nmax_tool_calls = {max(calls, 1)}\nloop_repeats = 0\n\n"
        settings = agent + provider_toml("mock", mock.base_url, max_retries=0)
        settings += "\n" + extra_settings.replace("\\n", "\n")  # e.g. "[delivery]\nreplay_idle_bytes = 0"
        kernel = BenchKernel(root, settings, manifests=["manifests"])
        try:
            kernel.start()
            out = asyncio.run(run(kernel, mock, sessions, calls, answer))
        finally:
            kernel.stop()
            shutil.rmtree(root, ignore_errors=True)
    out.update(sessions=sessions, calls=calls, answer_kb=answer_kb)
    print(json.dumps(out, indent=2) if as_json else report(out))
    return 0
