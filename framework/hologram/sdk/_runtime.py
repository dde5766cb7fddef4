"""The plugin side of the protocol: handshake, request routing, arenas and event subscriptions.

Private (pluggy's style: the public API is re-exported by `hologram.sdk`); authors never touch this module;
`Plugin.run()` and the kernel's in-process loader use it. Every handler
turns an author's exception into a protocol-level error result, so a buggy tool costs one failed call, not
the plugin process.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import functools
import inspect
import logging
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from hologram._version import __version__
from hologram.base import _fastjson as _json
from hologram.base import _loop, protocol
from hologram.base._heap import idle_trim
from hologram.rpc import (
    APPLICATION_ERROR,
    CONFIG_INVALID,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    NOT_READY,
    START_REFUSED,
    VERSION_MISMATCH,
    Arena,
    ArenaFull,
    AsyncRingReader,
    ByteReader,
    ByteWriter,
    Connection,
    RingReader,
    RpcError,
    from_blob,
    open_stdio,
    parse_ref,
    to_blob,
)
from hologram.sdk._jsontypes import argument_problem
from hologram.sdk._plugin import (
    Plugin,
    StartContext,
    StartRefused,
    ToolContext,
    ToolResult,
    call_maybe_async,
    signature_of,
    tool_error,
)
from hologram.zygote.child import ENV_KERNEL_PID, die_with_parent

log = logging.getLogger("hologram.sdk")
SDK_NAME = f"hologram-sdk/{__version__}"


RESULT_KEYS = frozenset({"content", "is_error", "blob", "mime"})  # the protocol's result object (docs/protocol.md)


def wire_result(value: Any, runtime: Runtime) -> dict[str, Any]:
    """What a tool returned as the protocol's result object (the rules: `hologram.sdk.tool_result`).

    A dict is taken as a result object only when it is one (a `ToolResult`, or a string ``content`` and no keys
    but the protocol's): a tool returning data that happens to have a ``content`` field used to lose every
    other field of it (issue 36's reader); such data is now sent as its JSON text, like any other dict."""
    if isinstance(value, ToolResult):
        return dict(value)
    if isinstance(value, dict) and isinstance(value.get("content"), str) and value.keys() <= RESULT_KEYS:
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"content": f"<{len(value)} bytes>", "blob": runtime.blob(bytes(value))}
    if isinstance(value, str):
        return {"content": value}
    return {"content": _json.dumps(value, default=str)}


class StageFunctions:
    """How ``stage/invoke`` runs a plugin's hooks: ``functions(stage)`` is the function to call with the
    context (None: no hook for it) — a plain hook itself, run inline on the loop (see `Plugin.stage`), an
    ``async def`` itself (its coroutine awaited), a ``blocking=True`` one wrapped to run in a thread. The
    same object while the hook stays the same, so a caller may keep what it built on it."""

    def __init__(self, plugin: Plugin) -> None:
        self.plugin = plugin
        self._threaded: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {}

    def __call__(self, stage: str) -> Callable[[dict[str, Any]], Any] | None:
        handler = self.plugin.stages.get(stage)
        if handler is None or stage not in self.plugin.blocking_stages:  # the common case first: one set lookup
            return handler
        if inspect.iscoroutinefunction(handler):
            return handler
        threaded = self._threaded.get(stage)
        if threaded is None or threaded[0] is not handler:
            threaded = self._threaded[stage] = (handler, functools.partial(asyncio.to_thread, handler))
        return threaded[1]


class Runtime:
    """One running instance of a plugin, bound to one connection to the kernel."""

    def __init__(self, plugin: Plugin[Any], reader: ByteReader, writer: ByteWriter) -> None:
        self.plugin = plugin
        self.state: Any = None  # what ``Plugin(state=...)`` built at this start (`Plugin.state`)
        self.has_state = False
        self.connection = Connection(reader, writer, name=f"{plugin.name}→kernel")
        self.config: Any = {}  # this start's configuration: the ``config=`` model's instance, or the dict
        self.provides: list[str] = []
        self.announced: set[str] = set()
        self.kernel_arena: Arena | None = None
        self.own_arena: Arena | None = None
        self._ring: AsyncRingReader | None = None
        self._stopping = asyncio.Event()
        self._background: set[asyncio.Task[Any]] = set()
        self._turn_events: asyncio.Queue[dict[str, Any]] | None = None  # made with the first one
        self.routes: Any = None  # the `_http.RouteServer` of ``plugin.mount``, once mounted
        self.stage_function = StageFunctions(plugin)
        # What the kernel may ask, by method: served on the connection, and to the kernel's own process
        # through `LocalEndpoint.handle` (an in-process plugin), the same handlers either way.
        self.handlers: dict[str, Callable[[Any], Awaitable[Any]]] = {
            protocol.INITIALIZE: self._initialize,
            protocol.TOOL_INVOKE: self._tool_invoke,
            protocol.STAGE_INVOKE: self._stage_invoke,
            protocol.FACILITY_CALL: self._facility_call,
            protocol.FACILITY_STATUS: self._facility_status,
            protocol.SHUTDOWN: self._shutdown,
            protocol.TURN_EVENT: self._turn_event,
            protocol.ARENA_RELEASE: self._arena_release,
        }
        for method, handler in self.handlers.items():
            self.connection.register(method, _then_idle_trim(handler))
        plugin._runtime = self

    # -- serving --------------------------------------------------------------------------------------

    async def serve(self) -> None:
        """Serve until the kernel closes the channel or asks us to shut down."""
        serving = asyncio.ensure_future(self.connection.serve())
        stopping = asyncio.ensure_future(self._stopping.wait())
        try:
            await asyncio.wait({serving, stopping}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (serving, stopping, *self._background):
                task.cancel()
            if self._ring is not None:
                self._ring.close()
            self.connection.close()

    def _spawn(self, coroutine: Any) -> None:
        task = asyncio.ensure_future(coroutine)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # -- handlers -------------------------------------------------------------------------------------

    async def _arena_release(self, params: Any) -> None:
        """The kernel is done with regions of our arena it got in an answer (a tool result's blob): free them.
        A ref that is not ours or not live is ignored — the kernel only ever returns what it was given."""
        refs = params.get("refs") if isinstance(params, dict) else None
        if self.own_arena is None or not isinstance(refs, list):
            return
        for ref in refs:
            with contextlib.suppress(Exception):
                self.own_arena.free(parse_ref(ref))

    async def _initialize(self, params: Any) -> dict[str, Any]:
        if not isinstance(params, dict):
            raise RpcError(INVALID_PARAMS, "initialize expects an object")
        version = params.get("protocol")
        if version != protocol.PROTOCOL_VERSION:
            raise RpcError(
                VERSION_MISMATCH,
                f"plugin {self.plugin.name} ({SDK_NAME}) speaks protocol {protocol.PROTOCOL_VERSION}, "
                f"the kernel offered {version!r}: install matching versions of hologram and the plugin",
            )
        # The process is up: the kernel may let the next plugin start (supervisor/gate.py); what follows —
        # on_start above all — may wait on anything, and no other plugin's start should wait with it.
        await self.connection.notify(protocol.STARTING, {})
        raw = dict(params.get("config") or {})
        self.config = raw if self.plugin.config_model is None else validated_config(self.plugin.config_model, raw)
        info = params.get("plugin") or {}
        self.provides = [protocol.facility_name(f) for f in info.get("provides", [])]
        arenas = params.get("arenas") or {}
        if "kernel" in arenas:
            self.kernel_arena = Arena.attach(arenas["kernel"])
        if "plugin" in arenas:
            self.own_arena = Arena.attach(arenas["plugin"], allocate=True)
        events = params.get("events")
        if events and self.plugin.subscriptions:
            await self._subscribe(events)
        context = StartContext(
            self.config, str(params.get("data_dir", ".")), self.plugin, dict(info.get("requires", {}))
        )
        await self._start(context)
        return {
            "protocol": protocol.PROTOCOL_VERSION,
            "sdk": SDK_NAME,
            "tools": [
                {
                    k: v
                    for k, v in (
                        ("name", t.name),
                        ("description", t.description),
                        ("parameters", t.parameters),
                        ("parallel_safe", t.parallel_safe),
                    )
                    if v is not None
                }
                for t in self.plugin.tools.values()
                if not t.runtime
            ],
            "stages": sorted(self.plugin.stages),
            "methods": {facility: sorted(methods) for facility, methods in self.plugin.methods.items()},
            # A plugin that listens for facility/status copes with a provider going away; one that does not
            # is restarted by the kernel once the provider is back.
            "facility_loss": "survive" if self.plugin.facility_hooks else "restart",
        }

    async def _start(self, context: StartContext) -> None:
        """Run the author's start code before answering `initialize`.

        So "initialize answered" means "started": a plugin that provides nothing is ready at that moment
        (protocol rule), and no tool call can reach handlers whose state `on_start` has not built yet.
        Facility calls and `ready()` work inside `on_start`: the connection serves both ways meanwhile.
        """
        step = "state="
        try:
            if self.plugin.state_factory is not None:
                self.state = await call_maybe_async(self.plugin.state_factory, context)
                self.has_state = True
            step = "on_start"
            for hook in self.plugin.start_hooks:
                await call_maybe_async(hook, context)
            if self.plugin.http_mount is not None:
                step = "mount"
                await self._mount(self.plugin.http_mount)
        except StartRefused as exc:  # the author's one line, said by the kernel: no traceback, no restart
            raise RpcError(START_REFUSED, str(exc) or f"{step} refused to start") from None
        except Exception as exc:
            log.exception("%s: %s failed", self.plugin.name, step)
            raise RpcError(APPLICATION_ERROR, f"{step} failed: {type(exc).__name__}: {exc}") from exc
        if self.plugin.auto_ready:
            for facility in self.provides:
                if facility not in self.announced:
                    await self.announce_ready(facility)

    async def _mount(self, mount: Any) -> None:
        """``plugin.mount``: the routes on the web port (`hologram.sdk._http`), served until shutdown."""
        from hologram.sdk._http import RouteServer

        server = RouteServer(self.plugin, mount)
        try:
            await server.start()
        except RpcError as exc:
            if not (mount.optional and exc.code == NOT_READY):
                raise
            log.info("%s: no web port in this graph (%s); its routes are not served", self.plugin.name, exc.message)
            return
        self.routes = server
        self._spawn(server.serve())

    async def _subscribe(self, events: dict[str, Any]) -> None:
        types: set[str] | None = set()
        for subscription in self.plugin.subscriptions:
            if subscription.types is None:
                types = None
                break
            assert types is not None
            types |= subscription.types
        reader = RingReader(events["ring"], types=types)
        self._ring = AsyncRingReader(reader, int(events["eventfd"]))
        await self.connection.request(protocol.EVENT_SUBSCRIBE, {"types": None if types is None else sorted(types)})
        self._spawn(self._pump_events())

    async def _pump_events(self) -> None:
        assert self._ring is not None
        async for batch in self._ring:
            for event in batch.events:
                data = event.data()
                if batch.missed:
                    data = {**data, "missed_before": batch.missed}
                for subscription in self.plugin.subscriptions:
                    if subscription.types is None or event.type in subscription.types:
                        try:
                            await call_maybe_async(subscription.handler, data)
                        except Exception:
                            log.exception("%s: event handler failed on %s", self.plugin.name, event.type)

    async def _tool_invoke(self, params: Any) -> dict[str, Any]:
        name = params.get("name") if isinstance(params, dict) else None
        session = params.get("session_id") if isinstance(params, dict) else None
        # a tool of the call's session first (`Plugin.register_tools(session=)`), then the plugin's own
        spec = self.plugin.tools.get(f"{session}/{name}") if isinstance(session, str) else None
        spec = spec or self.plugin.tools.get(str(name))
        if spec is None:
            raise RpcError(METHOD_NOT_FOUND, f"plugin {self.plugin.name} has no tool {name!r}")
        arguments = params.get("arguments") or {}
        if not isinstance(arguments, dict):
            raise RpcError(INVALID_PARAMS, "tool arguments must be an object")
        kwargs = dict(arguments)
        if spec.wants_context():
            parent = params.get("parent")
            kwargs["ctx"] = ToolContext(
                str(params.get("call_id", "")), session, self.plugin, dict(arguments),
                parent if isinstance(parent, str) else None,
            )  # fmt: skip
        try:
            if not spec.runtime:
                signature_of(spec.handler).bind(**kwargs)
        except TypeError as exc:
            return tool_error(f"bad arguments for {spec.name}: {exc}")
        wrong = argument_problem(spec.handler, arguments)
        if wrong is not None:
            return tool_error(f"bad arguments for {spec.name}: {wrong}")
        try:
            if spec.runtime:
                value = await call_maybe_async(spec.handler, dict(arguments), kwargs["ctx"])
            else:
                value = await call_maybe_async(spec.handler, **kwargs)
        except Exception as exc:
            log.exception("%s: tool %s failed", self.plugin.name, spec.name)
            return tool_error(f"{type(exc).__name__}: {exc}")
        return wire_result(value, self)

    async def _stage_invoke(self, params: Any) -> dict[str, Any]:
        stage = params.get("stage") if isinstance(params, dict) else None
        function = self.stage_function(str(stage))
        if function is None:
            raise RpcError(METHOD_NOT_FOUND, f"plugin {self.plugin.name} does not hook {stage!r}")
        answer = function(params.get("context") or {})
        return {"result": await answer if inspect.isawaitable(answer) else answer}

    async def _facility_call(self, params: Any) -> Any:
        if not isinstance(params, dict):
            raise RpcError(INVALID_PARAMS, "facility/call expects an object")
        facility, method = str(params.get("facility")), str(params.get("method"))
        handler = self.plugin.methods.get(facility, {}).get(method)
        if handler is None:
            raise RpcError(METHOD_NOT_FOUND, f"{self.plugin.name} serves no method {method!r} on {facility!r}")
        arguments = dict(params.get("params") or {})
        if "caller" in signature_of(handler).parameters:
            arguments["caller"] = params.get("caller")
        return await call_maybe_async(handler, **arguments)

    async def _turn_event(self, params: Any) -> None:
        """A ``turn/event`` notification, queued for the one task that runs the hooks: the connection runs
        each notification's handler as its own task, so a hook that awaits (or a plain one in a thread) would
        let the next event overtake it; a relay that sends a delta after the turn's end is a lost delta."""
        if not isinstance(params, dict) or not self.plugin.turn_event_hooks:
            return
        if self._turn_events is None:
            self._turn_events = asyncio.Queue()
            self._spawn(self._run_turn_event_hooks(self._turn_events))
        self._turn_events.put_nowait(params)

    async def _run_turn_event_hooks(self, events: asyncio.Queue[dict[str, Any]]) -> None:
        """Each event through each hook, in the order the kernel sent them. A plain hook runs on the loop
        (a relay is quick; one that blocks should be ``async`` and hand its work to a thread itself)."""
        while True:
            event = await events.get()
            for hook in self.plugin.turn_event_hooks:
                try:
                    answer = hook(event)
                    if inspect.isawaitable(answer):
                        await answer
                except Exception:
                    log.exception("%s: turn event handler failed on %s", self.plugin.name, event.get("type"))

    async def _facility_status(self, params: Any) -> None:
        for hook in self.plugin.facility_hooks:
            await call_maybe_async(hook, str(params.get("facility")), bool(params.get("ready")))

    async def _shutdown(self, params: Any) -> dict[str, Any]:
        if self.routes is not None:
            await self.routes.stop()
        for hook in self.plugin.stop_hooks:
            with contextlib.suppress(Exception):
                await call_maybe_async(hook)
        asyncio.get_running_loop().call_soon(self._stopping.set)
        return {}

    # -- calls made by the plugin ---------------------------------------------------------------------

    async def announce_ready(self, facility: str) -> None:
        name = protocol.facility_name(facility)
        self.announced.add(name)
        await self.connection.notify(protocol.FACILITY_READY, {"facility": name})

    async def call_facility(self, facility: str, method: str, params: dict[str, Any], timeout: float | None) -> Any:
        return await self.connection.request(
            protocol.FACILITY_CALL, {"facility": facility, "method": method, "params": params}, timeout=timeout
        )

    async def publish(self, event: dict[str, Any]) -> None:
        await self.connection.notify(protocol.EVENT_PUBLISH, {"event": event})

    async def set_status(self, text: str) -> None:
        await self.connection.notify(protocol.PLUGIN_STATUS, {"text": text})

    def blob(self, data: bytes) -> dict[str, Any]:
        try:
            return to_blob(data, self.own_arena)
        except ArenaFull:
            return {"base64": base64.b64encode(data).decode("ascii")}

    def read_blob(self, blob: Any) -> bytes:
        arenas = {a.id: a for a in (self.kernel_arena, self.own_arena) if a is not None}
        return from_blob(blob, arenas)


def validated_config(model: type[Any], raw: dict[str, Any]) -> Any:
    """``raw`` as an instance of the plugin's config ``model``, or the start's failure naming every bad key.

    Runs at ``initialize``, before ``state=`` and ``on_start``: start code then works with checked, typed
    values instead of failing deep inside with a ``KeyError`` or a ``TypeError``. The error carries each
    problem's key path and message but never the value — a token is configuration too; the kernel turns the
    paths into ``settings.toml:LINE: plugins.NAME.KEY: message`` (supervisor/managed.py)."""
    from pydantic import ValidationError

    fields = model.model_fields
    given = {k: v for k, v in raw.items() if k not in protocol.KERNEL_CONFIG_KEYS or k in fields}
    try:
        return model.model_validate(given)
    except ValidationError as exc:
        errors = [
            {"loc": [p for p in error["loc"] if isinstance(p, (str, int))], "msg": error["msg"], "type": error["type"]}
            for error in exc.errors(include_url=False, include_input=False, include_context=False)
        ]
        where = "; ".join(f"{'.'.join(map(str, e['loc'])) or '(config)'}: {e['msg']}" for e in errors)
        raise RpcError(CONFIG_INVALID, f"invalid configuration: {where}", {"errors": errors}) from None


def die_with_kernel() -> None:
    """Ask Linux to kill this plugin when the kernel dies, and leave if it already has.

    The kernel sets the same death signal when it spawns us; doing it here too closes the window between
    fork and that prctl, in which a kernel killed with -9 would leave us running.
    """
    kernel_pid = os.environ.get(ENV_KERNEL_PID)
    if kernel_pid and sys.platform.startswith("linux"):
        die_with_parent(int(kernel_pid))


async def serve_stdio(plugin: Plugin[Any]) -> None:
    reader, writer = await open_stdio()
    await Runtime(plugin, reader, writer).serve()


def run_stdio(plugin: Plugin[Any]) -> None:
    die_with_kernel()
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    with contextlib.suppress(KeyboardInterrupt):
        _loop.run(serve_stdio(plugin))


def _then_idle_trim(handler: Callable[[Any], Awaitable[Any]]) -> Callable[[Any], Awaitable[Any]]:
    """The handler, and after it the process's idle trim pushed back (hologram/base/_heap.py `IdleTrim`): a plugin
    hands the heap a call freed back to the OS once it has been idle a second, not while it is busy."""

    async def handle(params: Any) -> Any:
        try:
            return await handler(params)
        finally:
            idle_trim.activity()

    return handle
