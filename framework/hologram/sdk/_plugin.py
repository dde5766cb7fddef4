"""The plugin author's API: a `Plugin` object and its decorators.

An author writes plain (async or sync) functions and decorates them; the protocol — handshake, routing,
arenas, events — is handled by `hologram.sdk._runtime`. The same object runs out of process (`plugin.run()`
under `python -m`) or in the kernel (`run.inproc`), so moving a plugin between the two is a manifest edit.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

from hologram.base.protocol import STAGE_NAMES
from hologram.sdk._hooks import typed_hook, view_class

if TYPE_CHECKING:
    from pydantic import BaseModel

    from hologram.sdk._http import ASGIApp, Mount, Mounted
    from hologram.sdk._runtime import Runtime

F = TypeVar("F", bound=Callable[..., Any])
if TYPE_CHECKING:  # a default (PEP 696) keeps a bare `Plugin` annotation valid; typing has it from 3.13 only
    from typing_extensions import TypeVar as TypeVarWithDefault

    S = TypeVarWithDefault("S", default=Any)
    C = TypeVarWithDefault("C", default=dict[str, Any])
else:
    S = TypeVar("S")
    C = TypeVar("C")
EventHandler = Callable[[dict[str, Any]], Any]


@functools.cache
def signature_of(function: Callable[..., Any]) -> inspect.Signature:
    """A handler's signature, computed once: `inspect.signature` costs ~20 µs, and tool and method calls
    consult it on every invocation (a ``ctx``/``caller`` parameter, binding the model's arguments)."""
    return inspect.signature(function)


class ToolResult(dict[str, Any]):
    """A tool's result object, exactly as the kernel will read it: ``{"content": str, "is_error"?: bool}``.

    Made by `tool_result` and `tool_error`. The SDK sends it as it is, whatever else the tool's return value
    could be mistaken for; it is a dict, so ``result["content"]`` and comparisons with plain dicts work."""


def tool_result(content: str, *, is_error: bool = False) -> ToolResult:
    """The result the model reads: ``content`` as the text, flagged an error when ``is_error``.

    What a tool returns otherwise is turned into text by the SDK: a ``str`` as it is; ``bytes`` through shared
    memory (the model reads ``<N bytes>``); a dict with a string ``content`` and no keys but ``content``,
    ``is_error``, ``blob`` and ``mime`` as the result object it looks like (the protocol's shape: a ``blob`` of
    ``plugin.blob(png)`` with ``mime`` ``"image/png"`` is an image the clients show); anything else — a
    number, a list, ``None``, any other dict (one that has a ``content`` among other keys too) — as compact
    JSON text (``5`` → ``"5"``, ``{"a": 1}`` → ``'{"a":1}'``, non-ASCII kept, what JSON cannot hold as its
    ``str()``). Return ``tool_result(text)`` to say plainly that ``text`` is the answer, e.g. data that has a
    ``content`` field of its own: ``tool_result(json.dumps(row))``."""
    result = ToolResult(content=str(content))
    if is_error:
        result["is_error"] = True
    return result


def tool_error(message: str) -> ToolResult:
    """A tool result the model sees as an error (``is_error``), its text prefixed ``error:``. Return it
    for a failure the model should read and act on (a missing file, a bad path); an exception the tool
    raises becomes one too, with the exception's type in the text."""
    return tool_result(f"error: {message}", is_error=True)


class StartRefused(Exception):
    """Raise it from ``state=`` or ``on_start`` when the plugin cannot start as things are and starting again
    would fail the same way until a person acts — its port is taken, a file it needs is missing. The kernel
    shows the message as the plugin's one line (so say what is wrong and the fix), without a traceback, and
    does not restart the plugin: ``hologram plugin restart NAME`` once it is fixed. Any other exception is a
    crash, restarted by the crash policy."""


@dataclass
class ToolSpec:
    name: str
    handler: Callable[..., Any]
    description: str | None = None
    parameters: dict[str, Any] | None = None
    parallel_safe: bool | None = None
    runtime: bool = False  # registered while running (`Plugin.register_tools`): called as handler(arguments, ctx)

    def wants_context(self) -> bool:
        return self.runtime or "ctx" in signature_of(self.handler).parameters


def session_key(name: str, session: str | None) -> str:
    """Where a run-time tool is kept in `Plugin.tools`: its name, or ``SESSION/NAME`` for one session's (no tool
    name has a ``/``, so the two never meet; the kernel keeps them alike)."""
    return name if session is None else f"{session}/{name}"


@dataclass
class RuntimeTool:
    """A tool a plugin adds while it runs (`Plugin.register_tools`), with the schema it learnt then.

    ``handler(arguments, ctx)`` gets the model's arguments as one dict (they were checked against
    ``parameters`` by the kernel; a name like ``ctx`` cannot collide with a keyword) and the `ToolContext`;
    it returns what a ``@plugin.tool`` function returns. Whether a call needs approval is not the plugin's
    to say: the kernel asks the user's policy for every such tool (docs/protocol.md, ``kernel.tools``)."""

    name: str
    description: str
    parameters: dict[str, Any]
    handler: Callable[[dict[str, Any], ToolContext], Any]
    parallel_safe: bool = False

    def wire(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "parameters": self.parameters,
            "parallel_safe": self.parallel_safe,
        }


@dataclass
class ToolContext:
    """What a tool handler may ask for by declaring a `ctx` parameter."""

    call_id: str
    session_id: str | None
    plugin: Plugin[Any]
    arguments: dict[str, Any] = field(default_factory=dict)
    """The arguments exactly as the kernel sent them (explicit nulls included), e.g. to check them against
    what a before_toolcall hook approved."""
    parent: str | None = None
    """The session whose running turn the call's turn works for — the call comes from a sub-agent (a turn started
    with ``kernel.turns`` ``start`` ``parent``) — or None. The kernel sends it with the call (``tool/invoke``
    ``parent``), so it is known when the call arrives: the agents plugin refuses a sub-agent's delegation on it."""


@dataclass
class Subscription:
    types: frozenset[str] | None
    handler: EventHandler


@dataclass
class StartContext(Generic[C]):
    """Handed to `@plugin.on_start` functions and ``state=``: configuration and where to keep data.

    ``config`` is the plugin's effective configuration (the manifest's ``[config]`` defaults, settings.toml's
    ``[plugins.NAME]`` over them): an instance of the model of ``Plugin(config=Model)``, validated before any
    start code runs — annotate the parameter ``ctx: StartContext[Model]`` and ``ctx.config.key`` is typed — or,
    for a plugin without a model, the plain dict (``StartContext`` alone means ``StartContext[dict[str, Any]]``)."""

    config: C
    data_dir: str
    plugin: Plugin[Any]
    requires: dict[str, str] = field(default_factory=dict)


async def call_maybe_async(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Await coroutine functions; run plain functions in a thread so they cannot stall the event loop."""
    if inspect.iscoroutinefunction(function):
        return await function(*args, **kwargs)
    return await asyncio.to_thread(function, *args, **kwargs)


class FacilityClient:
    """Calls methods of a facility some other plugin (or the kernel) provides; the kernel routes them."""

    def __init__(self, plugin: Plugin[Any], facility: str, timeout: float | None = 60.0) -> None:
        self._plugin = plugin
        self.facility = facility
        self.timeout = timeout

    async def call(self, method: str, /, **params: Any) -> Any:
        """Call `method` with keyword parameters (any names, `method` and `timeout` included)."""
        return await self._plugin.runtime.call_facility(self.facility, method, params, self.timeout)


class Plugin(Generic[S]):
    """Declare a plugin's tools, stage hooks, facility methods and start-up code.

    ``state``: a function of the `StartContext` that builds the plugin's state (a store, a client, its
    configuration) when the plugin starts, before the ``on_start`` hooks; tools, hooks and methods reach it
    as `plugin.state`. It keeps state off module globals, so each start gets a fresh one built from that
    start's config and data dir.

    ``config``: a pydantic model of the plugin's configuration. The SDK validates the effective configuration
    against it when the kernel starts the plugin, before ``state=`` and the ``on_start`` hooks, and hands them
    the instance as ``ctx.config``; a value that does not fit fails the start with the file, line and key
    (the kernel does not retry it). `hologram check --write` publishes the model's JSON Schema for the
    manifest (docs/authoring.md, "Configuration"). Without it ``ctx.config`` is the plain dict, unchecked."""

    def __init__(
        self,
        name: str,
        *,
        state: Callable[[StartContext[Any]], S] | None = None,
        config: type[BaseModel] | None = None,
    ) -> None:
        self.name = name
        self.state_factory = state
        self.config_model = config
        self.tools: dict[str, ToolSpec] = {}
        self.stages: dict[str, Callable[..., Any]] = {}
        self.blocking_stages: set[str] = set()  # sync stage hooks that run in a thread (``blocking=True``)
        self.methods: dict[str, dict[str, Callable[..., Any]]] = {}
        self.start_hooks: list[Callable[[StartContext[Any]], Awaitable[None] | None]] = []
        self.stop_hooks: list[Callable[[], Awaitable[None] | None]] = []
        self.subscriptions: list[Subscription] = []
        self.facility_hooks: list[Callable[[str, bool], Awaitable[None] | None]] = []
        self.turn_event_hooks: list[Callable[[dict[str, Any]], Awaitable[None] | None]] = []
        self.auto_ready = True
        self.http_mount: Mount | None = None
        self._runtime: Runtime | None = None

    # -- declarations ---------------------------------------------------------------------------------

    def tool(
        self,
        name: str | None = None,
        *,
        description: str | None = None,
        parameters: dict[str, Any] | None = None,
        parallel_safe: bool | None = None,
    ) -> Callable[[F], F]:
        """A model-callable tool. Its schema comes from the manifest, or from here for runtime tools."""

        def register(function: F) -> F:
            tool_name = name or function.__name__
            self.tools[tool_name] = ToolSpec(tool_name, function, description, parameters, parallel_safe)
            return function

        return register

    def stage(self, stage: str, *, blocking: bool = False) -> Callable[[F], F]:
        """A hook for one of the seven stages; it receives the stage's view and may return changes.

        Annotate the hook's parameter with the stage's view class (``def sign(view: BeforeOutputView)``) to
        receive a typed view whose methods build the answer; a hook without that annotation receives the
        view as the JSON dict of the protocol and returns a dict, as before typed views existed.

        A plain (sync) hook runs on the plugin's event loop, not in a thread like tools: hooks sit on the
        turn's path, once per tool call for the tool stages, and a thread hop cost ~150 µs of a ~250 µs
        remote hook call (tools/bench/turn.py). Keep it quick; a hook that blocks (disk, network, a model)
        says ``blocking=True`` to run in a thread, or is an ``async def``."""
        if stage not in STAGE_NAMES:
            raise ValueError(f"unknown stage {stage!r}; stages are: {', '.join(STAGE_NAMES)}")

        def register(function: F) -> F:
            view = view_class(function, stage)
            self.stages[stage] = function if view is None else typed_hook(function, view)
            if blocking:
                self.blocking_stages.add(stage)
            else:
                self.blocking_stages.discard(stage)
            return function

        return register

    def method(self, facility: str, name: str | None = None) -> Callable[[F], F]:
        """A method of a facility this plugin provides, callable by consumers through the kernel."""

        def register(function: F) -> F:
            self.methods.setdefault(facility, {})[name or function.__name__] = function
            return function

        return register

    def on_start(self, function: F) -> F:
        """Runs after the handshake; the place to open files and connections, then `await ready(...)`."""
        self.start_hooks.append(function)
        return function

    def on_stop(self, function: F) -> F:
        """Runs when the kernel asks the plugin to shut down."""
        self.stop_hooks.append(function)
        return function

    def on_facility_status(self, function: F) -> F:
        """Told `(facility, ready)` when a facility this plugin requires goes away or comes back."""
        self.facility_hooks.append(function)
        return function

    def on_turn_event(self, function: F) -> F:
        """Receives each turn event (a dict, as docs/protocol.md section 9 lists them) of the sessions this plugin
        watches through ``kernel.turns`` — and of every session if it requires ``kernel.observe`` and called its
        ``subscribe`` — over the plugin's own connection, in order, none dropped. A channel plugin relays them;
        ``hologram.api.turn.parse_event`` turns one into its dataclass. The hooks run one event at a time,
        in order, on the plugin's loop: a plain function must be quick, one that blocks should be ``async``
        and hand its work to a thread (``asyncio.to_thread``) itself."""
        self.turn_event_hooks.append(function)
        return function

    def mount(
        self, prefix: str | None, app: ASGIApp, *, well_known: Collection[str] = (), optional: bool = False
    ) -> None:
        """Serve the ASGI 3 application ``app`` on the web port under ``prefix`` (``"/acme"``: ``/acme`` and
        every path below it) and at the exact ``well_known`` paths (``/.well-known/acme.json``), behind the web
        port's token, Host and Origin checks and its body limit. The manifest requires ``http.routes`` (the http
        plugin provides it); the SDK mounts the app when the plugin starts, after its ``on_start`` hooks, and
        ``plugin.mounted`` then says where. The app sees the full path (``/acme/x``), never the access token
        (``authorization`` and ``cookie`` are not forwarded), and cannot set cookies. One mount per plugin.
        ``optional``: the manifest has ``http.routes`` in ``after_if_present`` instead, and a graph without the
        http plugin starts this one without its routes (said in its log)."""
        from hologram.sdk._http import Mount, check_mount

        if self.http_mount is not None:
            raise ValueError(f"plugin {self.name!r} already mounts {self.http_mount.prefix!r}: one mount per plugin")
        check_mount(prefix, list(well_known))
        self.http_mount = Mount(prefix, app, tuple(well_known), optional)

    @property
    def mounted(self) -> Mounted | None:
        """Where ``mount``'s app is served (None before the plugin started, or without a mount)."""
        server = self.runtime.routes
        return server.mounted if server is not None else None

    def subscribe(self, types: Collection[str] | None = None) -> Callable[[F], F]:
        """Receive kernel broadcast events (content_delta, tool_call, …) of these types (None: all)."""

        def register(function: F) -> F:
            self.subscriptions.append(Subscription(None if types is None else frozenset(types), function))
            return function

        return register

    # -- at run time ----------------------------------------------------------------------------------

    @property
    def runtime(self) -> Runtime:
        if self._runtime is None:
            raise RuntimeError(f"plugin {self.name!r} is not running; start it with plugin.run()")
        return self._runtime

    @property
    def config(self) -> Any:
        """This start's configuration: the ``config=`` model's instance, or the plain dict without one."""
        return self.runtime.config

    @property
    def state(self) -> S:
        """The state ``state=`` built at this start; an error before the plugin has started."""
        if self.state_factory is None:
            raise RuntimeError(f"plugin {self.name!r} has no state: declare it with Plugin({self.name!r}, state=...)")
        runtime = self.runtime
        if not runtime.has_state:
            raise RuntimeError(f"plugin {self.name!r} is starting: its state is built before the on_start hooks run")
        return cast(S, runtime.state)

    async def ready(self, *facilities: str) -> None:
        """Announce that these provided facilities can be used now; dependents start at this moment."""
        for facility in facilities:
            await self.runtime.announce_ready(facility)

    def facility(self, name: str, *, timeout: float | None = 60.0) -> FacilityClient:
        """A client for a facility this plugin requires; calls wait at most `timeout` seconds."""
        return FacilityClient(self, name, timeout)

    async def publish(self, event: dict[str, Any]) -> None:
        """Broadcast an event through the kernel's event ring."""
        await self.runtime.publish(event)

    async def register_tools(self, tools: Collection[RuntimeTool], *, session: str | None = None) -> list[str]:
        """Add tools now (``kernel.tools.register``; the manifest must require ``kernel.tools``), or replace
        ones of the same names: from the next LLM step of any turn they are offered — deferred, named in
        ``tools_load`` — and every call is put to the user's approval policy. All or none: a bad name or
        schema, or a name another plugin holds, raises `RpcError` (``INVALID_PARAMS``) naming it. A restart
        of the plugin forgets them; register them again from ``on_start``.

        With ``session``, they are that session's alone: offered and callable only in its turns, and other
        sessions may have tools of the same names (docs/protocol.md, ``kernel.tools``)."""
        added = {
            session_key(t.name, session): ToolSpec(
                t.name, t.handler, t.description, t.parameters, t.parallel_safe, True
            )
            for t in tools
        }
        previous = {key: self.tools[key] for key in added if key in self.tools}
        self.tools.update(added)  # before the kernel knows them: a call may come at once
        scope = {"session": session} if session is not None else {}
        try:
            answer = await self.facility("kernel.tools").call("register", tools=[t.wire() for t in tools], **scope)
        except BaseException:
            for key in added:
                self.tools.pop(key, None)
            self.tools.update(previous)
            raise
        return [str(n) for n in answer.get("tools", [])]

    async def unregister_tools(self, names: Collection[str], *, session: str | None = None) -> list[str]:
        """Remove tools added with `register_tools` (``kernel.tools.unregister``; ``session``'s when given);
        returns the names removed."""
        scope = {"session": session} if session is not None else {}
        answer = await self.facility("kernel.tools").call("unregister", names=list(names), **scope)
        removed = [str(n) for n in answer.get("tools", [])]
        for name in removed:
            spec = self.tools.get(session_key(name, session))
            if spec is not None and spec.runtime:
                del self.tools[session_key(name, session)]
        return removed

    async def set_status(self, text: str) -> None:
        """Say in one line how the plugin fares (``plugin/status``): `hologram status` shows it beside the
        plugin, ``kernel.plugins.list`` as ``status``; "" clears it. Kept until the next call or restart."""
        await self.runtime.set_status(text)

    def blob(self, data: bytes) -> dict[str, Any]:
        """Wrap bytes for a result or call: an arena reference when it fits, inline base64 otherwise."""
        return self.runtime.blob(data)

    def read_blob(self, blob: Any) -> bytes:
        return self.runtime.read_blob(blob)

    def run(self) -> None:
        """Entry point of an out-of-process plugin: speak the protocol on stdin/stdout until shutdown."""
        from hologram.sdk._runtime import run_stdio

        run_stdio(self)
