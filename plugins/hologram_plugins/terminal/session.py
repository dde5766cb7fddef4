"""One live terminal: a program on a pseudo-terminal, its output rendered by pyte as the screen a person sees.

Processes. The program runs under the same guardian as shell_run's commands (hologram_plugins/_process): the
guardian is a subreaper with PR_SET_PDEATHSIG, so everything the terminal started — jobs sent to the
background, daemons that called setsid — is its descendant, and all of it is killed when the terminal is
closed, when the program exits (what it left behind), and when the plugin stops or dies. The program itself
is made a session leader with the PTY as its controlling terminal (`CTTY`), so Ctrl-C, Ctrl-Z and job control
work as at a real terminal: the line discipline signals the foreground process group.

Screen. Bytes from the PTY go through pyte's VT100/xterm emulation into a screen of `rows` × `cols`; a line
that scrolls off its top is kept (bounded) as scrollback, and each read returns the lines scrolled off since
the previous read, then the screen. Requests the program makes of its terminal (cursor position, device
attributes) are answered as a terminal would. Waiting is on events: each chunk of output wakes the waiters.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import signal
import struct
import sys
import termios
import time
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyte
from pyte.screens import Margins
from wcwidth import wcwidth

from hologram_plugins._process.tree import (
    TreeReport,
    guardian_argv,
    guardian_child,
    killed_note,
    parse_report,
    read_report,
)

# The program's first moments: a new session with the PTY (fd 0) as its controlling terminal, then exec.
CTTY = (
    "import os,sys,fcntl,termios\n"
    "os.setsid()\n"
    "fcntl.ioctl(0,termios.TIOCSCTTY,0)\n"
    "try:\n os.execvp(sys.argv[1],sys.argv[1:])\n"
    "except OSError as e:\n sys.stderr.write(f'{sys.argv[1]}: cannot run it: {e}\\r\\n');sys.exit(127)\n"
)
DECCKM = 1 << 5  # pyte keeps private modes shifted by 5: ESC [ ? 1 h, application cursor keys
READ_CHUNK = 8192  # pyte renders ~30,000 short lines a second: a chunk holds the loop ≤ ~0.1 s
RENDER_SHARE = 0.25  # of a core, at most, spent rendering a terminal's output in the long run …
RENDER_BURST_S = 0.5  # … after a burst of this much; past it the PTY is not read for a while
GUARDIAN_WAIT_S = 15.0  # the guardian gives up on unkillable processes after 10 s and reports them
GUARDIAN_POLL_S = 0.25  # how often it counts the terminal's processes (max_processes); a terminal lives long


class Screen(pyte.Screen):
    """pyte's screen, keeping the lines that scroll off its top and answering the program's queries."""

    def __init__(self, columns: int, lines: int, keep: int, answer: object) -> None:
        super().__init__(columns, lines)
        self.scrolled: deque[object] = deque(maxlen=keep)  # rows as pyte left them, rendered when read
        self.scrolled_total = 0
        self._answer = answer

    def index(self) -> None:
        top, bottom = self.margins or Margins(0, self.lines - 1)
        if self.cursor.y == bottom and top == 0:
            # The row object leaves the screen untouched (pyte shifts the rows up): keep it as it is. Rendering
            # it here made a flood of short lines 4× slower (7,000 against 30,000 lines a second).
            self.scrolled.append(self.buffer[0])
            self.scrolled_total += 1
        super().index()

    def scrolled_since(self, count: int) -> list[str]:
        """The rows scrolled off after the first ``count`` (those still kept), as text."""
        new = min(self.scrolled_total - count, len(self.scrolled))
        if new <= 0:
            return []
        rows = list(self.scrolled)[len(self.scrolled) - new :]
        return [render(row, self.columns) for row in rows]

    def write_process_input(self, data: str) -> None:
        self._answer(data)  # type: ignore[operator]


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def render(line: object, columns: int, *, strip: bool = True) -> str:
    """A row of the screen as text, a wide character once (pyte leaves an empty cell after it)."""
    chars: list[str] = []
    wide = False
    for x in range(columns):
        if wide:
            wide = False
            continue
        data = line[x].data  # type: ignore[index]
        wide = bool(data) and wcwidth(data[0]) == 2
        chars.append(data)
    text = "".join(chars)
    return text.rstrip() if strip else text


@dataclass
class View:
    """What a read returns: the new scrollback (and how many older lines were dropped), the screen, the cursor."""

    scrollback: list[str]
    dropped: int
    screen: list[str]
    cursor: tuple[int, int]


class Terminal:
    """A program on a PTY under a guardian, its screen, and the waiters for its output."""

    def __init__(self, ident: str, command: str, session: str | None, cols: int, rows: int, keep_lines: int) -> None:
        self.id, self.command, self.session = ident, command, session
        self.cols, self.rows = cols, rows
        self.screen = Screen(cols, rows, keep_lines, self._answer)
        self.stream = pyte.ByteStream(self.screen)
        self.master = -1
        self.process: asyncio.subprocess.Process | None = None
        self.report = TreeReport()
        self.ended = False  # the program exited (the guardian reported) and its output is all read
        self.closed = False
        self.opened_at = self.used_at = self.output_at = time.monotonic()
        self.bytes_out = 0
        self.busy = 0  # calls using it now: the idle timeout counts from the last one's end
        self.read_upto = 0  # scrolled_total at the last read
        self._changed = asyncio.Event()
        self._eof = asyncio.Event()
        self._report_fd = -1
        self._watcher: asyncio.Task[None] | None = None
        self._budget_s = RENDER_BURST_S  # render time left; refills at RENDER_SHARE seconds a second
        self._budget_at = time.monotonic()
        self.paused = 0  # times reading paused for the budget (the program then waits on a full PTY)

    # -- start and stop ------------------------------------------------------------------------------------

    async def start(self, argv: Sequence[str], *, cwd: Path, env: dict[str, str], max_processes: int) -> None:
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", self.rows, self.cols, 0, 0))
        report_read, report_write = os.pipe()
        try:
            self.process = await asyncio.create_subprocess_exec(
                *guardian_argv(
                    [sys.executable, "-I", "-S", "-c", CTTY, *argv],
                    report_fd=report_write,
                    max_processes=max_processes,
                    poll_s=GUARDIAN_POLL_S,
                ),
                cwd=str(cwd),
                env=env,
                stdin=slave,
                stdout=slave,
                stderr=slave,
                start_new_session=True,  # the guardian has no controlling terminal; the program takes the PTY
                pass_fds=(report_write,),
            )
        except BaseException:
            for fd in (master, report_read):
                os.close(fd)
            raise
        finally:
            os.close(slave)
            os.close(report_write)
        self.master, self._report_fd = master, report_read
        os.set_blocking(master, False)
        asyncio.get_running_loop().add_reader(master, self._readable)
        self._watcher = asyncio.ensure_future(self._watch())

    @contextlib.contextmanager
    def using(self) -> Iterator[Terminal]:
        """A tool call on this terminal: it is not idle meanwhile, and its idle time starts again after."""
        self.busy += 1
        self.used_at = time.monotonic()
        try:
            yield self
        finally:
            self.busy -= 1
            self.used_at = time.monotonic()

    @property
    def pid(self) -> int | None:
        """The program's pid: the guardian's child (None once it has exited)."""
        if self.process is None or self.ended:
            return None
        return guardian_child(self.process.pid)

    async def _watch(self) -> None:
        """The guardian exits when the program does (after killing what it left) or when told to stop."""
        assert self.process is not None
        await self.process.wait()
        self.report = parse_report(read_report(self._report_fd))
        os.close(self._report_fd)
        self._report_fd = -1
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._eof.wait(), 2.0)  # the last output still in the PTY
        self.ended = True
        self._changed.set()

    async def close(self) -> TreeReport:
        """Stop the guardian (it kills the whole tree), wait for its report, free the PTY."""
        if self.closed:
            return self.report
        self.closed = True
        process = self.process
        if process is not None and process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(process.wait(), GUARDIAN_WAIT_S)
            except asyncio.TimeoutError:  # it never should: kill its group, the tree goes with its death signal
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(process.pid, signal.SIGKILL)
                await process.wait()
        if self._watcher is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(self._watcher), GUARDIAN_WAIT_S)
        self._release()
        return self.report

    def _release(self) -> None:
        if self.master >= 0:
            with contextlib.suppress(Exception):
                asyncio.get_running_loop().remove_reader(self.master)
            os.close(self.master)
            self.master = -1
        if self._report_fd >= 0:
            os.close(self._report_fd)
            self._report_fd = -1

    # -- output --------------------------------------------------------------------------------------------

    def _readable(self) -> None:
        try:
            data = os.read(self.master, READ_CHUNK)
        except BlockingIOError:
            return
        except OSError:  # EIO: every process holding the PTY's other side is gone
            data = b""
        if not data:
            asyncio.get_running_loop().remove_reader(self.master)
            self._eof.set()
            self._changed.set()
            return
        self.bytes_out += len(data)
        self.output_at = time.monotonic()
        # the render's CPU time, not its wall time: on a loaded host the thread waits for a core mid-render, and
        # charging that wait paused the PTY for seconds a chunk (a flood then outlasted a test's 120 s)
        started = time.thread_time()
        self.stream.feed(data)
        self._changed.set()
        self._spend(time.thread_time() - started)

    def _spend(self, seconds: float) -> None:
        """A program that floods its terminal (``yes``, ``cat`` of a big file) would keep the plugin's loop busy
        rendering: past the budget the PTY is left unread until it refills, and the program blocks on its
        writes, as on a slow real terminal, until then. Ctrl-C still goes through."""
        now = time.monotonic()
        self._budget_s = min(RENDER_BURST_S, self._budget_s + (now - self._budget_at) * RENDER_SHARE) - seconds
        self._budget_at = now
        if self._budget_s < 0 and self.master >= 0:
            loop = asyncio.get_running_loop()
            loop.remove_reader(self.master)
            self.paused += 1
            loop.call_later(-self._budget_s / RENDER_SHARE, self._resume)

    def _resume(self) -> None:
        if self.master >= 0 and not self._eof.is_set():
            asyncio.get_running_loop().add_reader(self.master, self._readable)

    def _answer(self, data: str) -> None:
        """The terminal's replies to the program's queries (cursor position, device attributes)."""
        if self.master >= 0:
            with contextlib.suppress(OSError):
                os.write(self.master, data.encode())

    async def changed(self, timeout: float) -> bool:
        """Wait up to ``timeout`` for new output (or the end); False when none came."""
        self._changed.clear()
        try:
            await asyncio.wait_for(self._changed.wait(), max(timeout, 0))
        except asyncio.TimeoutError:
            return False
        return True

    async def settle(self, quiet_s: float, limit_s: float) -> None:
        """After input: wait until the output has been quiet for ``quiet_s`` (at most ``limit_s`` in all)."""
        sent = time.monotonic()
        deadline = sent + limit_s
        while not self.ended and (left := deadline - time.monotonic()) > 0:
            if self.output_at > sent:  # it answered: wait for a pause
                quiet_left = quiet_s - (time.monotonic() - self.output_at)
                if quiet_left <= 0:
                    return
                await self.changed(min(left, quiet_left))
            else:
                await self.changed(left)

    async def wait_for(self, text: str, timeout: float) -> bool:
        """Wait until ``text`` is on the screen or in the scrollback not yet read; False at the timeout. Each
        scrolled row is looked at once, however much output comes."""
        deadline = time.monotonic() + timeout
        checked = self.read_upto
        while True:
            screen = self.screen
            if any(text in render(screen.buffer[y], self.cols, strip=False) for y in range(self.rows)):
                return True
            if any(text in line for line in screen.scrolled_since(checked)):
                return True
            checked = screen.scrolled_total
            left = deadline - time.monotonic()
            if self.ended or left <= 0:
                return False
            await self.changed(left)

    # -- input ---------------------------------------------------------------------------------------------

    @property
    def application_cursor(self) -> bool:
        return DECCKM in self.screen.mode

    async def send(self, data: bytes) -> None:
        """Write all of ``data`` to the program, waiting while the PTY's buffer is full."""
        loop = asyncio.get_running_loop()
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(self.master, view) :]
            except BlockingIOError:
                ready: asyncio.Future[None] = loop.create_future()
                loop.add_writer(self.master, _resolve, ready)
                try:
                    await asyncio.wait_for(ready, 10)
                finally:
                    loop.remove_writer(self.master)

    # -- reading the screen --------------------------------------------------------------------------------

    def lines(self) -> list[str]:
        return [render(self.screen.buffer[y], self.cols) for y in range(self.rows)]

    def read(self, max_scrollback: int) -> View:
        """The scrollback since the last read (at most ``max_scrollback`` lines, the newest) and the screen."""
        screen = self.screen
        new = screen.scrolled_total - self.read_upto
        shown = screen.scrolled_since(max(self.read_upto, screen.scrolled_total - max_scrollback))
        self.read_upto = screen.scrolled_total
        lines = self.lines()
        while lines and not lines[-1]:
            lines.pop()
        return View(shown, new - len(shown), lines, (screen.cursor.y, screen.cursor.x))

    def state(self) -> str:
        if not self.ended:
            return "running"
        code = self.report.exit_code
        if code is None:
            return "ended"
        return f"exited with code {code}" if code >= 0 else f"killed by signal {-code}"

    def killed(self) -> str | None:
        return killed_note(self.report, background=False)
