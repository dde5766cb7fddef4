"""The kernel side of the turn API: running turns per session, the clients watching them, their approvals.

Every event of a turn goes through `TurnHub.emit`: the turn's items are derived around it (`TurnItems`), it gets
the next ``seq`` (persisted: `SeqCounter`), is encoded once (its wire JSON, `hologram.agent.replay.Sent`), kept for
clients that reconnect (the running turn's events of each session, and the last turns of recently idle sessions:
`hologram.agent.replay`, bounded in bytes by ``[delivery]``) and queued to each watcher of its session and each
observer (`hologram.agent.watcher`: a queue and a sender task each, bounded in bytes; a client too far behind is
dropped and may resume from its seq). Nothing goes on the shared event ring: every plugin can read the ring, and a
turn's input, its tool arguments and its approval requests are not every plugin's business; a plugin gets events
over its own connection, for the sessions it watches, or — when its manifest requires ``kernel.observe`` — all of
them. `TurnHub.stats` says what is kept and queued, in bytes.

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
import dataclasses
import logging
import uuid
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from hologram.agent.approvals import Answer, ApprovalRequest
from hologram.agent.failure import failure_message, failure_of
from hologram.agent.identity import TurnIdentity
from hologram.agent.items import TurnItems
from hologram.agent.replay import IdlePool, Replay, Sent
from hologram.agent.scope import TurnScope
from hologram.agent.sequence import SeqCounter
from hologram.agent.turn import TurnError
from hologram.agent.watcher import Send, Watcher
from hologram.api import params as params_api
from hologram.api import turn as api
from hologram.base import _fastjson
from hologram.config.settings import DeliverySettings

log = logging.getLogger("hologram.agent")
STOP_GRACE_S = 10.0  # after SIGTERM: how long a running turn may go on before it is cancelled
FLUSH_S = 2.0  # then: how long the watchers get to send what is queued for them (the end of each turn)
CANCELLED_WAIT_S = 10.0  # how long a cancelled turn gets to close its session valid (its calls' results)
DECISION_REASONS = {  # an answer's reason when the client gave none
    "approve_once": "approved",
    "approve_for_session": "approved for this session",
    "always": "approved always",
    "deny": "refused",
    "cancel": "refused; the turn is cancelled",
}


class NotAllowed(Exception):
    """An answer to an approval from a caller that may not give it (see `TurnHub.answer`)."""


def scope_of(params: params_api.StartParams) -> TurnScope | None:
    """The `TurnScope` of a turn started for another (``tools``, ``max_steps``, ``parent``), or None."""
    if params.tools is None and params.max_steps is None and params.parent is None:
        return None
    tools = frozenset(params.tools) if params.tools is not None else None
    return TurnScope(tools, params.max_steps, params.parent)


class RunTurn(Protocol):
    """Runs one turn: (text, session, turn, emit), the scene the client declared and its partner, the input
    parts of a turn started with ``input`` (None: a text-only turn), and who the turn is from (its channel,
    client and partner: `hologram.agent.identity`), and when the input was said if not now (``at``, epoch
    seconds: an imported message; passed only when given)."""

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
        scope: TurnScope | None = None,
        at: float | None = None,
    ) -> Awaitable[Any]: ...


@dataclass
class _Approval:
    request: ApprovalRequest
    future: asyncio.Future[Answer]
    event: Sent  # the approval.requested event as sent (a client that attaches later gets it)


@dataclass
class _Session:
    # delivery key → {principal → may approve}: a plugin's connection may carry several principals
    watchers: dict[Hashable, dict[str, bool]] = field(default_factory=dict)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    task: asyncio.Task[Any] | None = None  # the running turn
    turn: str | None = None
    on_disconnect: api.OnDisconnect = "cancel"
    cancel_requested: bool = False
    replay: Replay = field(default_factory=Replay)  # this turn's events (and the last one's, until a new starts)
    queued: int = 0  # turns waiting for the lock
    waiting: dict[str, asyncio.Task[Any]] = field(default_factory=dict)  # those turns, by id (turn/cancel)
    approvals: dict[str, _Approval] = field(default_factory=dict)
    items: TurnItems | None = None  # the running turn's
    appending: int = 0  # messages appended without a turn (`TurnHub.append`) waiting for the turns ahead of them
    children: set[tuple[str, str]] = field(default_factory=set)  # (session, turn) started for the running turn
    parent: str | None = None  # the running turn works for this session's (agent/scope.py): approvals go there

    def can_approve(self, key: Hashable | None = None) -> bool:
        """Some watcher (of delivery ``key``, or any) may answer approvals."""
        if key is not None:
            return any(self.watchers.get(key, {}).values())
        return any(any(principals.values()) for principals in self.watchers.values())


class TurnHub:
    def __init__(
        self, run_turn: RunTurn, *, seq_file: Path | None = None, delivery: DeliverySettings | None = None
    ) -> None:
        self.run_turn = run_turn
        self.delivery = delivery or DeliverySettings()
        self.watchers: dict[Hashable, Watcher] = {}
        self.observers: set[Hashable] = set()  # deliveries that get every session's events (kernel.observe)
        self.sessions: dict[str, _Session] = {}
        self._seq = SeqCounter(seq_file)
        directory = seq_file.parent if seq_file is not None else None  # the data directory: the idle JSON's spool
        self._idle = IdlePool(self.delivery.replay_idle_bytes, self.delivery.replay_idle_memory_bytes, directory)
        self._turns: set[asyncio.Task[Any]] = set()
        self.stopping = False  # the kernel is stopping: no turn starts any more (`drain`)
        self._drained: set[asyncio.Task[Any]] = set()  # turns the drain cancelled (not to be cancelled twice)
        # session → (tool, subject) answered approve_for_session; subject None: every call of the tool
        self.grants: dict[str, set[tuple[str, str | None]]] = {}

    @property
    def last_seq(self) -> int:
        return self._seq.last

    def reserve_seq(self) -> None:
        """Reserve the next block of event numbers now (`SeqCounter.reserve_ahead`), not in the first turn."""
        self._seq.reserve_ahead()

    # -- events ---------------------------------------------------------------------------------------

    def emit(self, event: Any) -> None:
        """Send one event (a `hologram.api.turn` event) to every watcher of its session, with its items."""
        self._emit(event)

    def _emit(self, event: Any) -> Sent:
        """`emit`, returning the event as sent."""
        state = self.sessions.get(event.session)
        items = state.items if state is not None and state.turn == event.turn else None
        if items is None:
            return self._send(event, state)
        for before in items.before(event):
            self._send(before, state)
        sent = self._send(event, state)
        for after in items.after(event):
            self._send(after, state)
        return sent

    def _send(self, event: Any, state: _Session | None) -> Sent:
        event.seq = self._seq()
        data = api.wire(event)
        # encoded once: every watcher sends these bytes, and they are what the replay and the queues count
        sent = Sent(event.seq, data["type"], event.turn, _fastjson.dumps_kept(data))
        for key in list(self.observers):
            observer = self.watchers.get(key)
            if observer is None or not observer.put(sent):
                self.observers.discard(key)
        if state is None:
            return sent
        state.replay.add(sent, self.delivery.replay_turn_bytes)
        for key in list(state.watchers):
            if key in self.observers:
                continue  # it has the event already
            if sent.approval and not state.can_approve(key):
                continue  # a request goes only to whoever may answer it
            watcher = self.watchers.get(key)
            if watcher is None or not watcher.put(sent):
                self._detach(event.session, key)
        return sent

    # -- watching -------------------------------------------------------------------------------------

    def watcher(
        self, key: Hashable, send: Send, client: str, on_drop: Callable[[Watcher], None] | None = None
    ) -> Watcher:
        """The watcher of delivery ``key`` (made on first use). ``on_drop``: how its transport tells the client it
        was dropped for falling too far behind (after the hub detached it from every session)."""
        found = self.watchers.get(key)
        if found is None or found.closed:

            def dropped(watcher: Watcher) -> None:
                if self.watchers.get(watcher.key) is watcher:
                    self.disconnect(watcher.key)
                if on_drop is not None:
                    on_drop(watcher)

            bound = self.delivery.client_queue_bytes
            found = self.watchers[key] = Watcher(key, send, client, bound=bound, on_drop=dropped)
        return found

    def watch(
        self, session: str, watcher: Watcher, *, approvals: bool, after: int | None = None, principal: str = ""
    ) -> dict[str, Any]:
        """Add the watcher (its principal) to ``session``; with ``after``, first queue it what is kept of the session
        with a greater seq. The answer says how many were replayed (and their bytes), the first and last one's
        seq, and ``gap`` when events after ``after`` are no longer kept (the byte bound, or a later turn started).

        What is kept of a session is the run of its latest events, so every event of the session with a seq from
        ``replay_first`` to ``replay_last`` is among the ``replayed``: a client that already gets the session's events
        (the http plugin, resuming one of its streams) counts the distinct seqs of that range it has been sent,
        live or replayed, and has the whole replay when the count is ``replayed``."""
        state = self._state(session)
        could_approve = state.can_approve(watcher.key)
        state.watchers.setdefault(watcher.key, {})[principal] = approvals
        replayed, size, first, last = 0, 0, None, None
        if after is not None:
            for sent in state.replay.after(after):
                if sent.approval and not (approvals or could_approve):
                    continue
                if not watcher.put(sent, replay=True):
                    break  # closed meanwhile
                replayed, size, last = replayed + 1, size + sent.size, sent.seq
                first = sent.seq if first is None else first
        if approvals and not could_approve:  # open requests this delivery was not sent: it can answer them now
            for pending in state.approvals.values():
                if after is None or pending.event.seq <= after:  # later ones were replayed above
                    watcher.put(pending.event)
        running = state.task is not None and not state.task.done()
        return {
            "session": session,
            "turn": state.turn if running else None,
            "seq": self.last_seq,
            "replayed": replayed,
            "replay_bytes": size,
            "replay_first": first,
            "replay_last": last,
            "gap": after is not None and state.replay.gap(after),
        }

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
            kept = self._idle.take(session)  # its last turn, for a client that reconnects
            if kept is not None:
                state.replay = kept
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
            self._idle.put(session, state.replay)  # what is kept of an idle session is bounded all together

    def forget(self, session: str) -> None:
        """A deleted session: nothing of it is kept for replay, and its grants for the session go with it."""
        self._idle.take(session)
        self.grants.pop(session, None)

    def stats(self) -> dict[str, Any]:
        """What the hub keeps for clients, in bytes of wire JSON: the replays of sessions in use (running turns,
        watched sessions) and of idle ones, and the events waiting in the watchers' queues; with the bounds."""
        active = [state.replay for state in self.sessions.values()]
        return {
            "sessions": len(self.sessions),
            "replay_bytes": sum(r.size for r in active),
            "replay_events": sum(len(r) for r in active),
            "replay_max_bytes": max((r.size for r in active), default=0),
            "idle_sessions": len(self._idle.replays),
            "idle_bytes": self._idle.size,
            "idle_events": sum(len(r) for r in self._idle.replays.values()),
            "idle_memory_bytes": self._idle.in_memory,  # the rest of idle_bytes is on disk (replay_idle_memory_bytes)
            "watchers": len(self.watchers),
            "queued_bytes": sum(w.queued_bytes for w in self.watchers.values()),
            "bounds": self.delivery.model_dump(),
        }

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
        parent = self.sessions.get(params.parent) if params.parent is not None else None
        if parent is not None:  # cancelled when the parent's turn ends (agent/scope.py); the caller checked it runs
            parent.children.add((session, turn))
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
            state.parent = params.parent
            state.replay.restart()
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
                    parts=params.stored_parts(), identity=identity, scope=scope_of(params),
                    **({"at": float(params.at)} if params.at is not None else {}),  # an imported message's time
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
                state.parent = None
                children, state.children = state.children, set()
                for child_session, child_turn in children:  # no turn started for this one outlives it
                    self.cancel(child_session, child_turn)
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
        replay = state.replay if state is not None else self._idle.get(session)
        kept = [sent for sent in replay.kept() if sent.turn == turn] if replay is not None else []
        running = state is not None and state.turn == turn and state.task is not None
        whole = bool(kept) and kept[0].kind in ("turn.started", "turn.queued")
        if not kept or not (running or whole):  # an ended turn whose start the bound dropped: the store has it
            return None
        items: dict[str, dict[str, Any]] = {}
        ended: dict[str, Any] | None = None
        for sent in kept:  # decoded: the items and the end, not the deltas of a long turn
            if sent.kind in ("item.started", "item.completed"):
                item = _fastjson.loads(sent.line)["item"]
                items[item["id"]] = {**items.get(item["id"], {}), **item}
            elif sent.kind == "turn.ended":
                ended = _fastjson.loads(sent.line)
        status = "running" if running else "ended"
        open_text = {
            k: v for k, v in items.items() if "status" not in v and v["type"] in ("agent_message", "reasoning")
        }
        streamed: dict[str, list[str]] = {}
        for sent in kept if open_text else ():  # the text an open message has streamed so far
            if sent.kind in ("content.delta", "reasoning.delta"):
                event = _fastjson.loads(sent.line)
                if event["item"] in open_text:
                    streamed.setdefault(event["item"], []).append(event["text"])
        for key, parts in streamed.items():
            open_text[key]["text"] = "".join(parts)
        result = {"session": session, "turn": turn, "status": status, "items": list(items.values())}
        if ended is not None:
            result["stop_reason"] = ended["stop_reason"]
            result["output"] = ended["output"]
        return result

    def turn_running(self, session: str) -> bool:
        """A turn of ``session`` is running now (not only queued)."""
        state = self.sessions.get(session)
        return state is not None and state.task is not None and not state.task.done()

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
        self._idle.close()  # its spool's file descriptor

    # -- approvals ------------------------------------------------------------------------------------

    async def ask(self, request: ApprovalRequest) -> Answer:
        """Ask the session's watchers (unless a grant for the session answers); the executor awaits this before
        the call."""
        if (request.tool, request.subject) in self.grants.get(request.session, ()):
            return Answer(True, "session", "approved for this session", "approve_for_session")
        state = self.sessions.get(request.session)
        shown = request  # as the clients asked see it
        if state is not None and not state.can_approve():
            state, shown = self._asker_of(state, request)
        if state is None or not state.can_approve():
            answer = Answer(False, "kernel", "no client that can approve is watching this session", "deny")
            self._resolved(request, uuid.uuid4().hex[:12], answer)
            return answer
        approval = uuid.uuid4().hex[:12]
        future: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        sent = self._emit(self._requested(shown, approval))
        state.approvals[approval] = _Approval(request, future, sent)  # as sent: seq and item set

        def resolved(answer: Answer) -> None:
            self._resolved(request, approval, answer)
            if shown is not request:  # the parent's clients were asked: they see the decision too
                self._resolved(shown, approval, answer)

        try:
            answer = await asyncio.wait_for(asyncio.shield(future), request.timeout_s)
        except asyncio.TimeoutError:
            answer = Answer(False, "kernel", f"no answer within {request.timeout_s:g} s", "deny")
        except asyncio.CancelledError:  # the turn was cancelled while it waited: the request is closed, and said so
            answered = future.done() and not future.cancelled()  # a "cancel" decision: it says who and why
            resolved(future.result() if answered else Answer(False, "kernel", "the turn was cancelled", "cancel"))
            raise
        finally:
            state.approvals.pop(approval, None)
            if not future.done():
                future.cancel()
        resolved(answer)
        return answer

    def _asker_of(self, state: _Session, request: ApprovalRequest) -> tuple[_Session, ApprovalRequest]:
        """Who is asked about a call of a turn nobody watching it can approve: when it works for another turn (a
        sub-agent, agent/scope.py), the clients of that one's session (up the chain), the request shown there
        as its running turn's and saying whose it is; else the session itself (and nobody answers)."""
        shown = request
        seen = {request.session}
        while not state.can_approve() and state.parent is not None and state.parent not in seen:
            parent = self.sessions.get(state.parent)
            if parent is None or parent.turn is None:
                break
            seen.add(state.parent)
            summary = f"sub-agent (session {shown.session}): {shown.summary or shown.tool}"
            shown = dataclasses.replace(shown, session=state.parent, turn=parent.turn, summary=summary)
            state = parent
        return (state, shown) if state.can_approve() else (self.sessions[request.session], request)

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
