"""The plugin's side of the guardian (guardian.py): how to start one, and what its report says.

Every shell_run / code_run command runs under a guardian of its own, which kills the call's whole process
tree when the call ends, however the descendants tried to leave it. This module builds the guardian's
command line and turns its report into the words the model reads, e.g. `killed 1 process left running in
the background: sleep (pid 1234)`.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

GUARDIAN_DIR = Path(__file__).resolve().parent
# Imported, not run as a script: a script is compiled on every start (~10 ms), a module's bytecode is cached.
# Appended to sys.path, so nothing in this package can shadow a standard module the guardian imports.
BOOT = f"import sys; sys.path.append({str(GUARDIAN_DIR)!r}); from guardian import run; run(sys.argv[1:])"
LISTED = 8  # processes named one by one in a result; more are summarised by name


@dataclass(frozen=True)
class Rlimit:
    """A resource limit for the command, applied between fork and exec (`resource.RLIMIT_<name>`)."""

    name: str  # AS, CPU, FSIZE, CORE …
    soft: int
    hard: int

    def argument(self) -> str:
        return f"{self.name}={self.soft}:{self.hard}"


def guardian_argv(
    argv: Sequence[str],
    *,
    report_fd: int,
    max_processes: int,
    rlimits: Sequence[Rlimit] = (),
    poll_s: float = 0.02,
) -> list[str]:
    """The command line that runs `argv` under a guardian whose parent is this process."""
    command = [sys.executable, "-I", "-S", "-c", BOOT, "--parent", str(os.getpid()), "--report-fd", str(report_fd)]
    command += ["--max-processes", str(max_processes), "--poll-s", f"{poll_s:g}"]
    for limit in rlimits:
        command += ["--rlimit", limit.argument()]
    return [*command, "--", *argv]


def guardian_child(guardian: int) -> int | None:
    """The pid of the command a guardian runs (its one direct child), None once it is gone: what a long-lived
    program's owner (a terminal, the browser) names and signals, while the guardian keeps its tree."""
    try:
        children = Path(f"/proc/{guardian}/task/{guardian}/children").read_text().split()
    except OSError:
        return None
    return int(children[0]) if children else None


@dataclass(frozen=True)
class Proc:
    pid: int
    name: str

    def __str__(self) -> str:
        return f"{self.name} (pid {self.pid})"


@dataclass
class TreeReport:
    """What the guardian did. `reason`: exit (the command ended), signal (the plugin stopped it), limit
    (too many processes), parent (the plugin died), lost (no report: the guardian itself was killed)."""

    reason: str = "lost"
    exit_code: int | None = None
    count: int = 0
    killed: list[Proc] = field(default_factory=list)
    unlisted: int = 0
    survivors: list[Proc] = field(default_factory=list)

    @property
    def killed_count(self) -> int:
        return len(self.killed) + self.unlisted


def parse_report(data: bytes) -> TreeReport:
    """Read the guardian's report (format: guardian.py's docstring); unknown lines are skipped."""
    report = TreeReport()
    for line in data.decode("utf-8", "replace").splitlines():
        key, _, rest = line.partition(" ")
        try:
            if key == "exit":
                report.exit_code = None if rest == "-" else int(rest)
            elif key == "reason":
                report.reason = rest
            elif key == "count":
                report.count = int(rest)
            elif key == "more":
                report.unlisted = int(rest)
            elif key in ("killed", "survived"):
                pid, _, name = rest.partition(" ")
                (report.killed if key == "killed" else report.survivors).append(Proc(int(pid), name))
        except ValueError:
            continue
    return report


def _plural(n: int) -> str:
    return f"{n} process" if n == 1 else f"{n} processes"


def describe(processes: Sequence[Proc], total: int) -> str:
    """`bash (pid 11), sleep (pid 12)`; past LISTED names, counted by name: `python3 ×150 (pids 100–249)`."""
    if total <= LISTED and len(processes) == total:
        return ", ".join(str(p) for p in processes)
    names = Counter(p.name for p in processes)
    pids = sorted(p.pid for p in processes)
    by_name = ", ".join(f"{name} ×{n}" for name, n in names.most_common())
    span = f"pids {pids[0]}–{pids[-1]}" if pids else "pids not listed"
    unlisted = total - len(processes)
    return f"{by_name} ({span}{f', and {unlisted} more not listed' if unlisted else ''})"


def killed_note(report: TreeReport, *, background: bool) -> str | None:
    """`killed 2 processes: bash (pid 11), sleep (pid 12)`, or None when nothing had to be killed."""
    notes = []
    if report.killed_count:
        where = " left running in the background" if background else ""
        notes.append(f"killed {_plural(report.killed_count)}{where}: {describe(report.killed, report.killed_count)}")
    if report.survivors:
        notes.append(f"could not kill {describe(report.survivors, len(report.survivors))}")
    return "; ".join(notes) or None


def read_report(fd: int) -> bytes:
    """Everything the guardian wrote on `fd`, without blocking (it has exited, or is about to be killed)."""
    os.set_blocking(fd, False)
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)
