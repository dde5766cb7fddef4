"""The soak's latency at its end against its early turns, measured side by side rather than minutes apart.

Why: the soak's windowed ratio compares turns 1,000–2,000 with turns 9,000–10,000, twelve minutes later, and on
these shared 2-core machines the host's own speed drifts more than that in twelve minutes (the bench's
pure-Python calibration went 57 → 79 ms over one run, issue 39 item 7): the ratio then measures the host as
much as the kernel. Here, after the soak's last sample, a second kernel (a fresh data directory, the same
settings) is fed the soak's first ``early_turns`` turns — the early window's state — and then the two kernels
take turns alternately, one turn each per round, the order swapped every round: both sides see the same
host, so what differs is the state 10,000 turns left in the first one. Its figures stand beside the windowed
ones (the raw ratio stays in the table, as measured); neither replaces the other.

The second kernel starts only after the soak's memory samples are taken: it maps the same libraries, so while
it runs the first kernel's PSS of those pages is split between the two.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hologram.clients import TurnClient

Feed = Callable[[int], str]  # the soak's text for its turn i
Check = Callable[[Any, Sequence[Any]], None]  # sweep.answered: stop at a failed turn
#: Starts the early kernel: its data directory, its pid, and how to stop it.
EarlyKernel = Callable[[], tuple[Path, int, Callable[[], None]]]
Tidy = Callable[[], None]  # called every 100 turns (the sweep empties the mock's record of requests)


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process, all its threads (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def host_ticks() -> tuple[int, int]:
    """(steal, all) of the host's CPU ticks since boot (/proc/stat): the share of time the hypervisor gave this
    machine's CPUs to someone else over a span is the two's differences' ratio — a soak's early and late windows
    compared on a shared host."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (fields[7] if len(fields) > 7 else 0), sum(fields[:8])


def steal_share(before: tuple[int, int], after: tuple[int, int]) -> float:
    """The share of CPU time stolen by the hypervisor between two :func:`host_ticks` readings."""
    spent = after[1] - before[1]
    return (after[0] - before[0]) / spent if spent > 0 else 0.0


class _Side:
    """One kernel's turns: its sessions (round-robin, as the soak feeds them) and the next turn's number."""

    def __init__(self, client: TurnClient, ids: list[str | None], next_turn: int, pid: int) -> None:
        self.client, self.ids, self.next_turn, self.pid = client, ids, next_turn, pid
        self.latencies: list[float] = []

    async def turn(self, feed: Feed, check: Check, tidy: Tidy) -> float:
        i, slot = self.next_turn, self.next_turn % len(self.ids)
        started = time.perf_counter()
        stream = await self.client.start(feed(i), session=self.ids[slot])
        check(await stream.result(), stream.events)
        elapsed = time.perf_counter() - started
        self.ids[slot] = stream.session
        self.next_turn += 1
        if self.next_turn % 100 == 0:
            tidy()
        return elapsed


@dataclass(frozen=True)
class LateKernel:
    """The soak's kernel as its last turn left it: data directory, its sessions (round-robin slots), the next
    turn's number, its pid."""

    data: Path
    ids: list[str | None]
    next_turn: int
    pid: int


@dataclass(frozen=True)
class Plan:
    """What the side-by-side part runs: the early kernel's feed, the rounds, the soak's text and checks."""

    early_turns: int
    rounds: int
    feed: Feed
    check: Check
    tidy: Tidy
    log: Callable[[str], None]


async def paired(late_kernel: LateKernel, early_data: Path, early_pid: int, plan: Plan) -> dict[str, Any]:
    """Feed the early kernel ``early_turns`` of the soak, then ``rounds`` rounds of one turn on each kernel.
    The first round of each session is left out of the figures on both sides: the late kernel was idle while
    the early one was fed, so it reads its sessions back from disk first (``release_idle_s``)."""
    feed, check, tidy, rounds = plan.feed, plan.check, plan.tidy, plan.rounds
    sessions = len(late_kernel.ids)
    async with (
        await TurnClient.connect(late_kernel.data, client="sweep-paired") as late_client,
        await TurnClient.connect(early_data, client="sweep-paired") as early_client,
    ):
        early = _Side(early_client, [None] * sessions, 0, early_pid)
        late = _Side(late_client, list(late_kernel.ids), late_kernel.next_turn, late_kernel.pid)
        started = time.perf_counter()
        while early.next_turn < plan.early_turns:
            await early.turn(feed, check, tidy)
            if early.next_turn % 500 == 0:
                plan.log(f"  paired: early kernel fed {early.next_turn}/{plan.early_turns} turns "
                    f"({early.next_turn / (time.perf_counter() - started):.1f} turns/s)")  # fmt: skip
        skip = sessions
        cpu_before: dict[str, float] = {}
        for r in range(rounds + skip):
            if r == skip:
                cpu_before = {"late": cpu_s(late.pid), "early": cpu_s(early.pid)}
                ticks = host_ticks()
            order = (late, early) if r % 2 == 0 else (early, late)
            for side in order:
                elapsed = await side.turn(feed, check, tidy)
                if r >= skip:
                    side.latencies.append(elapsed)
        cpu = {
            "late": 1000 * (cpu_s(late.pid) - cpu_before["late"]) / rounds,
            "early": 1000 * (cpu_s(early.pid) - cpu_before["early"]) / rounds,
        }
        stolen = steal_share(ticks, host_ticks())
    pair_ratios = [a / b for a, b in zip(late.latencies, early.latencies, strict=True)]
    late_median, early_median = statistics.median(late.latencies), statistics.median(early.latencies)
    return {
        "early_turns": plan.early_turns,
        "late_turns": late_kernel.next_turn,
        "rounds": rounds,
        "latency_s": {"early": early_median, "end": late_median, "ratio": late_median / early_median},
        "pair_ratio_median": statistics.median(pair_ratios),
        "host_steal_share": stolen,
        "kernel_cpu_ms_per_turn": {"early": cpu["early"], "end": cpu["late"], "ratio": cpu["late"] / cpu["early"]},
    }


def run_paired(late: LateKernel, start_early: EarlyKernel, plan: Plan) -> dict[str, Any]:
    """:func:`paired` with the early kernel started by `start_early` (its data directory, pid and stop) and
    stopped afterwards, whatever happens."""
    early_data, early_pid, stop = start_early()
    try:
        return asyncio.run(paired(late, early_data, early_pid, plan))
    finally:
        stop()
