"""Starting and stopping the system Chromium, under the process guardian shared with shell and terminal.

Chromium runs as the guardian's child (hologram_plugins/_process/guardian.py): the guardian is a subreaper
with PR_SET_PDEATHSIG, so Chromium and its zygotes, renderers and GPU process die when the browser is closed,
when the plugin stops, and when the plugin is killed with SIGKILL — no Chromium outlives its plugin.

Its profile is `<data>/browser-profile` (one per data directory: cookies and logins persist across restarts).
The DevTools port is chosen by Chromium (`--remote-debugging-port=0`) and read from the profile's
`DevToolsActivePort` file, so two kernels on one machine never collide.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

from hologram_plugins._process.runner import child_env
from hologram_plugins._process.tree import TreeReport, guardian_argv, guardian_child, parse_report, read_report

START_TIMEOUT_S = 30.0
GUARDIAN_WAIT_S = 15.0
CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


class LaunchError(RuntimeError):
    """Chromium could not be started; the message says why and what to do."""


def find_executable(configured: str) -> str:
    """The configured path, or the first Chromium found on PATH."""
    names = [configured] if configured else list(CANDIDATES)
    for name in names:
        found = shutil.which(name)
        if found:
            return found
    wanted = configured or " or ".join(CANDIDATES)
    raise LaunchError(
        f"no browser executable found ({wanted}); install Debian's `chromium` package or set "
        "`executable` in [plugins.browser]"
    )


@dataclass
class Chromium:
    """One running Chromium and its guardian."""

    profile: Path
    process: asyncio.subprocess.Process | None = None
    websocket_url: str = ""
    report: TreeReport = field(default_factory=TreeReport)
    _report_fd: int = -1

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.returncode is None

    async def start(self, executable: str, *, proxy_port: int, headless: bool, args: list[str]) -> None:
        self.profile.mkdir(parents=True, exist_ok=True)
        port_file = self.profile / "DevToolsActivePort"
        port_file.unlink(missing_ok=True)
        argv = [
            executable,
            f"--user-data-dir={self.profile}",
            "--remote-debugging-port=0",
            "--remote-debugging-address=127.0.0.1",
            f"--proxy-server=http://127.0.0.1:{proxy_port}",
            "--proxy-bypass-list=<-loopback>",  # loopback through the guard too (Chromium bypasses it by default)
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-background-networking",  # no requests of Chromium's own (updates, sync, metrics, search
            "--disable-component-update",  # suggestions): only the pages' requests go out, and the guard's
            "--disable-sync",  # refusals name nothing the model did not cause
            "--disable-default-apps",
            "--disable-extensions",
            "--disable-client-side-phishing-detection",
            "--disable-domain-reliability",
            "--disable-breakpad",
            "--disable-search-engine-choice-screen",
            "--disable-features=Translate,OptimizationHints,MediaRouter,NetworkTimeServiceQuerying,AutofillServerCommunication",
            "--no-pings",
            "--metrics-recording-only",
            "--disable-dev-shm-usage",
            "--password-store=basic",
            "--window-size=1280,900",
            *(["--headless=new", "--hide-scrollbars", "--mute-audio"] if headless else []),
            *(["--no-sandbox"] if os.geteuid() == 0 else []),  # Chromium refuses to run as root with its sandbox
            *args,
            "about:blank",
        ]
        report_read, report_write = os.pipe()
        try:
            self.process = await asyncio.create_subprocess_exec(
                *guardian_argv(argv, report_fd=report_write, max_processes=512, poll_s=0.5),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.DEVNULL,
                env=child_env(),
                start_new_session=True,
                pass_fds=(report_write,),
            )
        except BaseException:
            os.close(report_read)
            raise
        finally:
            os.close(report_write)
        self._report_fd = report_read
        self.websocket_url = await self._devtools_url(port_file)

    async def _devtools_url(self, port_file: Path) -> str:
        """Chromium writes `PORT\\n/devtools/browser/ID` once it listens; wait for that (or its exit)."""
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if not self.alive:
                await self.stop()
                raise LaunchError(f"Chromium exited at start ({self.report.exit_code}); run it by hand to see why")
            with contextlib.suppress(OSError, ValueError):
                lines = port_file.read_text().split()
                if len(lines) >= 2:
                    return f"ws://127.0.0.1:{int(lines[0])}{lines[1]}"
            await asyncio.sleep(0.05)
        await self.stop()
        raise LaunchError(f"Chromium did not open its DevTools port within {START_TIMEOUT_S:g} s")

    async def stop(self) -> TreeReport:
        """SIGTERM to the guardian: it kills Chromium's whole tree and reports."""
        process = self.process
        if process is not None:
            if process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    process.send_signal(signal.SIGTERM)
                try:
                    await asyncio.wait_for(process.wait(), GUARDIAN_WAIT_S)
                except asyncio.TimeoutError:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(process.pid, signal.SIGKILL)
                    await process.wait()
            self.process = None
        if self._report_fd >= 0:
            self.report = parse_report(read_report(self._report_fd))
            os.close(self._report_fd)
            self._report_fd = -1
        return self.report

    @property
    def pid(self) -> int | None:
        """Chromium's main pid (the guardian's child), for tests and `browser_tabs`."""
        if self.process is None:
            return None
        return guardian_child(self.process.pid)
