"""The kernel side of the turn API: running turns per session, the clients watching them, their approvals.

Every event of a turn goes through `TurnHub.emit`: it gets the next ``seq``, is kept for clients that
reconnect (the running turn's and the last finished turn's events of each watched session), published on the
event ring (``turn.event``: plugins see every turn) and queued to each watcher. Each watcher has a queue and a
sender task of its own, so one slow client delays nobody — not the turn, not the other clients — and each
sees the events in order. A watcher whose queue passes `MAX_QUEUED` (a client that stopped reading) is
dropped with a warning rather than let the kernel's memory grow.

Turns of one session run one at a time (a second ``turn/start`` waits for the first to end); turns of
different sessions run concurrently. A turn started with ``on_disconnect = "cancel"`` (the CLI's default) is
cancelled, like a Ctrl-C, when the last client watching its session goes away.

Approvals: the executor asks `ask` (through `hologram.agent.approvals.Approver`) before a call that needs a
person. The request goes to the session's watchers as ``approval.requested``; the first ``turn/approve``
decides and every watcher sees ``approval.resolved``. With no watcher that can approve, or none answering
within the timeout, the call is denied — refusing is the safe answer — and the event says why. Only a watcher
that declared it can approve may answer (`TurnHub.answer`); knowing a request's id is not enough.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import uuid
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, Protocol

from hologram.agent.approvals import ApprovalRequest
from hologram.agent.failure import failure_of
from hologram.agent.turn import TurnError
from hologram.api import params as params_api
from hologram.api import turn as api

log = logging.getLogger("hologram.agent")
MAX_QUEUED = 10_000  # events waiting for one watcher; more and it is dropped (it stopped reading)
Send = Callable[[dict[str, Any]], Awaitable[None]]


class NotAllowed(Exception):
    """An answer to an approval from a caller that may not give it (see `TurnHub.answer`)."""


class RunTurn(Protocol):
    """Runs one turn: (text, session, turn, emit), and the scene the client declared and its partner."""

    def __call__(
        self,
        text: str,
        session: str,
        turn: str,
        emit: Callable[[Any], None],
        /,
        *,
        scene: str | None = None,
        partner: str | None = None,
    ) -> Awaitable[Any]: ...


Publish = Callable[[dict[str, Any]], Any]


class Watcher:
    """One client watching one or more sessions: a queue and the task that sends it in order."""

    def __init__(self, key: Hashable, send: Send, client: str) -> None:
        self.key = key
        self.client = client
        self._send = send
        self._queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self.closed = False

    def put(self, event: dict[str, Any]) -> bool:
        if self.closed:
            return False
        if self._queue.qsize() >= MAX_QUEUED:
            log.warning("client %s stopped reading (%d events queued); it is detached", self.client, MAX_QUEUED)
            self.close()
            return False
        self._queue.put_nowait(event)
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._pump())
        return True

    async def _pump(self) -> None:
        while True:
            event = await self._queue.get()
            if event is None:
                return
            try:
                await self._send(event)
            except Exception as exc:  # the client went away: the connection's close detaches it
                log.debug("sending to %s failed: %s", self.client, exc)
                self.closed = True
                return

    def close(self) -> None:
        self.closed = True
        if self._task is not None:
            self._task.cancel()


@dataclass
class _Approval:
    request: ApprovalRequest
    future: asyncio.Future[tuple[bool, str, str]]
    event: dict[str, Any]  # the approval.requested event as sent (a client that attaches later gets it)


@dataclass
class _Session:
    watchers: dict[Hashable, bool] = field(default_factory=dict)  # watcher key → may approve
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    task: asyncio.Task[Any] | None = None  # the running turn
    turn: str | None = None
    on_disconnect: api.OnDisconnect = "cancel"
    cancel_requested: bool = False
    replay: list[dict[str, Any]] = field(default_factory=list)  # this turn's events (and the last one's)
    queued: int = 0  # turns waiting for the lock
    waiting: dict[str, asyncio.Task[Any]] = field(default_factory=dict)  # those turns, by id (turn/cancel)
    approvals: dict[str, _Approval] = field(default_factory=dict)


class TurnHub:
    def __init__(self, run_turn: RunTurn, *, publish: Publish | None = None) -> None:
        self.run_turn = run_turn
        self.publish = publish
        self.watchers: dict[Hashable, Watcher] = {}
        self.sessions: dict[str, _Session] = {}
        self._seq = itertools.count(1)
        self._last_seq = 0
        self._turns: set[asyncio.Task[Any]] = set()

    # -- events ---------------------------------------------------------------------------------------

    def emit(self, event: Any) -> None:
        """Send one event (a `hologram.api.turn` event) to the ring and to every watcher of its session."""
        event.seq = self._last_seq = next(self._seq)
        data = api.wire(event)
        if self.publish is not None:
            try:
                self.publish({"type": api.RING_EVENT_TYPE, "event": data})
            except Exception:  # the ring is best effort; the turn is not
                log.exception("publishing a turn event failed")
        state = self.sessions.get(event.session)
        if state is None:
            return
        state.replay.append(data)
        for key in list(state.watchers):
            watcher = self.watchers.get(key)
            if watcher is None or not watcher.put(data):
                self._detach(event.session, key)

    # -- watching -------------------------------------------------------------------------------------

    def watcher(self, key: Hashable, send: Send, client: str) -> Watcher:
        found = self.watchers.get(key)
        if found is None or found.closed:
            found = self.watchers[key] = Watcher(key, send, client)
        return found

    def watch(self, session: str, watcher: Watcher, *, approvals: bool, after: int | None = None) -> dict[str, Any]:
        state = self.sessions.setdefault(session, _Session())
        state.watchers[watcher.key] = approvals
        if after is not None:
            for data in state.replay:
                if data["seq"] > after:
                    watcher.put(data)
        if approvals:  # requests still open that this client has not seen: it can answer them too
            for pending in state.approvals.values():
                if after is None or pending.event["seq"] <= after:  # later ones were replayed above
                    watcher.put(pending.event)
        running = state.task is not None and not state.task.done()
        return {"session": session, "turn": state.turn if running else None, "seq": self._last_seq}

    def unwatch(self, session: str, key: Hashable) -> None:
        self._detach(session, key)

    def disconnect(self, key: Hashable) -> None:
        """A client went away (its connection closed, its plugin stopped): detach it from every session."""
        watcher = self.watchers.pop(key, None)
        if watcher is not None:
            watcher.close()
        for session in [s for s, state in self.sessions.items() if key in state.watchers]:
            self._detach(session, key)

    def _detach(self, session: str, key: Hashable) -> None:
        state = self.sessions.get(session)
        if state is None or state.watchers.pop(key, None) is None:
            return
        if not any(state.watchers.values()) and state.on_disconnect == "cancel":
            # nobody left who can approve: open requests are denied at once. A turn that outlives its clients
            # (``continue``) keeps them open until the timeout, for a client that comes back to answer.
            for pending in list(state.approvals.values()):
                if not pending.future.done():
                    pending.future.set_result((False, "kernel", "the client that could approve went away"))
        running = state.task is not None and not state.task.done()
        if not state.watchers and running and state.on_disconnect == "cancel":
            # Decided: a turn nobody listens to is stopped, like a Ctrl-C, rather than finished (its answer
            # would go nowhere, and a tool loop could run on for minutes). `on_disconnect = "continue"` is
            # for clients that come back (a browser tab that reloads).
            log.info("the last client of session %s went away; its turn is cancelled", session)
            assert state.task is not None
            state.task.cancel()
        self._forget_if_idle(session)

    def _forget_if_idle(self, session: str) -> None:
        state = self.sessions.get(session)
        if state is not None and not state.watchers and state.task is None and not state.queued:
            del self.sessions[session]

    # -- turns ----------------------------------------------------------------------------------------

    def start(self, params: params_api.StartParams, session: str, watcher: Watcher | None) -> dict[str, Any]:
        """Queue a turn in ``session`` (created by the caller); answers at once with its id."""
        state = self.sessions.setdefault(session, _Session())
        if watcher is not None:
            # A start never takes approvals away from a watcher that has them: one plugin may be several clients
            # (the http plugin is both the open page, which can approve, and /v1, which cannot).
            state.watchers[watcher.key] = params.approvals or state.watchers.get(watcher.key, False)
        turn = uuid.uuid4().hex[:12]
        running = state.task is not None and not state.task.done()
        ahead = state.queued + (1 if running else 0)
        state.queued += 1
        task = asyncio.get_running_loop().create_task(self._run(params, session, turn, state))
        self._turns.add(task)
        task.add_done_callback(self._turns.discard)
        if ahead:
            state.waiting[turn] = task
            self.emit(api.TurnQueued(session=session, turn=turn, text=params.text, client=params.client, ahead=ahead))
        return {"session": session, "turn": turn, "status": "queued" if ahead else "running"}

    async def _run(self, params: params_api.StartParams, session: str, turn: str, state: _Session) -> None:
        try:
            await state.lock.acquire()
        except asyncio.CancelledError:  # cancelled while queued: it never starts, and its clients are told
            state.queued -= 1
            state.waiting.pop(turn, None)
            self.emit(api.TurnEnded(session=session, turn=turn, stop_reason="cancelled"))
            self._forget_if_idle(session)
            return
        try:
            state.waiting.pop(turn, None)
            state.queued -= 1
            state.turn, state.on_disconnect, state.cancel_requested = turn, params.on_disconnect, False
            state.replay = []
            state.task = asyncio.current_task()
            self.emit(api.TurnStarted(session=session, turn=turn, text=params.text, client=params.client))
            try:
                result = await self.run_turn(
                    params.text, session, turn, self.emit, scene=params.scene, partner=params.partner
                )
            except asyncio.CancelledError:
                self.emit(api.TurnEnded(session=session, turn=turn, stop_reason="cancelled"))
                if not state.cancel_requested:
                    # cancelled because its last watcher left, or the kernel is stopping: nothing to report
                    log.info("turn %s of session %s cancelled", turn, session)
            except Exception as exc:
                message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
                kind, status = (exc.kind, exc.status) if isinstance(exc, TurnError) else failure_of(exc)
                self.emit(api.TurnFailed(session=session, turn=turn, message=message, kind=kind, status=status))
                self.emit(api.TurnEnded(session=session, turn=turn, stop_reason="error"))
            else:
                self.emit(
                    api.TurnEnded(
                        session=session,
                        turn=turn,
                        stop_reason=result.ended_by,
                        output=result.output,
                        steps=result.steps,
                        usage=result.usage,
                        errors=result.errors,
                    )
                )
            finally:
                state.task = None
        finally:
            state.lock.release()
        self._forget_if_idle(session)

    def cancel(self, session: str, turn: str | None = None) -> bool:
        """Cancel the session's running turn, or `turn` (running, or queued: dropped before it starts)."""
        state = self.sessions.get(session)
        if state is None:
            return False
        waiting = state.waiting.get(turn) if turn is not None else None
        if waiting is not None:
            waiting.cancel()
            return True
        if state.task is None or state.task.done() or (turn is not None and turn != state.turn):
            return False
        state.cancel_requested = True
        state.task.cancel()
        return True

    def running(self, session: str) -> bool:
        state = self.sessions.get(session)
        return state is not None and (state.task is not None or state.queued > 0)

    async def aclose(self) -> None:
        for task in list(self._turns):
            task.cancel()
        for task in list(self._turns):
            with contextlib.suppress(BaseException):
                await task
        for watcher in self.watchers.values():
            watcher.close()

    # -- approvals ------------------------------------------------------------------------------------

    async def ask(self, request: ApprovalRequest) -> tuple[bool, str, str]:
        """Ask the session's watchers; (approved, by, reason). The executor awaits this before the call."""
        state = self.sessions.get(request.session)
        if state is None or not any(state.watchers.values()):
            reason = "no client that can approve is watching this session"
            approval = uuid.uuid4().hex[:12]
            self._resolved(request, approval, False, "kernel", reason)
            return False, "kernel", reason
        approval = uuid.uuid4().hex[:12]
        future: asyncio.Future[tuple[bool, str, str]] = asyncio.get_running_loop().create_future()
        event = self._requested(request, approval)
        self.emit(event)
        state.approvals[approval] = _Approval(request, future, api.wire(event))
        try:
            approved, by, reason = await asyncio.wait_for(asyncio.shield(future), request.timeout_s)
        except asyncio.TimeoutError:
            approved, by, reason = False, "kernel", f"no answer within {request.timeout_s:g} s"
        except asyncio.CancelledError:  # the turn was cancelled while it waited: the request is closed, and said so
            self._resolved(request, approval, False, "kernel", "the turn was cancelled")
            raise
        finally:
            state.approvals.pop(approval, None)
            if not future.done():
                future.cancel()
        self._resolved(request, approval, approved, by, reason)
        return approved, by, reason

    def answer(self, params: params_api.ApproveParams, by: str, key: Hashable) -> bool:
        """A client's answer; False when the request is no longer open (another client answered first).

        Only a caller the request went to may answer it: one that watches the session and said it can approve
        (`key` is its watcher key: the connection, or ``("plugin", name)``). Anyone else — a second connection
        that read an approval id somewhere, a plugin that does not watch — gets `NotAllowed` and the request
        stays open: an approval is the person's decision, not whoever knows the id."""
        state = self.sessions.get(params.session)
        pending = state.approvals.get(params.approval) if state is not None else None
        if pending is None or pending.future.done():
            return False
        assert state is not None
        if state.watchers.get(key) is not True:
            watching = key in state.watchers
            raise NotAllowed(
                f"{by} cannot answer approvals of session {params.session}: it "
                + ("watches it without approvals: true" if watching else "does not watch it")
                + "; watch the session (turn/watch) with approvals: true to be asked"
            )
        reason = params.reason or ("approved" if params.approved else "refused")
        pending.future.set_result((params.approved, by, reason))
        return True

    def _requested(self, request: ApprovalRequest, approval: str) -> api.ApprovalRequested:
        return api.ApprovalRequested(
            session=request.session,
            turn=request.turn,
            approval=approval,
            call_id=request.call_id,
            tool=request.tool,
            plugin=request.plugin,
            arguments=request.arguments,
            summary=request.summary,
            timeout_s=request.timeout_s,
        )

    def _resolved(self, request: ApprovalRequest, approval: str, approved: bool, by: str, reason: str) -> None:
        self.emit(
            api.ApprovalResolved(
                session=request.session,
                turn=request.turn,
                approval=approval,
                call_id=request.call_id,
                approved=approved,
                by=by,
                reason=reason,
            )
        )
