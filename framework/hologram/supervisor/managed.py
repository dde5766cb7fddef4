"""One plugin under supervision: its process, its connection, its readiness, and how it stops.

The supervisor decides *when* a plugin starts and what a crash means for the graph; this class knows *how*
to start it (spawn, handshake, wait for readiness within the start timeout) and how to stop it (shutdown
request, then SIGTERM, then SIGKILL, each after a grace period).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hologram._version import __version__
from hologram.base import protocol
from hologram.plan.lock import LockedPlugin
from hologram.rpc import (
    CONFIG_INVALID,
    START_REFUSED,
    VERSION_MISMATCH,
    Arena,
    Connection,
    ConnectionClosed,
    RequestTimeout,
    RpcError,
    new_eventfd,
)
from hologram.supervisor.child import plugin_argv, plugin_env, spawn_plugin
from hologram.supervisor.config_errors import describe_config_errors
from hologram.supervisor.crash import CrashPolicy
from hologram.supervisor.environment import split_environment
from hologram.supervisor.gate import StartGate
from hologram.supervisor.inproc import InprocEndpoint, InprocLoader
from hologram.supervisor.state import State

if TYPE_CHECKING:
    from hologram.rpc import RingWriter

log = logging.getLogger("hologram.supervisor")

SHUTDOWN_GRACE_S = 3.0  # answer to `shutdown` and exit
TERM_GRACE_S = 2.0  # exit after SIGTERM
MALFORMED_LIMIT = 50  # this many malformed lines …
MALFORMED_WINDOW_S = 10.0  # … within this window restart the plugin
MALFORMED_KEPT = 20  # excerpts of malformed lines kept for diagnostics (`ManagedPlugin.malformed_seen`)
ARENA_SIZE = 32 * 1024 * 1024  # virtual: memfd pages cost memory only when written
MAX_LOG_LINE = 8192  # bytes of one stderr line written to the log; the rest is counted


class StartFailed(Exception):
    """The plugin did not get to ready; `permanent` failures are not retried (e.g. protocol mismatch)."""

    def __init__(self, message: str, *, permanent: bool = False) -> None:
        super().__init__(message)
        self.permanent = permanent


@dataclass
class PluginSpec:
    """What the supervisor knows about a plugin before starting it: its lock entry, the directory of its
    manifest (where a `command` plugin's `./relative` executable is; None if unknown), and the manifest file
    itself (named when a ``[config]`` default is what the plugin's config model refuses)."""

    plugin: LockedPlugin
    manifest_dir: Path | None = None
    manifest_path: Path | None = None

    @property
    def name(self) -> str:
        return self.plugin.name

    @property
    def provides(self) -> list[str]:
        return [protocol.facility_name(f) for f in self.plugin.provides]

    @property
    def requires(self) -> dict[str, str]:
        return {protocol.facility_name(k): v for k, v in self.plugin.requires.items()}

    @property
    def optional(self) -> dict[str, list[str]]:
        return {protocol.facility_name(k): list(v) for k, v in self.plugin.after_if_present.items()}

    @property
    def start_timeout_s(self) -> float:
        return self.plugin.start.timeout_s

    @property
    def restart(self) -> str:
        return self.plugin.start.restart

    @property
    def lazy(self) -> bool:
        return self.plugin.start.lazy


@dataclass
class Handlers:
    """Callbacks into the supervisor for what a plugin asks of the kernel."""

    facility_ready: Callable[[ManagedPlugin, str], None]
    facility_call: Callable[[ManagedPlugin, Any], Awaitable[Any]]
    event_publish: Callable[[ManagedPlugin, Any], None]
    exited: Callable[[ManagedPlugin, int | None, str], None]


@dataclass
class Runtime:
    """Everything that exists only while the plugin runs; dropped as a whole when it exits."""

    connection: Connection
    arenas: list[Arena]
    eventfd: int
    process: asyncio.subprocess.Process | None = None
    tasks: list[asyncio.Task[Any]] = field(default_factory=list)
    malformed: deque[float] = field(default_factory=deque)


class ManagedPlugin:
    def __init__(
        self,
        spec: PluginSpec,
        data_dir: Path,
        ring: RingWriter,
        handlers: Handlers,
        config_override: dict[str, Any] | None = None,
        gate: StartGate | None = None,
        inproc_loader: InprocLoader | None = None,
        settings_path: Path | None = None,
    ) -> None:
        self.spec = spec
        self.inproc_loader = inproc_loader  # how a `run.inproc` plugin is loaded (supervisor/inproc.py)
        self.settings_path = settings_path  # where config_override came from, for errors naming its lines
        self.gate = gate  # shared by the supervisor's plugins: how many may be coming up at once (gate.py)
        self._leave_gate: Callable[[], None] | None = None
        # values set for this kernel's life over settings.toml's (`hologram up --port`: the http plugin's port)
        self.pinned: dict[str, Any] = {}
        self.config_override: dict[str, Any] = {}
        self.env_override: dict[str, str] = {}
        self.configure(config_override)
        self.name = spec.name
        self.data_dir = data_dir
        self.ring = ring
        self.handlers = handlers
        self.state = State.WAITING
        self.reason = ""
        self.wanted = True  # False after `hologram plugin stop`: never started automatically
        # `[start] lazy`: left stopped at `hologram up` until the first call of one of its tools (supervisor)
        self.on_demand = False
        self.restarts = 0
        self.started_at: float | None = None
        self.ready_at: float | None = None
        self.ready_facilities: set[str] = set()
        self.crash_policy = CrashPolicy()
        self.tools: dict[str, dict[str, Any]] = {}
        self.status = ""  # the plugin's own line about how it fares (`plugin/status`); reset at each start
        self.stages: list[str] = []
        self.survives_facility_loss = False
        self.methods: dict[str, list[str]] = {}
        self.runtime: Runtime | None = None
        # An in-process plugin's local call path (its stage hooks are called through it, without the wire);
        # None for a process. Set at each start: a restart re-imports nothing but builds a new one.
        self.local: InprocEndpoint | None = None
        self.stop_requested = False
        self.exit_description = ""
        self.kill_reason = ""  # why the kernel killed it, reported instead of the bare signal
        # What this start showed of the plugin, for diagnostics (the conformance kit, hologram.testing): its
        # `initialize` answer as sent, the lines it wrote to stdout that were not protocol messages (the last
        # few, with the count of all), and how its last stop ended ("shutdown": it exited within the grace after
        # the shutdown request; "SIGTERM"/"SIGKILL": the kernel had to signal it; "in-process") and whether it
        # answered that request.
        self.handshake: dict[str, Any] | None = None
        self.malformed_seen: deque[tuple[str, str]] = deque(maxlen=MALFORMED_KEPT)
        self.malformed_total = 0
        self.stopped_by = ""
        self.shutdown_answered = False
        self._all_ready = asyncio.Event()
        self._gone = asyncio.Event()

    def configure(self, table: dict[str, Any] | None) -> None:
        """Take the user's ``[plugins.NAME]`` table of settings.toml for the next start: its configuration
        keys (over the manifest's ``[config]``, under `pinned`) and its environment keys (``env``,
        ``pass_env``). The supervisor calls it before each start with the file as it is then."""
        config, self.env_override = split_environment(table or {})
        self.config_override = {**config, **self.pinned}

    def pin(self, key: str, value: Any) -> None:
        """Set configuration ``key`` for every start of this kernel, over what settings.toml says."""
        self.pinned[key] = value
        self.config_override[key] = value

    def manifest_tools(self) -> list[dict[str, Any]]:
        """The manifest's tools as a start would list them before the plugin's own answer (`_accept_handshake`)."""
        return [tool.model_dump(mode="json") for tool in self.spec.plugin.tools]

    # -- facts ----------------------------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        if self.runtime is None:
            return None
        return self.runtime.process.pid if self.runtime.process is not None else os.getpid()

    @property
    def uptime_s(self) -> float | None:
        return None if self.started_at is None or not self.state.running else time.monotonic() - self.started_at

    # -- starting -------------------------------------------------------------------------------------

    async def start(self) -> None:
        """Spawn, handshake and wait until every provided facility is ready. Raises StartFailed."""
        self.stop_requested = False
        self.exit_description = ""
        self.handshake = None
        self.malformed_seen.clear()
        self.malformed_total = 0
        self.stopped_by = ""
        self.ready_facilities.clear()
        self._all_ready.clear()
        self._gone.clear()
        self.started_at = time.monotonic()
        self.ready_at = None
        deadline = self.started_at + self.spec.start_timeout_s
        if self.gate is None:
            answer = await self._spawn_and_initialize(deadline)
        else:
            async with self.gate.admit() as release:
                self._leave_gate = release  # on `$/starting`: its process is up (supervisor/gate.py)
                try:
                    answer = await self._spawn_and_initialize(deadline)
                finally:
                    self._leave_gate = None
        self._accept_handshake(answer)
        if not self.spec.provides:
            self._all_ready.set()
        ready = asyncio.ensure_future(self._all_ready.wait())
        gone = asyncio.ensure_future(self._gone.wait())
        try:
            await asyncio.wait(
                {ready, gone}, timeout=max(0.01, deadline - time.monotonic()), return_when="FIRST_COMPLETED"
            )
        finally:
            ready.cancel()
            gone.cancel()
        if self._gone.is_set():
            raise StartFailed(f"{self.exit_description} before it was ready (see its log)")
        if not self._all_ready.is_set():
            missing = sorted(set(self.spec.provides) - self.ready_facilities)
            raise StartFailed(
                f"not ready within {self.spec.start_timeout_s:g} s (never announced {', '.join(missing)})"
            )
        self.ready_at = time.monotonic()

    def _initialize_params(self) -> dict[str, Any]:
        assert self.runtime is not None
        kernel_arena, plugin_arena = self.runtime.arenas
        return {
            "protocol": protocol.PROTOCOL_VERSION,
            "kernel_version": __version__,
            "plugin": {
                "name": self.name,
                "version": self.spec.plugin.version,
                "provides": self.spec.provides,
                "requires": self.spec.requires,
            },
            "config": {**self.spec.plugin.config, **self.config_override},
            "data_dir": str(self.data_dir),
            "arenas": {"kernel": kernel_arena.spec(), "plugin": plugin_arena.spec()},
            "events": {"ring": self.ring.spec(), "eventfd": self.runtime.eventfd},
        }

    def _accept_handshake(self, answer: Any) -> None:
        self.handshake = answer if isinstance(answer, dict) else None
        if not isinstance(answer, dict) or answer.get("protocol") != protocol.PROTOCOL_VERSION:
            got = answer.get("protocol") if isinstance(answer, dict) else answer
            raise StartFailed(
                f"speaks protocol {got!r}, this kernel speaks {protocol.PROTOCOL_VERSION}: "
                "install matching versions of hologram and the plugin",
                permanent=True,
            )
        tools = {tool["name"]: tool for tool in self.manifest_tools()}
        for tool in answer.get("tools") or []:
            if isinstance(tool, dict) and isinstance(tool.get("name"), str):
                tools[tool["name"]] = {**tools.get(tool["name"], {}), **tool}
        # tools registered through kernel.tools during this start (its on_start) stay: they came after _spawn
        self.tools = {**tools, **{n: t for n, t in self.tools.items() if t.get("runtime") and n not in tools}}
        self.stages = [s for s in answer.get("stages") or [] if isinstance(s, str)]
        self.methods = {k: list(v) for k, v in (answer.get("methods") or {}).items() if isinstance(v, list)}
        self.survives_facility_loss = answer.get("facility_loss") == "survive"

    async def _spawn_and_initialize(self, deadline: float) -> Any:
        """The process up to its ``initialize`` answer: the part of a start that only needs CPU."""
        try:
            await self._spawn()
        except OSError as exc:
            raise StartFailed(f"cannot start: {exc.strerror or exc}") from exc
        except ImportError as exc:
            raise StartFailed(f"cannot import in-process plugin: {exc}", permanent=True) from exc
        assert self.runtime is not None
        try:
            return await self.runtime.connection.request(
                protocol.INITIALIZE, self._initialize_params(), timeout=max(0.01, deadline - time.monotonic())
            )
        except RequestTimeout:
            raise StartFailed(f"not ready within {self.spec.start_timeout_s:g} s (no answer to initialize)") from None
        except ConnectionClosed:
            await self._gone.wait()
            raise StartFailed(f"{self.exit_description} during the handshake (see its log)") from None
        except RpcError as exc:
            if exc.code == START_REFUSED:  # the plugin says a person must act first: once, no restart loop
                raise StartFailed(exc.message, permanent=True) from None
            if exc.code == CONFIG_INVALID:
                # the same values would fail again: no restart loop, the state says which key to fix
                errors = exc.data.get("errors") if isinstance(exc.data, dict) else None
                raise StartFailed(self._config_problem(errors or []) or exc.message, permanent=True) from None
            raise StartFailed(f"refused the handshake: {exc}", permanent=exc.code == VERSION_MISMATCH) from None

    def _config_problem(self, errors: list[Any]) -> str:
        return describe_config_errors(
            self.name,
            errors,
            overrides=self.config_override,
            defaults=self.spec.plugin.config,
            settings_path=self.settings_path,
            manifest_path=self.spec.manifest_path,
        )

    async def _spawn(self) -> None:
        self.tools, self.status = {}, ""  # nothing of an earlier run (tools it registered while running) stays
        kernel_arena = Arena.create(ARENA_SIZE, f"{self.name}.kernel")
        plugin_arena = Arena.create(ARENA_SIZE, f"{self.name}.plugin", allocate=False)
        eventfd = new_eventfd()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        run = self.spec.plugin.run
        if run is None:
            raise StartFailed("the lock has no `run` for it: run `hologram build`", permanent=True)
        process = None
        try:
            if run.inproc is not None:
                reader, writer, serve = self._inproc(run.inproc)
            else:
                argv = plugin_argv(run, self.spec.manifest_dir)
                cwd = self.spec.manifest_dir if run.command is not None and self.spec.manifest_dir else self.data_dir
                process, reader, writer = await spawn_plugin(
                    argv,
                    env=plugin_env(self.name, {**run.env, **self.env_override}),
                    cwd=cwd,
                    pass_fds=[kernel_arena.fd, plugin_arena.fd, eventfd, self.ring.spec()["fd"]],
                )
                serve = None
        except BaseException:
            for arena in (kernel_arena, plugin_arena):
                arena.close()
            os.close(eventfd)
            raise
        connection = Connection(reader, writer, name=f"kernel→{self.name}", on_malformed=self._on_malformed)
        self._register(connection)
        runtime = Runtime(connection, [kernel_arena, plugin_arena], eventfd, process)
        self.runtime = runtime
        runtime.tasks.append(asyncio.ensure_future(connection.serve()))
        if process is not None:
            assert process.stderr is not None
            runtime.tasks.append(asyncio.ensure_future(self._pump_stderr(process.stderr)))
            runtime.tasks.append(asyncio.ensure_future(self._watch_process(runtime, process)))
        else:
            assert serve is not None
            runtime.tasks.append(asyncio.ensure_future(self._watch_inproc(runtime, serve)))

    def _inproc(self, module_name: str) -> tuple[Any, Any, Awaitable[None]]:
        if self.inproc_loader is None:
            raise StartFailed(
                "it runs in-process (`run.inproc`), and this supervisor was made without an in-process loader "
                "(`Supervisor(inproc_loader=...)`; the kernel passes the SDK's)",
                permanent=True,
            )
        self.local = local = self.inproc_loader(module_name)
        return local.connect()

    def _register(self, connection: Connection) -> None:
        async def facility_ready(params: Any) -> None:
            facility = protocol.facility_name(str(params.get("facility", ""))) if isinstance(params, dict) else ""
            if facility not in self.spec.provides:
                log.warning("%s announced %r, which its manifest does not provide; ignored", self.name, facility)
                return
            self.ready_facilities.add(facility)
            self.handlers.facility_ready(self, facility)
            if self.ready_facilities >= set(self.spec.provides):
                self._all_ready.set()

        async def facility_call(params: Any) -> Any:
            return await self.handlers.facility_call(self, params)

        async def subscribe(params: Any) -> dict[str, Any]:
            types = params.get("types") if isinstance(params, dict) else None
            if self.runtime is not None:
                self.ring.add_waker(self.runtime.eventfd, None if types is None else [str(t) for t in types])
            return {"subscribed": types}

        async def publish(params: Any) -> None:
            self.handlers.event_publish(self, params.get("event") if isinstance(params, dict) else None)

        async def register_tools(params: Any) -> dict[str, Any]:
            for tool in params.get("tools", []) if isinstance(params, dict) else []:
                if isinstance(tool, dict) and isinstance(tool.get("name"), str):
                    self.tools[tool["name"]] = tool
            return {"tools": sorted(self.tools)}

        async def plugin_status(params: Any) -> None:
            text = params.get("text") if isinstance(params, dict) else None
            self.status = " ".join(str(text or "").split())[: protocol.STATUS_CHARS]

        async def starting(params: Any) -> None:
            if self._leave_gate is not None:
                self._leave_gate()

        async def release(params: Any) -> None:
            if self.runtime is not None and isinstance(params, dict):
                with contextlib.suppress(Exception):
                    self.runtime.arenas[0].free(params["ref"])

        for method, handler in (
            (protocol.FACILITY_READY, facility_ready),
            (protocol.FACILITY_CALL, facility_call),
            (protocol.EVENT_SUBSCRIBE, subscribe),
            (protocol.EVENT_PUBLISH, publish),
            (protocol.TOOL_REGISTER, register_tools),
            (protocol.ARENA_RELEASE, release),
            (protocol.STARTING, starting),
            (protocol.PLUGIN_STATUS, plugin_status),
        ):
            connection.register(method, handler)

    def _on_malformed(self, excerpt: str, reason: str) -> None:
        log.warning("[%s] malformed line from plugin (%s): %s", self.name, reason, excerpt)
        self.malformed_seen.append((excerpt, reason))
        self.malformed_total += 1
        runtime = self.runtime
        if runtime is None:
            return
        now = time.monotonic()
        runtime.malformed.append(now)
        while runtime.malformed and now - runtime.malformed[0] > MALFORMED_WINDOW_S:
            runtime.malformed.popleft()
        if len(runtime.malformed) >= MALFORMED_LIMIT and runtime.process is not None:
            log.error("[%s] %d malformed lines in %g s: restarting it", self.name, MALFORMED_LIMIT, MALFORMED_WINDOW_S)
            self.kill_reason = f"killed after {MALFORMED_LIMIT} malformed lines within {MALFORMED_WINDOW_S:g} s"
            runtime.malformed.clear()
            _kill_group(runtime.process, signal.SIGKILL)

    async def _pump_stderr(self, stream: asyncio.StreamReader) -> None:
        """The plugin's stderr into the log, a line each, at most `MAX_LOG_LINE` bytes of it (the rest counted).
        A line longer than the pipe reader's buffer is read on in parts, never refused: the pump must go on,
        or the plugin blocks on a full pipe at its next write."""
        plugin_log = logging.getLogger(f"hologram.plugin.{self.name}")
        head, cut = b"", 0  # the line so far, when it arrives in parts
        while True:
            try:
                part = await stream.readuntil(b"\n")
            except asyncio.LimitOverrunError as exc:  # no newline within the reader's buffer: take what it holds
                part = await stream.readexactly(exc.consumed)
                room = max(0, MAX_LOG_LINE - len(head))
                head, cut = head + part[:room], cut + max(0, len(part) - room)
                continue
            except asyncio.IncompleteReadError as exc:  # the end; a last line without a newline
                part = exc.partial
                if not part and not head:
                    return
            line = head + part
            head, cut, more = b"", 0, cut + max(0, len(line) - MAX_LOG_LINE)
            text = line[:MAX_LOG_LINE].decode("utf-8", "replace").rstrip()
            plugin_log.info("[%s] %s%s", self.name, text, f"… ({more} more bytes not logged)" if more else "")
            if not part.endswith(b"\n"):
                return

    async def _watch_process(self, runtime: Runtime, process: asyncio.subprocess.Process) -> None:
        code = await process.wait()
        await asyncio.sleep(0)  # let the stderr pump drain what the process said last
        self.exit_description = self.kill_reason or _describe_exit(code)
        self.kill_reason = ""
        self._cleanup(runtime)
        self.handlers.exited(self, code, self.exit_description)

    async def _watch_inproc(self, runtime: Runtime, serve: Awaitable[None]) -> None:
        try:
            await serve
            code, description = 0, "returned"
        except Exception as exc:
            log.exception("[%s] in-process plugin failed", self.name)
            code, description = 1, f"raised {type(exc).__name__}: {exc}"
        self.exit_description = description
        self._cleanup(runtime)
        self.handlers.exited(self, code, description)

    def _cleanup(self, runtime: Runtime) -> None:
        if self.runtime is runtime:
            self.runtime = None
        self._gone.set()
        runtime.connection.close()
        self.ring.remove_waker(runtime.eventfd)
        with contextlib.suppress(OSError):
            os.close(runtime.eventfd)
        for arena in runtime.arenas:
            arena.close()
        for task in runtime.tasks:
            if task is not asyncio.current_task():
                task.cancel()

    # -- stopping -------------------------------------------------------------------------------------

    async def stop(self) -> None:
        """Shutdown request, then SIGTERM, then SIGKILL; returns when the plugin is gone."""
        runtime = self.runtime
        if runtime is None:
            return
        self.stop_requested = True
        self.shutdown_answered = False
        with contextlib.suppress(RpcError, ConnectionClosed, RequestTimeout):
            await runtime.connection.request(protocol.SHUTDOWN, {}, timeout=SHUTDOWN_GRACE_S)
            self.shutdown_answered = True
        process = runtime.process
        if process is None:  # in-process: the runtime stops serving after answering shutdown
            runtime.connection.close()
            await asyncio.gather(*runtime.tasks, return_exceptions=True)
            self.stopped_by = "in-process"
            return
        self.stopped_by = "shutdown"
        if await _exited_within(process, SHUTDOWN_GRACE_S):
            return
        log.warning("[%s] did not exit after shutdown; sending SIGTERM", self.name)
        self.stopped_by = "SIGTERM"
        _kill_group(process, signal.SIGTERM)
        if await _exited_within(process, TERM_GRACE_S):
            return
        log.warning("[%s] did not exit after SIGTERM; sending SIGKILL", self.name)
        self.stopped_by = "SIGKILL"
        _kill_group(process, signal.SIGKILL)
        await process.wait()

    def kill(self) -> None:
        """Immediate SIGKILL (start timeouts, runaway plugins)."""
        if self.runtime is not None and self.runtime.process is not None:
            _kill_group(self.runtime.process, signal.SIGKILL)
        elif self.runtime is not None:
            self.runtime.connection.close()


async def _exited_within(process: asyncio.subprocess.Process, seconds: float) -> bool:
    try:
        await asyncio.wait_for(process.wait(), seconds)
        return True
    except asyncio.TimeoutError:
        return False


def _kill_group(process: asyncio.subprocess.Process, sig: signal.Signals) -> None:
    """Signal the plugin's whole process group (it runs in its own session), so its children go too."""
    try:
        os.killpg(process.pid, sig)
    except (ProcessLookupError, PermissionError):
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(sig)


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "exited"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with code {code}"
