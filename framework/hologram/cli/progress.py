"""Live start-up progress for `hologram up`: a line per state change, colour and a summary on a terminal.

On a terminal the lines carry symbols and colours; elsewhere (CI logs, `make up | tee`) they are plain and
timestamped, so the output reads well in both.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path
from typing import TextIO

from hologram.cli.terminal import say
from hologram.supervisor import ManagedPlugin, State, Supervisor
from hologram.supervisor.core import ON_DEMAND_REASON

_SYMBOLS = {
    State.WAITING: ("·", "2"),
    State.STARTING: ("…", "36"),
    State.READY: ("✓", "32"),
    State.CRASHED: ("!", "33"),
    State.STOPPING: ("…", "2"),
    State.STOPPED: ("■", "2"),
    State.FAILED: ("✗", "31"),
}


WEB_PLUGIN = "http"  # the HTTP channel plugin (manifests/http.toml)
ON_DEMAND = "on demand"  # the summary's word for `[start] lazy` plugins not started yet (docs/manifest.md)


def process_started() -> float:
    """When this process started, on the `time.monotonic` clock (to the kernel's tick, 10 ms). The times
    `hologram up` prints count from the command the user typed, not from when the supervisor started after
    the kernel's imports: "Hologram is up in 0.05 s" for a launch that took 0.4 s said less than the truth."""
    try:
        fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        started_ticks = int(fields[19])  # field 22, starttime: clock ticks after boot
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - started_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):  # not Linux: count from now
        return time.monotonic()
    return time.monotonic() - max(0.0, age)


class Progress:
    def __init__(self, supervisor: Supervisor, stream: TextIO = sys.stdout) -> None:
        self.supervisor = supervisor
        self.stream = stream
        self.tty = stream.isatty()
        self.started = process_started()
        self.summarised = False
        self.width = max((len(n) for n in supervisor.plugins), default=6)
        self.web_announced = False  # the web UI's link: printed once, when its plugin is first ready
        self.loading = False
        """The start-up loads are still running (`hologram up` sets it, `loaded` clears it): the summary — the
        user's "ready" — waits for them, so that the first answer after it is as fast as a warm one (issue
        39 item 9: loads still running beside a turn made the first answer 2.2-2.7x a warm one)."""
        self.plugins_settled: float | None = None

    SUMMARY_WAIT_S = 5.0
    """The longest the summary waits for the start-up loads once the plugins have settled: a first start that
    builds the model's cache, a load that hangs or a launch that never ends must not keep the web UI's link
    from the user."""

    def __call__(self, plugin: ManagedPlugin) -> None:
        if plugin.state is State.WAITING and not plugin.reason:
            return  # the initial and post-restart waiting state is noise; a blocker shows up in status
        # `[start] lazy`, left for its first call: counted "on demand" in the summary, not a line each. Once
        # such a plugin has run, its stop is a line like any other's (Ctrl-C showed "stopping" and never "stopped")
        if not (plugin.on_demand and plugin.state is State.STOPPED and plugin.reason == ON_DEMAND_REASON):
            self._line(plugin)
        if self.plugins_settled is None and self.settled():
            self.plugins_settled = time.monotonic() - self.started
            if self.loading:
                try:
                    asyncio.get_running_loop().call_later(self.SUMMARY_WAIT_S, self.loaded)
                except RuntimeError:  # no event loop (a caller outside `up`): no reason to wait
                    self.loading = False
        if not self.summarised and not self.loading and self.settled():
            self.summarised = True
            self.summary()
        elif self.summarised and plugin.name == WEB_PLUGIN and plugin.state is State.READY:
            self.announce_web()  # ready only after the summary (it waited on a facility)

    def _line(self, plugin: ManagedPlugin) -> None:
        elapsed = time.monotonic() - self.started
        symbol, colour = _SYMBOLS[plugin.state]
        detail = f"  {plugin.reason}" if plugin.reason else ""
        name = plugin.name.ljust(self.width)
        if self.tty:
            line = f"  \x1b[{colour}m{symbol}\x1b[0m {name} {plugin.state.value:<9}\x1b[2m{detail}\x1b[0m"
        else:
            line = f"[{elapsed:7.2f}s] {name} {plugin.state.value:<9}{detail}"
        say(line, self.stream)

    def loaded(self) -> None:
        """The start-up loads are done (or gave up): the summary, if the plugins had settled already."""
        self.loading = False
        if not self.summarised and self.settled():
            self.summarised = True
            self.summary()

    def settled(self) -> bool:
        plugins = self.supervisor.plugins.values()
        return all(p.state.settled or (p.state is State.WAITING and self.supervisor.blockers(p)) for p in plugins)

    def summary(self) -> None:
        counts: dict[str, int] = {}
        for plugin in self.supervisor.plugins.values():
            label = ON_DEMAND if plugin.on_demand and plugin.state is State.STOPPED else plugin.state.value
            counts[label] = counts.get(label, 0) + 1
        parts = ", ".join(f"{n} {state}" for state, n in sorted(counts.items()))
        elapsed = time.monotonic() - self.started
        plugins = self.plugins_settled
        loads = (
            f" (plugins in {plugins:.2f} s, then the start-up loads)" if plugins and elapsed - plugins >= 0.01 else ""
        )
        text = (
            f"Hologram is up in {elapsed:.2f} s{loads}: {parts or 'no plugins'}. `hologram status` for details; "
            "Ctrl-C stops."
        )
        say(("\x1b[1m" + text + "\x1b[0m") if self.tty else text, self.stream)
        for plugin in self.supervisor.plugins.values():
            if plugin.state is State.WAITING:
                say(f"  {plugin.name}: {self.supervisor.waiting_reason(plugin)}", self.stream)
        web = self.supervisor.plugins.get(WEB_PLUGIN)
        if web is not None and web.state is State.READY:
            self.announce_web()

    def announce_web(self) -> None:
        """``web UI: http://127.0.0.1:PORT/?token=…``: the link that logs the browser in (the terminal is
        the user's own; the link never goes to the log file)."""
        if self.web_announced:
            return
        from hologram.cli._web import remote_exposure, web_link

        link = web_link(self.supervisor.data_dir)
        if link is not None:
            self.web_announced = True
            say(f"web UI: {link}", self.stream)
            exposure = remote_exposure(self.supervisor.data_dir)
            if exposure:
                say(f"web UI: {exposure}", self.stream)
