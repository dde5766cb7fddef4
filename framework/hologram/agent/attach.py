"""Wiring the agent into a running kernel: providers from settings, stage hooks from the lock, tools from
the supervisor, sessions in the data directory, control methods for clients, ``kernel.sessions`` for plugins.

    kernel = Kernel(lock, graph, data_dir)
    attach_agent(kernel)                  # before kernel.run()

Control methods added (JSON-RPC over the control socket; see docs/agent.md for the streaming protocol):
``ask`` {text, session?, interactive?}, ``turn/cancel`` {session}, ``sessions/list``, ``sessions/events``.
Kernel facility ``kernel.sessions``: ``approve(session_id, tool, arguments, summary)`` → {approved, reason}.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hologram.agent.channel import Channel, calling_connection
from hologram.agent.tools import ToolRegistry
from hologram.agent.turn import Agent, TurnError
from hologram.llm import LLMConfigError, ProviderChain
from hologram.rpc import RpcError
from hologram.sessions import SessionStore, messages_from_events
from hologram.settings import Settings, load_settings
from hologram.stages import StageDispatcher, install_from_lock

if TYPE_CHECKING:
    from hologram.kernel import Kernel

log = logging.getLogger("hologram.agent")
TURN_FAILED = 2  # JSON-RPC error code of a turn that could not answer (message: why)


@dataclass
class ActiveTurn:
    task: asyncio.Task[Any]
    channel: Channel
    cancel_requested: bool = False


class AgentService:
    """The agent of one kernel: turns per session (one at a time per session), their clients, approvals."""

    def __init__(self, agent: Agent, settings: Settings) -> None:
        self.agent = agent
        self.settings = settings
        self.active: dict[str, ActiveTurn] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    # -- control methods ------------------------------------------------------------------------------

    async def ask(self, params: dict[str, Any]) -> dict[str, Any]:
        text = params.get("text")
        if not isinstance(text, str) or not text.strip():
            raise RpcError(-32602, "ask needs a non-empty 'text'")
        channel = Channel(calling_connection(), interactive=bool(params.get("interactive", False)))
        store = self.agent.store
        session = params.get("session")
        sid = str(session) if session else store.create_session(channel.name)
        lock = self._locks.setdefault(sid, asyncio.Lock())
        async with lock:
            task = asyncio.ensure_future(self.agent.run_turn(text, session_id=sid, on_event=channel.event))
            active = ActiveTurn(task, channel)
            self.active[sid] = active
            await channel.send("turn/started", {"session": sid})
            try:
                result = await task
            except asyncio.CancelledError:
                if not active.cancel_requested:  # the client went away: stop the turn too
                    task.cancel()
                    with contextlib.suppress(BaseException):
                        await task
                    raise
                return {"session": sid, "cancelled": True, "output": ""}
            except TurnError as exc:
                raise RpcError(TURN_FAILED, str(exc), {"session": sid}) from None
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

    async def cancel(self, params: dict[str, Any]) -> dict[str, Any]:
        active = self.active.get(str(params.get("session")))
        if active is None:
            return {"cancelled": False}
        active.cancel_requested = True
        active.task.cancel()
        return {"cancelled": True}

    async def list_sessions(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"sessions": self.agent.store.list_sessions()}

    async def session_events(self, params: dict[str, Any]) -> dict[str, Any]:
        events = self.agent.store.events(str(params.get("session")))
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
        llm = self.agent.llm
        if isinstance(llm, ProviderChain):
            await llm.aclose()
        self.agent.store.close()


def build_chain(settings: Settings) -> tuple[ProviderChain | None, str]:
    """The provider chain, or None and the message telling the user what to write in settings.toml."""
    if not settings.providers:
        return None, settings.no_provider_message()
    try:
        return ProviderChain(settings.providers), ""
    except LLMConfigError as exc:
        return None, f"{settings.path}: {exc}"


def attach_agent(kernel: Kernel, *, settings: Settings | None = None) -> AgentService:
    """Give ``kernel`` an agent. Raises `HologramError` for an unreadable settings.toml (file, line, key)."""
    settings = settings or load_settings(kernel.data_dir)
    chain, problem = build_chain(settings)
    if chain is None:
        log.warning("%s", problem)
        print(f"hologram: {problem}", file=sys.stderr)
    supervisor = kernel.supervisor
    stages = StageDispatcher()
    install_from_lock(stages, kernel.lock, supervisor)
    agent = Agent(
        llm=chain,
        store=SessionStore.in_data_dir(kernel.data_dir),
        tools=ToolRegistry(supervisor.tool_catalog),
        stages=stages,
        settings=settings.agent,
        invoke_plugin=supervisor.invoke_tool,
        publish=kernel.ring.publish,
        no_llm_message=problem,
    )
    service = AgentService(agent, settings)
    kernel.control.methods.update(
        {
            "ask": service.ask,
            "turn/cancel": service.cancel,
            "sessions/list": service.list_sessions,
            "sessions/events": service.session_events,
        }
    )
    supervisor.kernel_methods.setdefault("kernel.sessions", {})["approve"] = service.approve
    return service
