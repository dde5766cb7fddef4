"""The end of a conformance run, once the plugin has been stopped as the kernel stops it: nothing but protocol
messages on stdout, an exit within the shutdown grace, and nothing it started still running."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hologram.supervisor.managed import SHUTDOWN_GRACE_S
from hologram.testing import processes

if TYPE_CHECKING:
    from hologram.supervisor import ManagedPlugin
    from hologram.testing.conformance import Run


def check_stdout(run: Run, plugin: ManagedPlugin) -> None:
    if not plugin.malformed_total:
        run.report.passed.append("stdout (only protocol messages)")
        return
    lines = "\n".join(f"{text!r} ({why})" for text, why in plugin.malformed_seen)
    run.report.problem(
        "stdout",
        f"it wrote {plugin.malformed_total} line(s) to stdout that are not protocol messages",
        the_plugin_wrote=lines,
        fix="stdout is the protocol channel: write logs to stderr (Python SDK: print() and logging already go "
        "there; a subprocess you start inherits stdout, so give it stdout=subprocess.DEVNULL or a pipe; "
        "Node: console.error, not console.log)",
    )


def check_shutdown(run: Run, plugin: ManagedPlugin, took: float) -> None:
    if plugin.stopped_by == "shutdown":
        run.report.passed.append(f"shutdown (exited {took:.1f} s after the shutdown request)")
        return
    answered = "answered it, but did not exit" if plugin.shutdown_answered else "did not answer it"
    run.report.problem(
        "shutdown",
        f"it did not exit within {SHUTDOWN_GRACE_S:g} s of the shutdown request: the kernel had to send "
        f"{plugin.stopped_by or 'signals'}",
        the_plugin=f"{answered} ({plugin.exit_description or 'exit status unknown'})",
        fix="answer shutdown with {} and exit promptly (docs/protocol.md, section 6): stop your own threads, "
        "timers and servers (SDK: in an @plugin.on_stop hook; a non-daemon thread keeps the process alive)",
    )


def check_leftovers(run: Run, started: list[processes.Proc], pid: int) -> None:
    left = processes.still_running(started, session=pid)
    if not left:
        run.report.passed.append("processes (nothing left running)")
        return
    processes.kill(left)
    run.report.problem(
        "processes",
        f"{len(left)} process(es) it started were still running after it stopped (the kit killed them)",
        left_running="\n".join(p.describe() for p in left),
        fix="stop what you start when the plugin stops (SDK: terminate and wait for it in @plugin.on_stop); the "
        "kernel kills the plugin's process group only when it has to signal the plugin",
    )
