"""The tool registry: what the model may call, where each tool runs, and the check of its arguments.

Tools come from two places: plugins (manifest + runtime registration, read live from the supervisor's
catalog, so a crashed plugin's tools vanish and a restarted one's come back) and the kernel itself
(`KernelTool`, e.g. the memory layer's ``coldcontext_query``: ``registry.add_kernel_tool(...)``). Kernel
tools win a name clash, then the first plugin in lock order; the loser is logged once.

Arguments are validated against the tool's JSON Schema *before* the call. A model that sends broken JSON or
the wrong shape gets an error result that says what is wrong, so it can correct itself; the turn never
raises because of what a model asked for.

**Deferred schemas.** Every request carries the schemas of the tools it offers, and with every shipped plugin
installed they are nearly all of a one-word request (docs/guards.md). A tool whose manifest says
``deferred = true`` is named, not described: the request lists such tools in the description of one small
kernel tool, ``tools_load``, and sends a tool's schema once the model loads it (from the next step of the
same turn on, and in the session's later turns). A deferred tool stays callable by name — a model that knows
it from earlier, or a script, is served: valid arguments run it, invalid ones get the usual error — and any
call loads it. What a session loaded is kept for the last ``LOADED_SESSIONS`` sessions (in memory; after a
restart the model loads again or calls by name). ``ToolRegistry(defer=False)`` (``[agent] defer_tools =
false``) sends every schema. What is sent is the wire form of a schema (`wire_schema`): the check of the
arguments uses the manifest's schema whole.

**Session tools.** A run-time tool registered for one session (``kernel.tools.register`` with ``session``: an
editor's MCP servers, hologram/supervisor/runtime_tools.py) is in that session's snapshots only; elsewhere it is
neither offered nor callable, as if it did not exist.
"""

from __future__ import annotations

import logging
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hologram.agent.fastcheck import Check, compile_check
from hologram.base import _fastjson as _json
from hologram.manifest.schema_check import schema_problem
from hologram.tools.kernel_tool import KernelHandler, KernelTool, ToolInvocation
from hologram.tools.policy import ToolPolicy

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator

log = logging.getLogger("hologram.agent")
# KernelHandler, KernelTool and ToolInvocation live in hologram.tools (memory builds kernel tools too)
__all__ = [
    "KernelHandler",
    "KernelTool",
    "Restriction",
    "Tool",
    "ToolInvocation",
    "ToolRegistry",
    "ToolSet",
    "wire_schema",
]
KERNEL = "kernel"

Catalog = Callable[[], list[dict[str, Any]]]
LOAD_TOOL = "tools_load"
LOADED_SESSIONS = 1024  # sessions whose loaded deferred tools are remembered (least recently used dropped)
LOAD_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "required": ["names"],
    "properties": {"names": {"type": "array", "items": {"type": "string"}, "minItems": 1}},
    "additionalProperties": False,
}


def wire_schema(schema: Any) -> Any:
    """A parameters schema as the model is sent it: without ``additionalProperties: false``.

    The kernel checks arguments against the whole schema before any call, so an argument the schema does not
    allow still gets an error result that names it; on the wire the keyword is ~30 bytes a tool the model
    does not need (OpenAI and DeepSeek accept schemas without it; only their ``strict`` mode requires it, and
    Hologram does not send ``strict``). Nested object schemas (``properties``, ``items``) are trimmed alike.
    """
    if not isinstance(schema, dict):
        return schema
    out = {k: v for k, v in schema.items() if not (k == "additionalProperties" and v is False)}
    if isinstance(props := out.get("properties"), dict):
        out["properties"] = {name: wire_schema(sub) for name, sub in props.items()}
    if isinstance(out.get("items"), dict):
        out["items"] = wire_schema(out["items"])
    return out


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]
    parallel_safe: bool
    plugin: str  # "kernel" for kernel tools
    kernel_handler: KernelHandler | None = None
    needs_approval: bool = False  # as the plugin registered it; the lock's word is added (agent/approvals.py)
    approval_subject: str | None = None
    deferred: bool = False  # the manifest's word: its schema is sent once loaded (module docstring)
    hidden: bool = False  # a kernel tool not offered to this session (`KernelTool.offered`): callable, not sent

    def schema(self) -> dict[str, Any]:
        """The OpenAI ``tools`` entry, as sent (`wire_schema`)."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": wire_schema(self.parameters),
            },
        }


@dataclass(frozen=True)
class Restriction:
    """A turn's tool policy (hologram/agent/tool_policy.py): the policy, the channel it is the policy of (named
    in a refusal), and where a tool's effect is read (the lock, not what the plugin registered). A turn started
    for another (agent/scope.py) adds ``only`` — the tools or plugins it was given — and its ``parent`` turn's
    restriction, which it can never exceed."""

    policy: ToolPolicy | None
    channel: str
    effect: Callable[[str, str], str | None]
    only: frozenset[str] | None = None
    parent: Restriction | None = None

    def refusal(self, tool: Tool) -> str | None:
        """Why ``tool`` is not this turn's, or None when it is."""
        only = self.only
        if only is not None and tool.name not in only and tool.plugin not in only:
            return f"{tool.name} is not among the tools this turn was given ({', '.join(sorted(only)) or 'none'})"
        if self.parent is not None:
            why = self.parent.refusal(tool)
            if why is not None:
                return f"{why} (the turn this one works for may not use it)"
        if self.policy is None or self.policy.allows(tool.name, self.effect(tool.plugin, tool.name)):
            return None
        return self.policy.refusal(tool.name, self.channel)


class ArgumentCheck:
    """The check of one tool's arguments against its (valid) schema: `fastcheck`'s predicate when the schema is
    in its subset, and `jsonschema`'s validator — built on first use, when the fast check says no or has
    nothing to say. So no turn imports `jsonschema` until a model sends arguments the fast check rejects or a
    tool's schema is outside the subset (hologram/manifest/schema_check.py: the start-up path does not import it)."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema = schema
        self.fast: Check | None = compile_check(schema)
        self._validator: Draft202012Validator | None = None

    def validator(self) -> Draft202012Validator:
        if self._validator is None:
            from jsonschema import Draft202012Validator

            self._validator = Draft202012Validator(self.schema)
        return self._validator


def _load_handler(tools: ToolSet) -> KernelHandler:
    """``tools_load``'s handler for the step's tool set `tools`, which it holds weakly. Why: a handler bound
    to the set that holds it made a reference cycle (set → tools → handler → set) for every LLM step with
    deferred tools, freed only by the cycle collector; in a long soak the sets that lived into its oldest
    generation piled up there between full collections (10 sets, 490 tools and ~1,050 schema dicts of garbage
    at turn 7,000 of ``tools/bench/soak_diag.py``). A step holds its set while its calls run."""
    ref = weakref.ref(tools)

    async def load(arguments: dict[str, Any], invocation: ToolInvocation) -> dict[str, Any]:
        held = ref()
        if held is None:  # a call outlives its step's tool set: nothing to load into
            return {"content": "error: this step's tools are gone; call tools_load again", "is_error": True}
        return held._load(arguments)

    return load


class ToolSet:
    """The tools of one LLM step (a snapshot: the catalog may change while a batch runs).

    ``loaded`` is the session's set of loaded deferred tools, shared with the registry: a load (``tools_load``
    or a call by name) during this step shows in the next step's snapshot. The schemas sent are fixed when
    the snapshot is taken.
    """

    def __init__(
        self,
        tools: dict[str, Tool],
        checkers: dict[str, ArgumentCheck | None],
        loaded: set[str] | None = None,
        excluded: dict[str, str] | None = None,
    ) -> None:
        self.tools = dict(tools)
        self.excluded = excluded or {}  # tools the turn's policy leaves out → why (a call of one is refused)
        self._checkers = checkers
        self.loaded = loaded if loaded is not None else set()
        self.waiting = [t.name for t in self.tools.values() if t.deferred and t.name not in self.loaded]
        if self.waiting and LOAD_TOOL not in self.tools:
            self.tools = {LOAD_TOOL: self._load_tool(), **self.tools}
        self._schemas = [
            t.schema() for t in self.tools.values() if not t.hidden and (not t.deferred or t.name in self.loaded)
        ]

    def get(self, name: str) -> Tool | None:
        return self.tools.get(name)

    def schemas(self) -> list[dict[str, Any]]:
        """The tools entries of the request: every tool's but the deferred ones not loaded, which are named in
        ``tools_load``'s."""
        return self._schemas

    def _load_tool(self) -> Tool:
        description = (
            f"More tools, sent once loaded: {', '.join(self.waiting)}. "
            "Load the ones you need; call them from your next step."
        )
        return Tool(LOAD_TOOL, description, LOAD_PARAMETERS, True, KERNEL, _load_handler(self))

    def _load(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """``tools_load``: names are tools, or plugins (all their deferred tools)."""
        return self.load(str(name) for name in arguments.get("names") or [])

    def load(self, names: Iterable[str]) -> dict[str, Any]:
        """Load tools by name (a plugin's name: its deferred tools); the result says what was loaded, what was
        there already and which names are unknown (with what is left to load)."""
        loaded, ready, unknown = [], [], []
        for name in names:
            tool = self.tools.get(name)
            group = [tool] if tool is not None else [t for t in self.tools.values() if t.plugin == name]
            if not group or name == LOAD_TOOL:
                unknown.append(name)
            for t in group:
                if t.deferred and t.name not in self.loaded:
                    self.loaded.add(t.name)
                    loaded.append(t.name)
                elif t.name != LOAD_TOOL:
                    ready.append(t.name)
        parts = [f"loaded {', '.join(loaded)}: call them from your next step"] if loaded else []
        if ready:
            parts.append(f"already yours: {', '.join(ready)}")
        if unknown:
            left = [n for n in self.waiting if n not in self.loaded]
            parts.append(f"no tool named {', '.join(map(repr, unknown))} (to load: {', '.join(left) or 'none'})")
        return {"content": "; ".join(parts), "is_error": not (loaded or ready)}

    def parse(self, tool: Tool, arguments: str) -> tuple[dict[str, Any] | None, str | None]:
        """(arguments, None) when valid, (None, message for the model) when not.

        A deferred tool called before it was loaded is loaded by the call (the model wants it): it runs when
        its arguments are valid, and its schema is sent from the next step either way."""
        value, problem = self._parse(tool, arguments)
        if tool.deferred and tool.name not in self.loaded:
            self.loaded.add(tool.name)
            if problem:
                problem += " Its schema is in your tools from your next step."
        return value, problem

    def _parse(self, tool: Tool, arguments: str) -> tuple[dict[str, Any] | None, str | None]:
        text = arguments.strip() or "{}"
        try:
            value = _json.loads(text)
        except _json.JSONDecodeError as exc:
            return None, f"error: the arguments of {tool.name} are not valid JSON ({exc.msg} at char {exc.pos})"
        if not isinstance(value, dict):
            return None, f"error: the arguments of {tool.name} must be a JSON object, not {type(value).__name__}"
        problem = self.check(tool, value)
        return (None, problem) if problem else (value, None)

    def check(self, tool: Tool, value: dict[str, Any]) -> str | None:
        checker = self._checkers.get(tool.name)
        if checker is None:
            return None
        if checker.fast is not None and checker.fast(value):  # valid for the common subset (fastcheck.py)
            return None
        errors = sorted(checker.validator().iter_errors(value), key=lambda e: list(e.absolute_path))
        if not errors:
            return None
        details = "; ".join(f"{'/'.join(str(p) for p in e.absolute_path) or '(root)'}: {e.message}" for e in errors[:5])
        return f"error: invalid arguments for {tool.name}: {details}. Call it again with arguments matching its schema."


class ToolRegistry:
    """Plugin tools (live, from ``catalog``) plus kernel tools; `snapshot` gives the tools of a step."""

    def __init__(self, catalog: Catalog | None = None, *, defer: bool = True) -> None:
        self._catalog = catalog or (lambda: [])
        self.defer = defer
        self._loaded: OrderedDict[str, set[str]] = OrderedDict()  # session → its loaded deferred tools
        self._kernel: dict[str, KernelTool] = {}
        self._checkers: dict[tuple[str, str], tuple[Mapping[str, Any], ArgumentCheck | None]] = {}
        self._warned: set[tuple[str, str]] = set()

    def add_kernel_tool(self, tool: KernelTool) -> None:
        self._kernel[tool.name] = tool

    def _checker(self, plugin: str, name: str, schema: Mapping[str, Any]) -> ArgumentCheck | None:
        cached = self._checkers.get((plugin, name))
        if cached is not None and cached[0] == schema:
            return cached[1]
        problem = schema_problem(schema)
        checker = None
        if problem is None:
            checker = ArgumentCheck(dict(schema))
        else:
            log.warning(
                "tool %s of %s has an invalid schema (%s); its arguments are not checked", name, plugin, problem
            )
        self._checkers[(plugin, name)] = (dict(schema), checker)
        return checker

    def compile_checks(self) -> int:
        """Build the argument check of every tool there is now (kernel tools, the catalog's, `tools_load`):
        what a first `snapshot` does otherwise — a few ms on the event loop in the first turn after "ready"
        (issue 39 item 9). The checks are cached by schema, as `snapshot` builds them. Returns how many."""
        built = 0
        for kt in self._kernel.values():
            self._checker(KERNEL, kt.name, kt.parameters)
            built += 1
        for entry in self._catalog():
            name, plugin = str(entry.get("name", "")), str(entry.get("plugin", ""))
            if name:
                self._checker(plugin, name, entry.get("parameters") or {"type": "object", "properties": {}})
                built += 1
        self._checker(KERNEL, LOAD_TOOL, LOAD_PARAMETERS)
        return built + 1

    def loaded(self, session: str | None) -> set[str]:
        """The deferred tools `session` loaded (the set itself: a `ToolSet` adds to it)."""
        key = session or ""
        found = self._loaded.get(key)
        if found is None:
            found = self._loaded[key] = set()
            while len(self._loaded) > LOADED_SESSIONS:
                self._loaded.popitem(last=False)
        else:
            self._loaded.move_to_end(key)
        return found

    def snapshot(self, session: str | None = None, restriction: Restriction | None = None) -> ToolSet:
        """The tools of one step of `session`'s turn (which deferred schemas it sends: its loaded set), less those
        the turn's tool policy leaves out (``restriction``: they are neither offered nor callable)."""
        tools: dict[str, Tool] = {}
        checkers: dict[str, ArgumentCheck | None] = {}
        for kt in self._kernel.values():
            hidden = kt.offered is not None and not kt.offered(session)
            tools[kt.name] = Tool(
                kt.name, kt.description, kt.parameters, kt.parallel_safe, KERNEL, kt.handler, hidden=hidden
            )
            checkers[kt.name] = self._checker(KERNEL, kt.name, kt.parameters)
        for entry in self._catalog():
            name, plugin = str(entry.get("name", "")), str(entry.get("plugin", ""))
            scope = entry.get("session")
            if not name or (scope is not None and scope != session):  # another session's tool: not this turn's
                continue
            if name in tools:
                if (plugin, name) not in self._warned:
                    self._warned.add((plugin, name))
                    log.warning(
                        "tool %s of %s is hidden by %s's tool of the same name", name, plugin, tools[name].plugin
                    )
                continue
            parameters = entry.get("parameters") or {"type": "object", "properties": {}}
            tools[name] = Tool(
                name,
                str(entry.get("description") or name),
                parameters,
                bool(entry.get("parallel_safe", False)),
                plugin,
                needs_approval=bool(entry.get("needs_approval", False)),
                approval_subject=subject if isinstance(subject := entry.get("approval_subject"), str) else None,
                deferred=self.defer and bool(entry.get("deferred", False)),
            )
            checkers[name] = self._checker(plugin, name, parameters)
        excluded: dict[str, str] = {}
        if restriction is not None:
            for name, tool in list(tools.items()):
                why = restriction.refusal(tool)
                if why is not None:
                    excluded[name] = why
                    del tools[name]
        if any(t.deferred for t in tools.values()):
            checkers[LOAD_TOOL] = self._checker(KERNEL, LOAD_TOOL, LOAD_PARAMETERS)
        return ToolSet(tools, checkers, self.loaded(session), excluded)
