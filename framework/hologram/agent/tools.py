"""The tool registry: what the model may call, where each tool runs, and the check of its arguments.

Tools come from two places: plugins (manifest + runtime registration, read live from the supervisor's
catalog, so a crashed plugin's tools vanish and a restarted one's come back) and the kernel itself
(`KernelTool`, e.g. the memory layer's ``coldcontext_query``: ``registry.add_kernel_tool(...)``). Kernel
tools win a name clash, then the first plugin in lock order; the loser is logged once.

Arguments are validated against the tool's JSON Schema *before* the call. A model that sends broken JSON or
the wrong shape gets an error result that says what is wrong, so it can correct itself; the turn never
raises because of what a model asked for.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from hologram import _json
from hologram.agent.fastcheck import Check, compile_check

log = logging.getLogger("hologram.agent")
KERNEL = "kernel"

KernelHandler = Callable[[dict[str, Any], "ToolInvocation"], Awaitable[Any]]
Catalog = Callable[[], list[dict[str, Any]]]


@dataclass(frozen=True)
class ToolInvocation:
    """What a kernel tool handler is told about the call besides its arguments."""

    call_id: str
    session_id: str | None
    turn_id: str | None = None


@dataclass(frozen=True)
class KernelTool:
    """A tool implemented in the kernel process. ``handler(arguments, invocation)`` returns a str, a
    ``{"content": str, "is_error": bool}`` dict, or any JSON value (sent as JSON text)."""

    name: str
    description: str
    handler: KernelHandler
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})
    parallel_safe: bool = False


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

    def schema(self) -> dict[str, Any]:
        """The OpenAI ``tools`` entry."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }


class ToolSet:
    """The tools of one LLM step (a snapshot: the catalog may change while a batch runs)."""

    def __init__(
        self,
        tools: dict[str, Tool],
        validators: dict[str, Draft202012Validator | None],
        fast: dict[str, Check | None] | None = None,
    ) -> None:
        self.tools = tools
        self._validators = validators
        self._fast = fast or {}
        self._schemas = [tool.schema() for tool in tools.values()]

    def get(self, name: str) -> Tool | None:
        return self.tools.get(name)

    def schemas(self) -> list[dict[str, Any]]:
        return self._schemas

    def parse(self, tool: Tool, arguments: str) -> tuple[dict[str, Any] | None, str | None]:
        """(arguments, None) when valid, (None, message for the model) when not."""
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
        validator = self._validators.get(tool.name)
        if validator is None:
            return None
        fast = self._fast.get(tool.name)
        if fast is not None and fast(value):  # valid for the common subset: skip jsonschema (fastcheck.py)
            return None
        errors = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
        if not errors:
            return None
        details = "; ".join(f"{'/'.join(str(p) for p in e.absolute_path) or '(root)'}: {e.message}" for e in errors[:5])
        return f"error: invalid arguments for {tool.name}: {details}. Call it again with arguments matching its schema."


class ToolRegistry:
    """Plugin tools (live, from ``catalog``) plus kernel tools; `snapshot` gives the tools of a step."""

    def __init__(self, catalog: Catalog | None = None) -> None:
        self._catalog = catalog or (lambda: [])
        self._kernel: dict[str, KernelTool] = {}
        self._validators: dict[tuple[str, str], tuple[Mapping[str, Any], Draft202012Validator | None, Check | None]]
        self._validators = {}
        self._warned: set[tuple[str, str]] = set()

    def add_kernel_tool(self, tool: KernelTool) -> None:
        self._kernel[tool.name] = tool

    def _validator(
        self, plugin: str, name: str, schema: Mapping[str, Any]
    ) -> tuple[Draft202012Validator | None, Check | None]:
        cached = self._validators.get((plugin, name))
        if cached is not None and cached[0] == schema:
            return cached[1], cached[2]
        try:
            Draft202012Validator.check_schema(schema)
            validator: Draft202012Validator | None = Draft202012Validator(schema)
        except SchemaError as exc:
            log.warning("tool %s of %s has an invalid schema (%s); its arguments are not checked", name, plugin, exc)
            validator = None
        fast = compile_check(dict(schema)) if validator is not None else None
        self._validators[(plugin, name)] = (dict(schema), validator, fast)
        return validator, fast

    def snapshot(self) -> ToolSet:
        tools: dict[str, Tool] = {}
        validators: dict[str, Draft202012Validator | None] = {}
        fast: dict[str, Check | None] = {}
        for kt in self._kernel.values():
            tools[kt.name] = Tool(kt.name, kt.description, kt.parameters, kt.parallel_safe, KERNEL, kt.handler)
            validators[kt.name], fast[kt.name] = self._validator(KERNEL, kt.name, kt.parameters)
        for entry in self._catalog():
            name, plugin = str(entry.get("name", "")), str(entry.get("plugin", ""))
            if not name:
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
            )
            validators[name], fast[name] = self._validator(plugin, name, parameters)
        return ToolSet(tools, validators, fast)
