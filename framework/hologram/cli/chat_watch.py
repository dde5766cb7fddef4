"""`hologram chat` between prompts: the turns others start in its session are shown as they come.

A reminder that fires (the reminders plugin), a message typed in the web page: each is a turn of the session
that this terminal did not start. While chat waits at its prompt, a thread of its own watches the session
(``turn/watch`` with the last ``seq`` chat saw, so nothing in between is lost and nothing repeated) and prints
such a turn — its input dimmed, the answer as it streams — then the prompt again. It stops watching before
chat starts its own turn (which one_turn shows) and watches again after it. It cannot answer approvals: the
terminal is busy at the prompt; a turn that needs one is asked of the other clients (the web page).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TextIO

DIM, RESET = "\x1b[2m", "\x1b[0m"
PROMPT = "you> "
Connect = Callable[[bool], Awaitable[Any]]


class SessionWatch:
    """Watches one session in a thread (its own event loop and connection) until `stop`."""

    def __init__(self, connect: Connect, session: str, after: int | None, out: TextIO = sys.stdout) -> None:
        self.connect, self.session, self.out = connect, session, out
        self.seq = after  # the last event seen: where the next watch resumes
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="chat-watch", daemon=True)

    def start(self) -> SessionWatch:
        self._thread.start()
        self._ready.wait(30)  # watching (or failed) before the prompt shows: nothing falls in between
        return self

    def stop(self) -> int | None:
        """Stop watching; returns the last ``seq`` seen (None: none)."""
        loop, task = self._loop, self._task
        if loop is not None and task is not None:
            with contextlib.suppress(RuntimeError):  # the loop already ended (the kernel went away)
                loop.call_soon_threadsafe(task.cancel)
        self._thread.join(10)
        return self.seq

    def _run(self) -> None:
        async def main() -> None:
            self._loop, self._task = asyncio.get_running_loop(), asyncio.current_task()
            try:
                await self._watch()
            except (asyncio.CancelledError, Exception):  # a kernel that went away: chat's next turn says so
                pass
            finally:
                self._ready.set()

        asyncio.run(main())

    async def _watch(self) -> None:
        from hologram.api import turn as api

        client = await self.connect(False)
        try:
            stream = await client.watch(self.session, after=self.seq)
            self._ready.set()
            open_line = False
            async for event in stream:
                self.seq = max(self.seq or 0, int(getattr(event, "seq", 0) or 0))
                if isinstance(event, api.TurnStarted):
                    self._write(
                        f"\n{DIM}[{event.client}] {event.text}{RESET}\n"
                        if self._tty
                        else f"\n[{event.client}] {event.text}\n"
                    )
                elif isinstance(event, api.ContentDelta):
                    self._write(event.text)
                    open_line = not event.text.endswith("\n")
                elif isinstance(event, api.ToolCallStarted):
                    self._write(f"{DIM}[tool {event.tool}]{RESET}\n" if self._tty else f"[tool {event.tool}]\n")
                elif isinstance(event, api.TurnFailed):
                    self._write(f"\n(the turn failed: {event.message})\n")
                elif isinstance(event, api.TurnEnded):
                    self._write(("\n" if open_line else "") + PROMPT)
                    open_line = False
        finally:
            await client.aclose()

    @property
    def _tty(self) -> bool:
        return self.out.isatty()

    def _write(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()
