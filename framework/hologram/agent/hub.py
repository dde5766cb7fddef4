"""The kernel side of the turn API: running turns per session, the clients watching them, their approvals.

Every event of a turn goes through `TurnHub.emit`: the turn's items are derived around it (`TurnItems`), it gets
the next ``seq`` (persisted: `SeqCounter`), is kept for clients that reconnect (the running turn's and the last
finished turn's events of each session, and of the `MAX_IDLE_REPLAYS` sessions most recently left idle) and
queued to each watcher of its session and each observer. Nothing goes on the shared event ring: every plugin
can read the ring, and a turn's input, its tool arguments and its approval requests are not every plugin's
business; a plugin gets events over its own connection, for the sessions it watches, or — when its manifest
requires ``kernel.observe`` — all of them. Each watcher has a queue and a sender task of its own, so one slow
client delays nobody — not the turn, not the other clients — and each sees the events in order. A watcher
whose queue passes `MAX_QUEUED` (a client that stopped reading) is dropped with a warning rather than let the
kernel's memory grow.

Who watches is (delivery, principal): the delivery is a control connection or a plugin's connection, and a
plugin may stand for several people — a browser tab and ``/v1`` in the http plugin, each user of a chat
channel — each a *principal* with its own approval capability. Events go once per delivery.

Turns of one session run one at a time (a second ``turn/start`` waits for the first to end); turns of
different sessions run concurrently. A turn started with ``on_disconnect = "cancel"`` (the CLI's default) is
cancelled, like a Ctrl-C, when the last client watching its session goes away.

Approvals: the executor asks `ask` (through `hologram.agent.approvals.Approver`) before a call that needs a
person. The request goes to the session's watchers as ``approval.requested``; the first ``turn/approve``
decides and every watcher sees ``approval.resolved``. With no watcher that can approve, or none answering
within the timeout, the call is denied — refusing is the safe answer — and the event says why. Only a watcher
(delivery and principal) that declared it can approve may answer (`TurnHub.answer`); knowing a request's id is
not enough, and ``approval.requested`` goes only to the deliveries with such a principal. Several requests may be
open at once (the calls of one step are asked together); each is resolved when answered, timed out, or the
turn ends. The answer is a decision (`hologram.api.params.Decision`): ``approve_for_session`` leaves a grant
of the tool and subject with the session (kept here, not in the session's `_Session`, which goes when the
session is idle; dropped when the session is deleted: `forget`), so its later calls are not asked; ``cancel``
denies and cancels the turn, which resolves the other requests still open.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from hologram.agent.approvals import Answer, ApprovalRequest
from hologram.agent.failure import failure_message, failure_of
from hologram.agent.identity import TurnIdentity
from hologram.agent.items import TurnItems
from hologram.agent.sequence import SeqCounter
from hologram.agent.turn import TurnError
from hologram.api import params as params_api
from hologram.api import turn as api

log = logging.getLogger("hologram.agent")
MAX_QUEUED = 10_000  # events waiting for one watcher; more and it is dropped (it stopped reading)
MAX_IDLE_REPLAYS = 16  # idle sessions whose last turn's events are kept for a client that reconnects
STOP_GRACE_S = 10.0  # after SIGTERM: how long a running turn may go on before it is cancelled
FLUSH_S = 2.0  # then: how long the watchers get to send what is queued for them (the end of each turn)
CANCELLED_WAIT_S = 10.0  # how long a cancelled turn gets to close its session valid (its calls' results)
Send = Callable[[dict[str, Any]], Awaitable[None]]
DECISION_REASONS = {  # an answer's reason when the client gave none
    "approve_once": "approved",
    "approve_for_session": "approved for this session",
    "always": "approved always",
    "deny": "refused",
    "cancel": "refused; the turn is cancelled",
}


class NotAllowed(Exception):
    """An answer to an approval from a caller that may not give it (see `TurnHub.answer`)."""


class RunTurn(Protocol):
    """Runs one turn: (text, session, turn, emit), the scene the client declared and its partner, the input
    parts of a turn started with ``input`` (None: a text-only turn), and who the turn is from (its channel,
    client and partner: `hologram.agent.identity`)."""

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
        parts: list[dict[str, Any]] | None = None,
        identity: TurnIdentity | None = None,
    ) -> Awaitable[Any]: ...


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
            finally:
                self._queue.task_done()

    async def flushed(self) -> None:
        """Until every event queued for this watcher is sent (or it went away)."""
        if not self.closed and self._task is not None and not self._task.done():
            await self._queue.join()

    def close(self) -> None:
        self.closed = True
        if self._task is not None:
            self._task.cancel()


@dataclass
class _Approval:
    request: ApprovalRequest
    future: asyncio.Future[Answer]
    event: dict[str, Any]  # the approval.requested event as sent (a client that attaches later gets it)


@dataclass
class _Session:
    # delivery key → {principal → may approve}: a plugin's connection may carry several principals
    watchers: dict[Hashable, dict[str, bool]] = field(default_factory=dict)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    task: asyncio.Task[Any] | None = None  # the running turn
    turn: str | None = None
    on_disconnect: api.OnDisconnect = "cancel"
    cancel_requested: bool = False
    replay: list[dict[str, Any]] = field(default_factory=list)  # this turn's events (and the last one's)
    queued: int = 0  # turns waiting for the lock
    waiting: dict[str, asyncio.Task[Any]] = field(default_factory=dict)  # those turns, by id (turn/cancel)
    approvals: dict[str, _Approval] = field(default_factory=dict)
    items: TurnItems | None = None  # the running turn's
    appending: int = 0  # messages appended without a turn (`TurnHub.append`) waiting for the turns ahead of them

    def can_approve(self, key: Hashable | None = None) -> bool:
        """Some watcher (of delivery ``key``, or any) may answer approvals."""
        if key is not None:
            return any(self.watchers.get(key, {}).values())
        return any(any(principals.values()) for principals in self.watchers.values())


class TurnHub:
    def __init__(self, run_turn: RunTurn, *, seq_file: Path | None = None) -> None:
        self.run_turn = run_turn
        self.watchers: dict[Hashable, Watcher] = {}
        self.observers: set[Hashable] = set()  # deliveries that get every session's events (kernel.observe)
        self.sessions: dict[str, _Session] = {}
        self._seq = SeqCounter(seq_file)
        self._idle_replays: OrderedDict[str, list[dict[str, Any]]] = OrderedDict()
        self._turns: set[asyncio.Task[Any]] = set()
        self.stopping = False  # the kernel is stopping: no turn starts any more (`drain`)
        self._drained: set[asyncio.Task[Any]] = set()  # turns the drain cancelled (not to be cancelled twice)
        # session → (tool, subject) answered approve_for_session; subject None: every call of the tool
        self.grants: dict[str, set[tuple[str, str | None]]] = {}

    @property
    def last_seq(self) -> int:
        return self._seq.last

    # -- events ---------------------------------------------------------------------------------------

    def emit(self, event: Any) -> None:
        """Send one event (a `hologram.api.turn` event) to every watcher of its session, with its items."""
        state = self.sessions.get(event.session)
        items = state.items if state is not None and state.turn == event.turn else None
        if items is None:
            self._send(event, state)
            return
        for before in items.before(event):
            self._send(before, state)
        self._send(event, state)
        for after in items.after(event):
            self._send(after, state)

    def _send(self, event: Any, state: _Session | None) -> None:
        event.seq = self._seq()
        data = api.wire(event)
        for key in list(self.observers):
            observer = self.watchers.get(key)
            if observer is None or not observer.put(data):
                self.observers.discard(key)
        if state is None:
            return
        state.replay.append(data)
        approval = data["type"] == "approval.requested"
        for key in list(state.watchers):
            if key in self.observers:
                continue  # it has the event already
            if approval and not state.can_approve(key):
                continue  # a request goes only to whoever may answer it
            watcher = self.watchers.get(key)
            if watcher is None or not watcher.put(data):
                self._detach(event.session, key)

    # -- watching -------------------------------------------------------------------------------------

    def watcher(self, key: Hashable, send: Send, client: str) -> Watcher:
        found = self.watchers.get(key)
        if found is None or found.closed:
            found = self.watchers[key] = Watcher(key, send, client)
        return found

    def watch(
        self, session: str, watcher: Watcher, *, approvals: bool, after: int | None = None, principal: str = ""
    ) -> dict[str, Any]:
        state = self._state(session)
        could_approve = state.can_approve(watcher.key)
        state.watchers.setdefault(watcher.key, {})[principal] = approvals
        if after is not None:
            for data in state.replay:
                if data["seq"] > after and (data["type"] != "approval.requested" or approvals or could_approve):
                    watcher.put(data)
        if approvals and not could_approve:  # open requests this delivery was not sent: it can answer them now
            for pending in state.approvals.values():
                if after is None or pending.event["seq"] <= after:  # later ones were replayed above
                    watcher.put(pending.event)
        running = state.task is not None and not state.task.done()
        return {"session": session, "turn": state.turn if running else None, "seq": self.last_seq}

    def observe(self, watcher: Watcher) -> None:
        """Send ``watcher`` every event of every session from now on (it may not answer approvals)."""
        self.observers.add(watcher.key)

    def unwatch(self, session: str, key: Hashable, principal: str | None = None) -> None:
        """Stop ``principal`` of ``key`` watching ``session`` (None: every principal of it)."""
        state = self.sessions.get(session)
        if state is None or key not in state.watchers:
            return
        principals = state.watchers[key]
        if principal is not None and len(principals) > 1:
            principals.pop(principal, None)
            self._after_leaving(session, state)
            return
        self._detach(session, key)

    def _state(self, session: str) -> _Session:
        state = self.sessions.get(session)
        if state is None:
            state = self.sessions[session] = _Session()
            state.replay = self._idle_replays.pop(session, [])  # its last turn, for a client that reconnects
        return state

    def disconnect(self, key: Hashable) -> None:
        """A client went away (its connection closed, its plugin stopped): detach it from every session."""
        watcher = self.watchers.pop(key, None)
        if watcher is not None:
            watcher.close()
        self.observers.discard(key)
        for session in [s for s, state in self.sessions.items() if key in state.watchers]:
            self._detach(session, key)

    def _detach(self, session: str, key: Hashable) -> None:
        state = self.sessions.get(session)
        if state is None or state.watchers.pop(key, None) is None:
            return
        self._after_leaving(session, state)

    def _after_leaving(self, session: str, state: _Session) -> None:
        if not state.can_approve() and state.on_disconnect == "cancel":
            # nobody left who can approve: open requests are denied at once. A turn that outlives its clients
            # (``continue``) keeps them open until the timeout, for a client that comes back to answer.
            for pending in list(state.approvals.values()):
                if not pending.future.done():
                    pending.future.set_result(
                        Answer(False, "kernel", "the client that could approve went away", "deny")
                    )
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
        if state is not None and not state.watchers and state.task is None and not state.queued and not state.appending:
            del self.sessions[session]
            if state.replay:
                self._idle_replays[session] = state.replay
                self._idle_replays.move_to_end(session)
                while len(self._idle_replays) > MAX_IDLE_REPLAYS:
                    self._idle_replays.popitem(last=False)

    def forget(self, session: str) -> None:
        """A deleted session: nothing of it is kept for replay, and its grants for the session go with it."""
        self._idle_replays.pop(session, None)
        self.grants.pop(session, None)

    # -- turns ----------------------------------------------------------------------------------------

    def start(
        self,
        params: params_api.StartParams,
        session: str,
        watcher: Watcher | None,
        identity: TurnIdentity | None = None,
    ) -> dict[str, Any]:
        """Queue a turn in ``session`` (created by the caller); answers at once with its id. ``identity``: who
        it is from, as the caller's transport established it (default: the params' client as its channel)."""
        if identity is None:
            identity = TurnIdentity(params.client, params.client, partner=params.partner)
        state = self._state(session)
        if watcher is not None:
            # a start never takes approvals away from a principal that has them (a second start of a client that
            # did not repeat ``approvals``); the page and /v1 are two principals of one plugin
            principals = state.watchers.setdefault(watcher.key, {})
            principals[params.principal] = params.approvals or principals.get(params.principal, False)
        turn = uuid.uuid4().hex[:12]
        running = state.task is not None and not state.task.done()
        ahead = state.queued + (1 if running else 0)
        state.queued += 1
        task = asyncio.get_running_loop().create_task(self._run(params, session, turn, state, identity))
        self._turns.add(task)
        task.add_done_callback(self._turns.discard)
        if ahead:
            state.waiting[turn] = task
            self.emit(
                api.TurnQueued(
                    session=session,
                    turn=turn,
                    text=params.prompt,
                    client=params.client,
                    ahead=ahead,
                    channel=identity.channel,
                    partner=identity.partner,
                )
            )
        return {"session": session, "turn": turn, "status": "queued" if ahead else "running"}

    async def _run(
        self, params: params_api.StartParams, session: str, turn: str, state: _Session, identity: TurnIdentity
    ) -> None:
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
            items = state.items = TurnItems(session, turn)
            self.emit(
                api.TurnStarted(
                    session=session,
                    turn=turn,
                    text=params.prompt,
                    client=params.client,
                    channel=identity.channel,
                    partner=identity.partner,
                )
            )
            try:
                result = await self.run_turn(
                    params.prompt, session, turn, self.emit, scene=params.scene, partner=params.partner,
                    parts=params.stored_parts(), identity=identity,
                )  # fmt: skip
            except asyncio.CancelledError:
                self.emit(api.TurnEnded(session=session, turn=turn, stop_reason="cancelled", output=items.partial))
                if not state.cancel_requested:
                    # cancelled because its last watcher left, or the kernel is stopping: nothing to report
                    log.info("turn %s of session %s cancelled", turn, session)
            except Exception as exc:
                message = failure_message(exc)
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
                state.items = None
        finally:
            state.lock.release()
        self._forget_if_idle(session)

    def append(self, session: str, write: Callable[[], Any]) -> str:
        """Store a message in ``session`` without a turn (``sessions/append``): ``write()`` at once when no turn
        runs or waits there ("stored"), else right after them ("queued"): a session's writes keep their order,
        and a message never lands between a running turn's tool call and its result."""
        state = self.sessions.get(session)
        if state is None or not (state.lock.locked() or state.queued or state.appending):
            write()
            return "stored"
        state.appending += 1
        task = asyncio.get_running_loop().create_task(self._append_later(session, state, write))
        self._turns.add(task)
        task.add_done_callback(self._turns.discard)
        return "queued"

    async def _append_later(self, session: str, state: _Session, write: Callable[[], Any]) -> None:
        try:
            async with state.lock:  # FIFO behind the turns (and appends) that asked before it
                write()
        except Exception:  # storage failed: logged; the turns around it go on
            log.exception("a message appended to session %s could not be stored", session)
        finally:
            state.appending -= 1
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

    def read_turn(self, session: str, turn: str) -> dict[str, Any] | None:
        """``turn/read`` from what the hub keeps (None: not kept here; the store has it, or nothing does)."""
        state = self.sessions.get(session)
        if state is not None and turn in state.waiting:
            return {"session": session, "turn": turn, "status": "queued", "items": []}
        replay = state.replay if state is not None else self._idle_replays.get(session, [])
        events = [e for e in replay if e.get("turn") == turn]
        if not events:
            return None
        items: dict[str, dict[str, Any]] = {}
        for event in events:
            if event["type"] in ("item.started", "item.completed"):
                item = event["item"]
                items[item["id"]] = {**items.get(item["id"], {}), **item}
        running = state is not None and state.turn == turn and state.task is not None
        status = "running" if running else "ended"
        open_text = {
            k: v for k, v in items.items() if "status" not in v and v["type"] in ("agent_message", "reasoning")
        }
        for event in events:  # the text an open message has streamed so far
            if event["type"] in ("content.delta", "reasoning.delta") and event["item"] in open_text:
                item = open_text[event["item"]]
                item["text"] = item.get("text", "") + event["text"]
        ended = next((e for e in events if e["type"] == "turn.ended"), None)
        result = {"session": session, "turn": turn, "status": status, "items": list(items.values())}
        if ended is not None:
            result["stop_reason"] = ended["stop_reason"]
            result["output"] = ended["output"]
        return result

    def running(self, session: str) -> bool:
        state = self.sessions.get(session)
        return state is not None and (state.task is not None or state.queued > 0)

    async def drain(self, grace: float = STOP_GRACE_S) -> None:
        """The kernel is stopping, its plugins still up: no new turn; each queued one is dropped (its clients
        get ``turn.ended`` ``cancelled``); a running one may finish within ``grace``, then it is cancelled
        (its partial answer stored, its clients told); then what is queued for the watchers is sent. Before
        this, SIGTERM stopped the plugins first and a queued turn then ran without its tools."""
        self.stopping = True
        for state in self.sessions.values():
            for waiting in list(state.waiting.values()):
                waiting.cancel()
        running = [task for task in self._turns if not task.done()]
        if running:
            log.info("stopping: %d turn(s) still running, waiting up to %.0f s", len(running), grace)
            _, late = await asyncio.wait(running, timeout=grace)
            self._drained.update(late)
            for task in late:
                for state in self.sessions.values():
                    if state.task is task:
                        state.cancel_requested = True
                task.cancel()
            if late:
                log.info("stopping: %d turn(s) cancelled after %.0f s", len(late), grace)
                await asyncio.wait(late, timeout=CANCELLED_WAIT_S)
        flushing = [asyncio.ensure_future(w.flushed()) for w in self.watchers.values()]
        if flushing:
            _, unsent = await asyncio.wait(flushing, timeout=FLUSH_S)
            for task in unsent:
                task.cancel()

    async def aclose(self) -> None:
        for task in list(self._turns):
            if task not in self._drained:  # a second cancel would cut short the first one's clean-up (the
                task.cancel()  # results of its open calls), leaving a call without a result on disk

        for task in list(self._turns):
            with contextlib.suppress(BaseException):
                await task
        for watcher in self.watchers.values():
            watcher.close()

    # -- approvals ------------------------------------------------------------------------------------

    async def ask(self, request: ApprovalRequest) -> Answer:
        """Ask the session's watchers (unless a grant for the session answers); the executor awaits this before
        the call."""
        if (request.tool, request.subject) in self.grants.get(request.session, ()):
            return Answer(True, "session", "approved for this session", "approve_for_session")
        state = self.sessions.get(request.session)
        if state is None or not state.can_approve():
            answer = Answer(False, "kernel", "no client that can approve is watching this session", "deny")
            self._resolved(request, uuid.uuid4().hex[:12], answer)
            return answer
        approval = uuid.uuid4().hex[:12]
        future: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        event = self._requested(request, approval)
        self.emit(event)
        state.approvals[approval] = _Approval(request, future, api.wire(event))  # as sent: seq and item set
        try:
            answer = await asyncio.wait_for(asyncio.shield(future), request.timeout_s)
        except asyncio.TimeoutError:
            answer = Answer(False, "kernel", f"no answer within {request.timeout_s:g} s", "deny")
        except asyncio.CancelledError:  # the turn was cancelled while it waited: the request is closed, and said so
            answered = future.done() and not future.cancelled()  # a "cancel" decision: it says who and why
            self._resolved(
                request,
                approval,
                future.result() if answered else Answer(False, "kernel", "the turn was cancelled", "cancel"),
            )
            raise
        finally:
            state.approvals.pop(approval, None)
            if not future.done():
                future.cancel()
        self._resolved(request, approval, answer)
        return answer

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
        principals = state.watchers.get(key, {})
        if principals.get(params.principal) is not True:
            who = f"{by} ({params.principal})" if params.principal else by
            watching = params.principal in principals
            raise NotAllowed(
                f"{who} cannot answer approvals of session {params.session}: it "
                + ("watches it without approvals: true" if watching else "does not watch it")
                + "; watch the session (turn/watch) with approvals: true to be asked"
            )
        decision = params.chosen
        approved = decision not in ("deny", "cancel")
        reason = params.reason or DECISION_REASONS[decision]
        pending.future.set_result(Answer(approved, by, reason, decision))
        request = pending.request
        if decision == "approve_for_session":
            self.grants.setdefault(request.session, set()).add((request.tool, request.subject))
        elif decision == "cancel":
            self.cancel(request.session, request.turn or None)
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

    def _resolved(self, request: ApprovalRequest, approval: str, answer: Answer) -> None:
        self.emit(
            api.ApprovalResolved(
                session=request.session,
                turn=request.turn,
                approval=approval,
                call_id=request.call_id,
                approved=answer.approved,
                by=answer.by,
                reason=answer.reason,
                decision=answer.decision,
            )
        )
