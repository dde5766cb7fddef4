"""Wiring the agent into a running kernel: providers from settings, stage hooks from the lock, tools from
the supervisor, sessions in the data directory, control methods for clients, ``kernel.sessions`` for plugins.

    kernel = Kernel(lock, data_dir)
    attach_agent(kernel)                  # before kernel.run()

Control methods added (JSON-RPC over the control socket; see docs/agent.md for the streaming protocol):
``ask`` {text, session?, interactive?}, ``turn/cancel`` {session}, ``sessions/list``, ``sessions/events``.
Kernel facility ``kernel.sessions``: ``approve(session_id, tool, arguments, summary)`` → {approved, reason}.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hologram import protocol
from hologram.agent.channel import Channel, calling_connection
from hologram.agent.tools import ToolRegistry
from hologram.agent.turn import DEFAULT_CONTEXT_WINDOW, Agent, TurnError
from hologram.errors import HologramError
from hologram.llm import LLMConfigError, ProviderChain
from hologram.memory.session_memory import SessionMemory
from hologram.rpc import INVALID_PARAMS, TURN_FAILED, RpcError
from hologram.sessions import SessionStore, messages_from_events
from hologram.settings import Settings
from hologram.stages import StageDispatcher, install_from_lock

if TYPE_CHECKING:
    from hologram.kernel import Kernel
    from hologram.lock import Lock
    from hologram.supervisor import Supervisor

log = logging.getLogger("hologram.agent")


@dataclass
class ActiveTurn:
    task: asyncio.Task[Any]
    channel: Channel
    cancel_requested: bool = False


class AgentService:
    """The agent of one kernel: turns per session (one at a time per session), their clients, approvals."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self._forwarding: set[asyncio.Task[None]] = set()
        self.active: dict[str, ActiveTurn] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    # -- control methods ------------------------------------------------------------------------------

    async def ask(self, params: dict[str, Any]) -> dict[str, Any]:
        text = params.get("text")
        if not isinstance(text, str) or not text.strip():
            raise RpcError(INVALID_PARAMS, "ask needs a non-empty 'text'")
        channel = Channel(calling_connection(), interactive=bool(params.get("interactive", False)))
        store = self.agent.store
        session = params.get("session")
        sid = str(session) if session else store.create_session(channel.name)
        lock = self._locks.setdefault(sid, asyncio.Lock())
        async with lock:
            task = asyncio.ensure_future(self.agent.run_turn(text, session_id=sid, on_event=channel.event))
            active = ActiveTurn(task, channel)
            self.active[sid] = active
            await channel.send(protocol.TURN_STARTED, {"session": sid})
            try:
                result = await task
            except asyncio.CancelledError:
                # Decided: a turn nobody listens to is stopped, like a Ctrl-C, rather than finished (its
                # answer would go nowhere, and a tool loop could run on for minutes). A client that went away
                # without turn/cancel (killed, socket closed) gets here: the control server closes the
                # connection at EOF, and `Connection.close` cancels its running handlers, this one included
                # (the cancellation also reaches ``task``, which this handler awaits).
                # Mutation check (done): `Connection.close` leaving the handlers of a connection at EOF running
                # turns tests/e2e/test_agent_interactive.py::test_a_killed_ask_client_makes_the_kernel_cancel_the_turn
                # red (it was `_watch_client`, a 0.2 s poll of the connection, before close() did this).
                if not active.cancel_requested:
                    log.info("the client of session %s went away; its turn is cancelled", sid)
                    task.cancel()
                    with contextlib.suppress(BaseException):
                        await task
                    raise
                return {"session": sid, "cancelled": True, "output": ""}
            except TurnError as exc:
                raise RpcError(TURN_FAILED, str(exc), {"session": sid}) from None
            except HologramError as exc:  # a damaged sessions.db page under this session: the file and the fix
                raise RpcError(TURN_FAILED, one_line(exc), {"session": sid}) from None
            finally:
                self.active.pop(sid, None)
        return {
            "session": result.session_id,
            "turn": result.turn_id,
            "output": result.output,
            "steps": result.steps,
            "ended_by": result.ended_by,
            "errors": result.errors,
            "usage": result.usage,
        }

    def forward_output(self, event: dict[str, Any]) -> None:
        """A supervisor event listener: live output of a running tool (shell, code) goes to the client of the
        turn that called it, as it comes."""
        sid = event.get("session_id")
        active = self.active.get(sid) if event.get("type") == "tool_output" and isinstance(sid, str) else None
        if active is not None:
            task = asyncio.ensure_future(active.channel.event(event))
            self._forwarding.add(task)
            task.add_done_callback(self._forwarding.discard)

    async def cancel(self, params: dict[str, Any]) -> dict[str, Any]:
        active = self.active.get(str(params.get("session")))
        if active is None:
            return {"cancelled": False}
        active.cancel_requested = True
        active.task.cancel()
        return {"cancelled": True}

    async def list_sessions(self, params: dict[str, Any]) -> dict[str, Any]:
        try:
            return {"sessions": self.agent.store.list_sessions()}
        except HologramError as exc:
            raise RpcError(TURN_FAILED, one_line(exc)) from None

    async def session_events(self, params: dict[str, Any]) -> dict[str, Any]:
        sid = str(params.get("session"))
        lock = self._locks.get(sid)
        try:
            if lock is None or not lock.locked():  # no turn of ours is writing it: close what a crash left open
                self.agent.store.repair(sid)
            events = self.agent.store.events(sid)
        except HologramError as exc:
            raise RpcError(TURN_FAILED, one_line(exc), {"session": sid}) from None
        return {
            "events": [
                {"seq": e.seq, "kind": e.kind, "ts": e.ts, "turn": e.turn, "call_id": e.call_id, "data": e.data}
                for e in events
            ],
            "messages": [m.to_dict() for m in messages_from_events(events)],
        }

    # -- kernel.sessions ------------------------------------------------------------------------------

    async def approve(
        self, caller: str, session_id: str, tool: str, arguments: Any = None, summary: str = ""
    ) -> dict[str, Any]:
        active = self.active.get(str(session_id))
        if active is None:
            return {"approved": False, "reason": f"session {session_id} has no turn running, so nobody can approve"}
        request = {"session": session_id, "plugin": caller, "tool": tool, "arguments": arguments, "summary": summary}
        return await active.channel.approve(request)

    async def aclose(self) -> None:
        if self.agent.memory is not None:
            await self.agent.memory.aclose()
        llm = self.agent.llm
        if isinstance(llm, ProviderChain):
            await llm.aclose()
        self.agent.store.close()


class StageOrderSync:
    """Keeps the dispatcher's hooks and order equal to the kernel's lock: installed once at attach, and again
    from every lock the kernel adopts — it is a lock-changed listener (`Kernel.on_lock_changed`), called by
    `Kernel.replace_lock` when `hologram up --watch` rebuilt the lock. The hooks are shared by all sessions,
    so turns already running see the new order from their next stage on (a stage in progress finishes with
    the hooks it started with). Nothing runs per turn.

    Mutation check (done): making ``__call__`` return without re-installing turns
    tests/agent/test_stage_order_sync.py and tests/e2e/test_agent_watch.py red (the hooks keep the old
    order; a new plugin's hook is missing)."""

    def __init__(self, supervisor: Supervisor, stages: StageDispatcher) -> None:
        self.supervisor = supervisor
        self.stages = stages
        self.installs = 0

    def __call__(self, lock: Lock) -> None:
        install_from_lock(self.stages, lock, self.supervisor)
        self.installs += 1
        if self.installs > 1:
            log.info("stage order re-installed from the rebuilt lock (%s)", lock.content_hash[:12])


def one_line(exc: HologramError) -> str:
    """A `HologramError` as the message of an RPC error: each problem's file, message and fix on one line
    (the client prints it as its own error, so the ``error:`` prefix would come twice)."""
    parts = []
    for problem in exc.problems:
        where = f"{problem.file}: " if problem.file else ""
        parts.append(where + problem.message + (f"; {problem.hint}" if problem.hint else ""))
    return "\n".join(parts)


def build_chain(settings: Settings) -> tuple[ProviderChain | None, str]:
    """The provider chain, or None and the message telling the user what to write in settings.toml."""
    if not settings.providers:
        return None, settings.no_provider_message()
    try:
        llm = settings.llm
        chain = ProviderChain(
            settings.providers,
            cooldown_s=llm.cooldown_s,
            max_cooldown_s=llm.max_cooldown_s,
            auth_cooldown_s=llm.auth_cooldown_s,
        )
        return chain, ""
    except LLMConfigError as exc:
        return None, f"{settings.path}: {exc}"


def attach_agent(kernel: Kernel, *, settings: Settings | None = None) -> AgentService:
    """Give ``kernel`` an agent, with the settings the kernel loaded (``settings``: others, for tests)."""
    settings = settings or kernel.settings
    chain, problem = build_chain(settings)
    if chain is None:
        log.warning("%s", problem)
        kernel.notify("agent", problem, warning=True)
    supervisor = kernel.supervisor
    stages = StageDispatcher()
    sync = StageOrderSync(supervisor, stages)
    sync(kernel.lock)
    kernel.on_lock_changed(sync)
    store = SessionStore.in_data_dir(kernel.data_dir)
    memory = SessionMemory.open(kernel.data_dir, store)
    tools = ToolRegistry(supervisor.tool_catalog)
    tools.add_kernel_tool(memory.kernel_tool())
    windows = [p.context_window for p in settings.providers if p.context_window]
    agent = Agent(
        llm=chain,
        store=store,
        tools=tools,
        memory=memory,
        context_window=min(windows) if windows else DEFAULT_CONTEXT_WINDOW,
        stages=stages,
        settings=settings.agent,
        invoke_plugin=supervisor.invoke_tool,
        publish=kernel.ring.publish,
        no_llm_message=problem,
    )
    service = AgentService(agent)
    if chain is not None:
        kernel.add_status_section("providers", chain.status)
    kernel.add_status_section("memory", memory.status)
    kernel.add_event_listener(service.forward_output)
    kernel.add_control_method(protocol.ASK, service.ask)
    kernel.add_control_method(protocol.TURN_CANCEL, service.cancel)
    kernel.add_control_method(protocol.SESSIONS_LIST, service.list_sessions)
    kernel.add_control_method(protocol.SESSIONS_EVENTS, service.session_events)
    kernel.add_facility_method("kernel.sessions", "approve", service.approve)
    return service
