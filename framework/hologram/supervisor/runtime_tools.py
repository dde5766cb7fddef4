"""Tools a plugin adds and removes while it runs: ``kernel.tools`` ``register`` and ``unregister``.

A bridge to other tool servers (the ``mcp`` plugin) learns its tools only after it started, and they come and
go (a server restarts, a server's list changes). It registers them here, each with its JSON Schema; the
agent's registry reads them live from the supervisor's catalog like the manifest's tools, so the next LLM
step of any turn sees the change.

What the kernel decides, never the plugin:

- **Approval.** Every such tool needs approval (``needs_approval``), whatever the plugin says: it is not in the
  lock, so the user never read a manifest promising what it does. The user's policy answers
  (``[approvals] default``, ``[approvals.tools.NAME]``, or a pattern ``[approvals.tools."mcp_fs_*"]``:
  hologram/agent/approvals.py); by default every call is asked.
- **Deferred.** Its schema is sent once the model loads it (``tools_load``), like a deferred manifest tool,
  so a server with fifty tools does not grow every request by fifty schemas (docs/guards.md).
- **Names.** ``[A-Za-z0-9_-]{1,64}`` (what the vendors accept); a name another plugin's tool or the caller's
  own manifest holds is refused. All of one call's tools are registered or none.

A restart of the plugin forgets them (its handshake resets its tools): it registers them again.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from hologram.manifest.model import TOOL_NAME_PATTERN
from hologram.manifest.schema_check import schema_problem
from hologram.rpc import INVALID_PARAMS, RpcError

if TYPE_CHECKING:
    from hologram.supervisor.core import Supervisor

FACILITY = "kernel.tools"
MAX_DESCRIPTION = 4096  # characters of a description kept (a server's may be a manual)
MAX_RUNTIME_TOOLS = 1000  # per plugin: each is a line of tools_load's description once its name is sent
_NAME = re.compile(TOOL_NAME_PATTERN)


def _problem(index: int, tool: Any) -> str | None:
    where = f"tools[{index}]"
    if not isinstance(tool, dict):
        return f"{where}: expected an object {{name, description, parameters, parallel_safe?}}"
    name = tool.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        return f"{where}.name: {name!r} is not a tool name: use 1-64 of A-Z a-z 0-9 _ -"
    unknown = set(tool) - {"name", "description", "parameters", "parallel_safe"}
    if unknown:
        return f"{where}: unknown keys {sorted(unknown)} (the kernel decides approval and deferral)"
    if not isinstance(tool.get("description", ""), str):
        return f"{where}.description: expected a string"
    if not isinstance(tool.get("parallel_safe", False), bool):
        return f"{where}.parallel_safe: expected true or false"
    schema = tool.get("parameters", {"type": "object", "properties": {}})
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return f"{where}.parameters: expected a JSON Schema of type object"
    problem = schema_problem(schema)
    return f"{where}.parameters: not a valid JSON Schema: {problem}" if problem else None


class RuntimeTools:
    """The ``kernel.tools`` methods ``register`` and ``unregister`` over the supervisor's plugins."""

    def __init__(self, supervisor: Supervisor) -> None:
        self.supervisor = supervisor

    def register(self, caller: str, tools: Any = None) -> dict[str, Any]:
        """Add or replace ``caller``'s run-time tools; answers ``{"tools": [names registered]}``."""
        if not isinstance(tools, list):
            raise RpcError(INVALID_PARAMS, "kernel.tools.register: tools: expected a list of tool objects")
        plugin = self.supervisor.plugins[caller]
        manifest = {t.name for t in plugin.spec.plugin.tools}
        problems = [p for i, t in enumerate(tools) if (p := _problem(i, t))]
        names = [str(t["name"]) for t in tools] if not problems else []
        for i, name in enumerate(names):
            holder = self._holder(name, caller)
            if name in manifest:
                problems.append(f"tools[{i}].name: {name!r} is a tool of {caller}'s manifest")
            elif holder is not None:
                problems.append(f"tools[{i}].name: {name!r} is already a tool of {holder}")
        if len(set(names)) != len(names):
            problems.append("tools: a name is given twice")
        kept = sum(1 for t in plugin.tools.values() if t.get("runtime") and t["name"] not in names)
        if kept + len(names) > MAX_RUNTIME_TOOLS:
            problems.append(f"tools: at most {MAX_RUNTIME_TOOLS} run-time tools per plugin")
        if problems:
            raise RpcError(INVALID_PARAMS, "kernel.tools.register: " + "; ".join(problems[:5]))
        for tool in tools:
            plugin.tools[tool["name"]] = {
                "name": tool["name"],
                "description": str(tool.get("description") or tool["name"])[:MAX_DESCRIPTION],
                "parameters": tool.get("parameters") or {"type": "object", "properties": {}},
                "parallel_safe": bool(tool.get("parallel_safe", False)),
                "needs_approval": True,  # the user's policy decides (module docstring), never the plugin
                "deferred": True,
                "runtime": True,
            }
        return {"tools": names}

    def unregister(self, caller: str, names: Any = None) -> dict[str, Any]:
        """Remove ``caller``'s run-time tools by name; answers ``{"tools": [names removed]}`` (a name that is
        not one of them is left alone: a manifest tool cannot be removed this way)."""
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise RpcError(INVALID_PARAMS, "kernel.tools.unregister: names: expected a list of tool names")
        plugin = self.supervisor.plugins[caller]
        removed = [n for n in names if plugin.tools.get(n, {}).get("runtime")]
        for name in removed:
            del plugin.tools[name]
        return {"tools": removed}

    def _holder(self, name: str, caller: str) -> str | None:
        """Which other plugin has a tool of this name (in its manifest, or running), if any."""
        for other in self.supervisor.plugins.values():
            if other.name == caller:
                continue
            if name in other.tools or any(t.name == name for t in other.spec.plugin.tools):
                return other.name
        return None
