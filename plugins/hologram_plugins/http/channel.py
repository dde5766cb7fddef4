"""The plugin's side of the turn API: calling the kernel's facilities, and watching the sessions a browser
has open, so the kernel sends this plugin their events and asks it (through the page) about approvals.

The plugin is two principals to the kernel: ``page`` (the open page, which can approve) and ``v1`` (the
OpenAI-compatible API, which cannot: no person reads its stream). Watching a session as ``page`` with
``approvals=True`` is what makes the kernel ask rather than deny, and keeps a turn started with
``on_disconnect="cancel"`` alive; a ``/v1`` turn in a session the page has open leaves the page asked. The
plugin watches a session while an SSE client has it open or a turn it started there runs, and stops when
neither is left.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from hologram_plugins.http.events import Fanout, Listener
from hologram_plugins.http.responses import BadRequest

log = logging.getLogger("hologram_plugins.http")

Call = Callable[[str, str, dict[str, Any]], Awaitable[Any]]  # (facility, method, params) → result
CLIENT = "web"
PAGE = "page"  # the principal of the open page (can approve)
V1 = "v1"  # the principal of the OpenAI-compatible API (cannot)


class Channel:
    def __init__(self, call: Call) -> None:
        self._call = call
        self.fanout = Fanout(on_idle=self._idle)
        self.watching: set[str] = set()
        self._tasks: set[asyncio.Task[Any]] = set()

    async def call(self, facility: str, method: str, **params: Any) -> Any:
        return await self._call(facility, method, params)

    async def turns(self, method: str, **params: Any) -> Any:
        return await self._call("kernel.turns", method, params)

    # -- turns ------------------------------------------------------------------------------------------

    async def start(
        self,
        text: str | None,
        session: str | None = None,
        *,
        client: str = CLIENT,
        approvals: bool = True,
        **params: Any,
    ) -> Any:
        """Start a turn with the socket's ``turn/start`` params (`hologram.api.params.StartParams`: scene,
        partner, on_disconnect, watch, ``input`` parts instead of ``text`` …), checked here by the same model
        the kernel uses, so a bad field is a 400 naming it and ``POST /api/turns`` can carry whatever the
        control socket can. The principal follows ``approvals`` (the page, or ``/v1`` which cannot approve)
        unless the caller names one."""
        from hologram.api.params import StartParams  # pydantic is here already (config.py); the model on first use

        fields: dict[str, Any] = {
            **({"text": text} if text is not None else {}),
            "client": client,
            "approvals": approvals,
            "principal": PAGE if approvals else V1,
            "watch": True,
            "on_disconnect": "continue" if approvals else "cancel",
            **params,
        }
        if session is not None:
            fields["session"] = session
        try:
            checked = StartParams.parse("turn/start", fields)
        except ValueError as exc:
            raise BadRequest(str(exc)) from None
        started = await self.turns("start", **checked.model_dump(exclude_none=True))
        if checked.watch:  # the start made this plugin a watcher of the session
            self.watching.add(str(started["session"]))
            self.fanout.expect(str(started["session"]), str(started["turn"]))
        return started

    async def approve(self, session: str, approval: str, *, principal: str = PAGE, **answer: Any) -> bool:
        """Answer an approval as ``principal`` with the socket's ``turn/approve`` fields (``decision``, or the
        version-1 ``approved``; ``reason``): the kernel validates them."""
        result = await self.turns("approve", session=session, approval=approval, principal=principal, **answer)
        return bool(result.get("accepted"))

    async def open_stream(self, session: str, after: int | None) -> Listener:
        """A listener on ``session`` (see `Fanout.subscribe`); the plugin watches the session from now on."""
        listener = self.fanout.subscribe(session, after)
        if session not in self.watching:
            self.watching.add(session)
            try:
                # ``after``: what the kernel kept of the session that this plugin has not (it restarted, with the
                # kernel or alone) comes now, through the fan-out, which drops what the listener has
                await self.turns("watch", session=session, approvals=True, client=CLIENT, principal=PAGE, after=after)
            except Exception:
                self.watching.discard(session)
                self.fanout.unsubscribe(listener)
                raise
        return listener

    def close_stream(self, listener: Listener) -> None:
        self.fanout.unsubscribe(listener)

    def keep(self, task: asyncio.Task[Any]) -> None:
        """Hold a background task until it is done (the loop keeps only weak references)."""
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _idle(self, session: str) -> None:
        """No SSE client and no running turn left in ``session``: stop watching it."""
        if session not in self.watching:
            return
        self.watching.discard(session)
        self.keep(asyncio.get_running_loop().create_task(self._unwatch(session)))

    async def _unwatch(self, session: str) -> None:
        if session in self.watching:  # watched again meanwhile
            return
        try:
            await self.turns("unwatch", session=session)
        except Exception as exc:  # the kernel going away: nothing left to stop watching
            log.debug("unwatch %s: %s", session, exc)
