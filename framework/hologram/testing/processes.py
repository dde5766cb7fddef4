"""The processes a plugin started, found in /proc, so the kit can tell which outlived the plugin.

A plugin runs in its own session (the kernel spawns it with ``setsid``), and what it starts inherits that
session unless it leaves it. So the kit takes, while the plugin still runs, its descendants (by parent pid) and
every process of its session; after the plugin has stopped, whichever of those is still alive — the same pid
*and* the same start time, so a recycled pid is not blamed — was left behind. Linux only, as Hologram is.
"""

from __future__ import annotations

import contextlib
import os
import signal
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    session: int
    started: int  # clock ticks after boot: with the pid, names one process for good
    command: str

    def describe(self) -> str:
        return f"pid {self.pid}: {self.command}"


def _read(pid: int) -> Proc | None:
    try:
        stat = (PROC / str(pid) / "stat").read_text(encoding="utf-8", errors="replace")
        raw = (PROC / str(pid) / "cmdline").read_bytes()
    except OSError:
        return None
    # the comm field is in parentheses and may hold spaces or parentheses itself: split after the last ')'
    comm = stat[stat.index("(") + 1 : stat.rindex(")")]
    fields = stat[stat.rindex(")") + 2 :].split()
    if fields[0] == "Z":  # a zombie has exited: nothing is left running, only its entry for the parent
        return None
    command = " ".join(part.decode("utf-8", "replace") for part in raw.split(b"\0") if part) or f"[{comm}]"
    return Proc(pid, int(fields[1]), int(fields[3]), int(fields[19]), command[:200])


def snapshot() -> dict[int, Proc]:
    """Every process this user can see, by pid."""
    found = {}
    for entry in PROC.iterdir():
        if entry.name.isdigit():
            proc = _read(int(entry.name))
            if proc is not None:
                found[proc.pid] = proc
    return found


def started_by(pid: int) -> list[Proc]:
    """The processes ``pid`` started (its descendants) and those of its session, ``pid`` itself excluded."""
    table = snapshot()
    children: dict[int, list[int]] = {}
    for proc in table.values():
        children.setdefault(proc.ppid, []).append(proc.pid)
    found: dict[int, Proc] = {p.pid: p for p in table.values() if p.session == pid and p.pid != pid}
    queue = list(children.get(pid, []))
    while queue:
        child = queue.pop()
        if child not in found and child in table:
            found[child] = table[child]
        queue.extend(children.get(child, []))
    return sorted(found.values(), key=lambda p: p.pid)


def still_running(procs: list[Proc], session: int) -> list[Proc]:
    """Those of ``procs`` still alive (same pid, same start), and any process now in ``session``."""
    table = snapshot()
    alive = {p.pid: p for p in procs if (now := table.get(p.pid)) is not None and now.started == p.started}
    alive.update({p.pid: p for p in table.values() if p.session == session and p.pid != session})
    return sorted(alive.values(), key=lambda p: p.pid)


def kill(procs: list[Proc]) -> None:
    """SIGKILL each (the kit cleans up what a plugin left, so a failing test leaks nothing)."""
    for proc in procs:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(proc.pid, signal.SIGKILL)
