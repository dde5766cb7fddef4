"""Wiring the agent into a running kernel: providers from settings, stage hooks from the lock, tools from
the supervisor, sessions in the data directory, control methods for clients, ``kernel.sessions`` for plugins.

    kernel = Kernel(lock, data_dir)
    attach_agent(kernel)                  # before kernel.run()

Control methods added (JSON-RPC over the control socket; see docs/agent.md for the streaming protocol):
``ask`` {text, session?, interactive?}, ``turn/cancel`` {session}, ``sessions/list``, ``sessions/events``.
Kernel facility ``kernel.sessions``: ``approve(session_id, tool, arguments, summary)`` → {approved, reason}.
Administration (docs/protocol.md, "Kernel administration facilities"), each also ``admin/<method>`` on the
control socket: ``kernel.llm`` providers_list/save/test (admin_providers.py), ``kernel.memory``
stats/search/graph/distill/scenes (memory/inspection.py); the kernel itself serves ``kernel.plugins``
(kernel/admin_plugins.py).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from hologram.agent.admin_providers import FACILITY as LLM_FACILITY
from hologram.agent.admin_providers import ProviderAdmin
from hologram.agent.approvals import ApprovalRequest, Approver, Remember, Requirement, summarise
from hologram.agent.hub import TurnHub
from hologram.agent.sequence import FILE_NAME as SEQ_FILE
from hologram.agent.service import TurnService
from hologram.agent.session_mcp import SessionMcp
from hologram.agent.tool_policy import ChannelPolicies
from hologram.agent.tools import ToolRegistry
from hologram.agent.turn import DEFAULT_CONTEXT_WINDOW, Agent
from hologram.api import turn as api
from hologram.base.protocol import TURN_EVENT
from hologram.config.settings import ApprovalSettings, Settings
from hologram.kernel import preload as _preload
from hologram.kernel.admin import serve_admin
from hologram.kernel.control import current_connection
from hologram.llm import LLMConfigError, ProviderChain
from hologram.memory.graph.service import GraphMemory
from hologram.memory.inspection import FACILITY as MEMORY_FACILITY
from hologram.memory.inspection import MemoryInspector
from hologram.memory.scenes.store import SCENES_DB, SceneStore
from hologram.memory.session_memory import SessionMemory
from hologram.memory.text.tokenizer import hold_warm_up
from hologram.sessions import SessionStore
from hologram.sessions.media import MediaStore
from hologram.stages import StageDispatcher, install_from_lock
from hologram.supervisor import State

if TYPE_CHECKING:
    from hologram.kernel import Kernel
    from hologram.plan.lock import Lock
    from hologram.supervisor import Supervisor

log = logging.getLogger("hologram.agent")
calling_connection = current_connection.get  # the control connection of the request being handled


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


def attach_agent(kernel: Kernel, *, settings: Settings | None = None) -> TurnService:
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
    # `hologram up` began the segmenter's and the model's loads before the kernel (hologram/kernel/preload.py), held
    # until its first answer: memory's own warm-up waits for the same release (Han text loads it on demand)
    if _preload.started() and not _preload.released():
        hold_warm_up()
    _preload.prefer(settings.memory.embedder)  # before the held loads run ([memory] embedder)
    _preload.transport(tls=any(p.base_url.startswith("https://") for p in settings.providers))
    memory = SessionMemory.open(
        kernel.data_dir,
        store,
        embedder_loader=_preload.loaded_embedder if _preload.started() else None,
        embedder=settings.memory.embedder,
        release_idle_s=settings.memory.release_idle_s if settings.memory.release_idle_s >= 0 else None,
        log_cache_bytes=settings.memory.log_cache_bytes,
        window_bytes=settings.memory.index_window_bytes,
    )
    tools = ToolRegistry(supervisor.tool_catalog, defer=settings.agent.defer_tools)
    tools.add_kernel_tool(memory.kernel_tool())
    tools.add_kernel_tool(memory.recall_tool())
    windows = [p.context_window for p in settings.providers if p.context_window]
    if not settings.memory.across.recall:  # across.db: memory across sessions (docs/memory.md)
        across, memory.across = memory.across, None
        if across is not None:
            across.close()
    if settings.memory.scenes.enabled:  # scenes.db: which scene a turn is in (docs/scenes.md)
        memory.scenes = SceneStore.open(kernel.data_dir / SCENES_DB, settings.memory.scenes)
    agent = Agent(
        llm=chain,
        store=store,
        tools=tools,
        memory=memory,
        context_window=min(windows) if windows else DEFAULT_CONTEXT_WINDOW,
        stages=stages,
        settings=settings.agent,
        invoke_plugin=supervisor.invoke_tool,
        no_llm_message=problem,
    )
    agent.media = MediaStore.in_data_dir(  # images of tool results (a screenshot), by content hash
        kernel.data_dir, max_bytes=settings.media.max_bytes, max_image_bytes=settings.media.max_image_bytes
    )
    agent.policies = ChannelPolicies(settings.channels, lambda: kernel.lock)  # which tools a channel's turns get
    service = TurnService(
        agent, seq_file=kernel.data_dir / SEQ_FILE, deliver=deliver_to_plugins(kernel), delivery=settings.delivery
    )
    service.session_mcp = SessionMcp(supervisor)  # sessions/mcp: a session's MCP servers, through the mcp plugin
    attach_graph(kernel, memory, settings, lambda: agent.llm, service)
    agent.executor.approver = Approver(
        settings.approvals,
        declared=DeclaredApprovals(kernel),
        ask=service.hub.ask,
        legacy=settings.plugins,
        remember=always_writer(settings),
    )
    approver = agent.executor.approver
    kernel.add_facility_method(api.FACILITY, "approvals_list", lambda caller: approvals_list(approver))
    providers = ProviderAdmin(kernel, agent, build_chain)
    kernel.add_status_section("providers", providers.status)  # the live chain's, after a providers_save too
    kernel.add_status_section("delivery", service.hub.stats)  # what is kept and queued for clients, in bytes
    for admin in (providers.providers_list, providers.providers_save, providers.providers_test):
        serve_admin(kernel, LLM_FACILITY, admin.__name__, admin)
    service.closers.append(providers.aclose)
    service.closers.append(close_scenes(memory))
    inspector = MemoryInspector(memory)
    for inspect in (inspector.stats, inspector.search, inspector.graph, inspector.distill, inspector.scenes):
        serve_admin(kernel, MEMORY_FACILITY, inspect.__name__, inspect)
    kernel.add_status_section("memory", memory.status)
    kernel.add_status_section("media", agent.media.status)
    kernel.add_event_listener(forward_output(service.hub))
    # a plugin whose process is gone watches nothing any more (one that is starting may already watch: a channel
    # that starts a turn from its on_start)
    gone = (State.CRASHED, State.STOPPED, State.FAILED)
    kernel.add_listener(lambda plugin: service.plugin_gone(plugin.name) if plugin.state in gone else None)
    for name, method in service.control_methods(calling_connection).items():
        kernel.add_control_method(name, method)
    kernel.on_client_disconnect(service.connection_gone)
    kernel.on_stopping(service.hub.drain)  # the turns end while their plugins and clients are still there
    for name, method in service.facility_methods().items():
        kernel.add_facility_method(api.FACILITY, name, method)
    for name, method in service.observe_methods().items():
        kernel.add_facility_method(api.OBSERVE_FACILITY, name, method)
    kernel.add_facility_method("kernel.sessions", "approve", plugin_asks(service.hub, settings.approvals.timeout_s))
    return service


def always_writer(settings: Settings) -> Remember | None:
    """How an "always" answer reaches the policy: written to the settings file the kernel loaded, and read back
    (`hologram.config.approvals_write`); None when the settings came from no file (tests)."""
    path = settings.path
    if path is None:
        return None

    def remember(tool: str, subject: str | None) -> ApprovalSettings:
        from hologram.config.approvals_write import remember_always  # tomlkit: only when a person says always

        policy = remember_always(path, tool, subject)
        log.info("approvals: %s %s is approved always (written to %s)", tool, repr(subject) if subject else "", path)
        return policy

    return remember


async def approvals_list(approver: Approver | None) -> dict[str, Any]:
    """``kernel.turns.approvals_list``: the policy the kernel applies now (the web settings page lists it)."""
    from hologram.config.approvals_write import rules

    if approver is None:
        return {"default": "ask", "rules": []}
    return {"default": approver.settings.default, "rules": rules(approver.settings)}


def deliver_to_plugins(kernel: Kernel) -> Callable[[str, bytes], Awaitable[None]]:
    """How a plugin that watches gets its turn events: a ``turn/event`` notification on its own connection
    (awaiting the write, so a plugin that stops reading backs up its own queue in the hub, nobody else's)."""

    async def deliver(plugin: str, event: bytes) -> None:
        managed = kernel.supervisor.plugins.get(plugin)
        runtime = managed.runtime if managed is not None else None
        if runtime is None:
            raise ConnectionError(f"{plugin} is not running")
        await runtime.connection.notify_encoded(TURN_EVENT, event)

    return deliver


def close_scenes(memory: SessionMemory) -> Callable[[], Awaitable[None]]:
    """A closer for the scene store (after the turns stopped: none observes any more)."""

    async def close() -> None:
        scenes, memory.scenes = memory.scenes, None
        if scenes is not None:
            scenes.close()

    return close


def attach_graph(
    kernel: Kernel, memory: SessionMemory, settings: Settings, chain: Callable[[], Any], service: TurnService
) -> GraphMemory:
    """L3 for the kernel's data directory (memory/graph/service.py): opened lazily (nothing is imported until
    something cools or L3 holds anything), its cooling job started (the first run reconciles), closed after the
    turns stop. A graph another process holds is a warning, and memory works on without L3 recall."""
    graph = GraphMemory.open(kernel.data_dir, settings.memory, memory.cold, chain=chain)
    graph.notify = lambda text: kernel.notify("memory", text, warning=True)
    memory.graph = graph
    graph.start()
    service.closers.append(graph.aclose)
    return graph


class DeclaredApprovals:
    """The tools whose manifest says they need approval, from the kernel's current lock (cached per lock)."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self._lock: Lock | None = None
        self._declared: dict[tuple[str, str], Requirement] = {}

    def __call__(self) -> dict[tuple[str, str], Requirement]:
        lock = self.kernel.lock
        if lock is not self._lock:
            self._declared = {
                (plugin.name, tool.name): Requirement(tool.approval_subject)
                for plugin in lock.plugins
                for tool in plugin.tools
                if tool.needs_approval
            }
            self._lock = lock
        return self._declared


def forward_output(hub: TurnHub) -> Callable[[dict[str, Any]], None]:
    """A supervisor event listener: live output of a running tool (shell, code) goes to the watchers of the
    turn that called it, as it comes."""

    def listener(event: dict[str, Any]) -> None:
        sid, turn = event.get("session_id"), event.get("turn_id")
        if event.get("type") != "tool_output" or not isinstance(sid, str):
            return
        state = hub.sessions.get(sid)
        hub.emit(
            api.ToolOutput(
                session=sid,
                turn=str(turn or (state.turn if state is not None else "") or ""),
                call_id=str(event.get("call_id") or ""),
                text=str(event.get("text", "")),
                stream=str(event.get("stream") or "stdout"),
            )
        )

    return listener


def plugin_asks(hub: TurnHub, timeout_s: float) -> Callable[..., Any]:
    """``kernel.sessions.approve``: a plugin asks the clients of a session itself, mid-call (the kernel's own
    step has already run for tools that declare ``needs_approval``)."""

    async def approve(
        caller: str, session_id: str, tool: str, arguments: Any = None, summary: str = ""
    ) -> dict[str, Any]:
        state = hub.sessions.get(str(session_id))
        args = arguments if isinstance(arguments, dict) else {}
        turn = (state.turn if state is not None else None) or ""
        summary = summary or summarise(str(tool), None, args)
        request = ApprovalRequest(str(session_id), turn, "", str(tool), caller, args, summary, timeout_s)
        answer = await hub.ask(request)
        return {"approved": answer.approved, "reason": answer.reason}

    return approve
