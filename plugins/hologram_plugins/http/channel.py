"""The plugin's side of the turn API: calling the kernel's facilities, and watching the sessions a browser
has open, so the kernel sends this plugin their events and asks it (through the page) about approvals.

The plugin is two principals to the kernel: ``page`` (the open page, which can approve) and ``v1`` (the
OpenAI-compatible API, which cannot: no person reads its stream). Watching a session as ``page`` with
``approvals=True`` is what makes the kernel ask rather than deny, and keeps a turn started with
``on_disconnect="cancel"`` alive; a ``/v1`` turn in a session the page has open leaves the page asked.

The plugin watches a session while a client has it open (a `Listener` of the `Router`) or a turn it started there
has not ended, and stops when neither is left. That is all it keeps: which sessions it watches and the ids of
its own turns still going; the events themselves, and their replay to a stream that resumes, are the kernel's
(`open_stream` watches again with ``after``).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

from hologram_plugins.http.config import REASONING_BYTES, STREAM_QUEUE_BYTES
from hologram_plugins.http.events import Listener, Router
from hologram_plugins.http.responses import BadRequest

log = logging.getLogger("hologram_plugins.http")

Call = Callable[[str, str, dict[str, Any]], Awaitable[Any]]  # (facility, method, params) → result
CLIENT = "web"
PAGE = "page"  # the principal of the open page (can approve)
V1 = "v1"  # the principal of the OpenAI-compatible API (cannot)
WATCH_DROPPED = "watch.dropped"  # hologram.api.turn.WatchDropped (not imported: the plugin loads what it needs)
ENDED_REMEMBERED = 256  # ids of turns whose end came before their start's answer (see `Channel.start`)
RESUME_GRACE_S = 30.0  # a session whose stream was dropped stays watched this long for the client to come back


class Channel:
    def __init__(
        self,
        call: Call,
        *,
        stream_queue_bytes: int = STREAM_QUEUE_BYTES,
        reasoning_bytes: int = REASONING_BYTES,
    ) -> None:
        self._call = call
        self.reasoning_bytes = reasoning_bytes  # kept of a non-streamed /v1 answer's reasoning (openai_api.Turn)
        self.router = Router(stream_queue_bytes, on_idle=self._maybe_unwatch)
        self.watching: set[str] = set()  # sessions the kernel sends this plugin the events of
        self.running: dict[str, set[str]] = {}  # session → turns this plugin started that have not ended
        self._starting: dict[str, int] = {}  # session → starts waiting for their answer
        self._ended: deque[str] = deque(maxlen=ENDED_REMEMBERED)  # turns that ended, newest last
        self._resuming: dict[str, asyncio.TimerHandle] = {}  # sessions whose dropped stream may come back
        self._tasks: set[asyncio.Task[Any]] = set()

    async def call(self, facility: str, method: str, **params: Any) -> Any:
        return await self._call(facility, method, params)

    async def turns(self, method: str, **params: Any) -> Any:
        return await self._call("kernel.turns", method, params)

    # -- events from the kernel ----------------------------------------------------------------------------

    def on_event(self, event: dict[str, Any]) -> None:
        """A ``turn/event`` from the kernel, in the order it sent them."""
        kind = event.get("type")
        if kind == WATCH_DROPPED:
            self._dropped()
            return
        self.router.publish(event)
        if kind == "turn.ended":
            session, turn = str(event.get("session") or ""), str(event.get("turn") or "")
            self._ended.append(turn)
            mine = self.running.get(session)
            if mine is not None:
                mine.discard(turn)
                if not mine:
                    del self.running[session]
            self._maybe_unwatch(session)

    def _dropped(self) -> None:
        """The kernel dropped this plugin (it fell too far behind): it watches nothing now. Every stream ends, and
        its client reconnects with the seq it has (which watches again, with ``after``)."""
        log.warning("http: the kernel dropped this plugin's event stream (too far behind); the clients resume")
        self.watching.clear()
        self.running.clear()
        for timer in self._resuming.values():
            timer.cancel()
        self._resuming.clear()
        self.router.end()

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
        if not checked.watch:
            return await self.turns("start", **checked.model_dump(exclude_none=True))
        # The start makes this plugin a watcher of the session until the turn ends: a turn (its approvals) must not
        # be left unwatched while no page has it open. Its end may come before the start's answer (a fast turn):
        # the ids of ended turns are remembered for that.
        key = checked.session or ""
        if key:  # watched from before the request: an unwatch of the session on its way now is not sent
            self.watching.add(key)
        self._starting[key] = self._starting.get(key, 0) + 1
        try:
            started = await self.turns("start", **checked.model_dump(exclude_none=True))
        except BaseException:
            self._started(key)
            if key:
                self._maybe_unwatch(key)  # the start failed: nothing of it to watch for
            raise
        self._started(key)
        sid, turn = str(started["session"]), str(started["turn"])
        self.watching.add(sid)
        if turn not in self._ended:
            self.running.setdefault(sid, set()).add(turn)
        self._maybe_unwatch(sid)
        return started

    def _started(self, key: str) -> None:
        self._starting[key] -= 1
        if not self._starting[key]:
            del self._starting[key]

    async def approve(self, session: str, approval: str, *, principal: str = PAGE, **answer: Any) -> bool:
        """Answer an approval as ``principal`` with the socket's ``turn/approve`` fields (``decision``, or the
        version-1 ``approved``; ``reason``): the kernel validates them."""
        result = await self.turns("approve", session=session, approval=approval, principal=principal, **answer)
        return bool(result.get("accepted"))

    # -- streams ------------------------------------------------------------------------------------------

    def listen(self, session: str) -> Listener:
        """A listener of what comes next in ``session``, without a replay (the OpenAI API listens before its start,
        which then makes the plugin watch the session)."""
        return self.router.listen(session, None)

    async def open_stream(self, session: str, after: int | None) -> Listener:
        """A listener of ``session`` for an SSE client: first what it missed after ``after`` (None: the running
        turn's events from its start; nothing when none runs), from the kernel, then what comes. The plugin
        watches the session from now on."""
        listener = self.router.listen(session, after, catching_up=True)
        self.watching.add(session)  # from before the request: an unwatch of the session on its way now is not sent
        try:
            watch = {"session": session, "approvals": True, "client": CLIENT, "principal": PAGE}
            if after is None:
                answer = await self.turns("watch", **watch)
                if answer.get("turn") is None:  # no turn runs: nothing to replay, only what comes next
                    listener.caught_up(0, None, None, floor=int(answer.get("seq") or 0))
                    return listener
                after = 0  # the running turn's events, from its turn.started (the kernel keeps them from there)
            answer = await self.turns("watch", **watch, after=after)
            if answer.get("gap"):
                log.info(
                    "http: a stream of session %s resumes after seq %d, older than the kernel keeps", session, after
                )
            listener.caught_up(
                int(answer.get("replayed") or 0),
                answer.get("replay_first"),
                answer.get("replay_last"),
                size=int(answer.get("replay_bytes") or 0),
            )
        except BaseException:
            self.router.unlisten(listener)
            raise
        return listener

    def close_stream(self, listener: Listener) -> None:
        if listener.dropped:
            # Its client comes back with the seq it has (a browser within a second): the session stays watched a
            # while, so the kernel keeps its turn for the replay rather than only what it keeps of idle sessions.
            old = self._resuming.pop(listener.session, None)
            if old is not None:
                old.cancel()
            self._resuming[listener.session] = asyncio.get_running_loop().call_later(
                RESUME_GRACE_S, self._resumed, listener.session
            )
        self.router.unlisten(listener)

    def _resumed(self, session: str) -> None:
        self._resuming.pop(session, None)
        self._maybe_unwatch(session)

    def forget(self, session: str) -> None:
        """A deleted session: its streams end."""
        self.router.end(session)

    # -- watching -----------------------------------------------------------------------------------------

    def keep(self, task: asyncio.Task[Any]) -> None:
        """Hold a background task until it is done (the loop keeps only weak references)."""
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _maybe_unwatch(self, session: str) -> None:
        """Stop watching ``session`` once no client has it open, no turn started here runs in it, no start is on its
        way, and no stream of it was dropped lately (`close_stream`)."""
        if session not in self.watching or self.router.listened(session) or self.running.get(session):
            return
        if session in self._resuming:
            return
        if self._starting.get(session):
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
