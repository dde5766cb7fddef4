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

**Session scope.** With ``session``, the tools are that session's alone: offered only in its turns' requests
(the registry leaves them out of every other session's, and of ``tools/list`` and ``tools/call``), callable only
there, and another session may hold tools of the same names (an editor passes the same MCP servers to each of
its sessions). The catalog keeps them under ``SESSION/NAME`` (a key no tool name can be), each marked with its
``session``; the plugin removes them when the session's client goes away (``sessions/mcp``: docs/protocol.md).
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
MAX_SESSION = 200  # characters of a session id (the turn API's sessions/create)


def catalog_key(name: str, session: str | None) -> str:
    """Where a run-time tool is kept in its plugin's catalog: its name, or ``SESSION/NAME`` for a session's."""
    return name if session is None else f"{session}/{name}"


def _session_of(method: str, session: Any) -> str | None:
    if session is None:
        return None
    if not isinstance(session, str) or not session or len(session) > MAX_SESSION:
        raise RpcError(
            INVALID_PARAMS, f"kernel.tools.{method}: session: expected a session id (1-{MAX_SESSION} characters)"
        )
    return session


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

    def register(self, caller: str, tools: Any = None, session: Any = None) -> dict[str, Any]:
        """Add or replace ``caller``'s run-time tools (``session``'s alone when given: module docstring); answers
        ``{"tools": [names registered]}``."""
        if not isinstance(tools, list):
            raise RpcError(INVALID_PARAMS, "kernel.tools.register: tools: expected a list of tool objects")
        scope = _session_of("register", session)
        plugin = self.supervisor.plugins[caller]
        manifest = {t.name for t in plugin.spec.plugin.tools}
        problems = [p for i, t in enumerate(tools) if (p := _problem(i, t))]
        names = [str(t["name"]) for t in tools] if not problems else []
        for i, name in enumerate(names):
            holder = self._holder(name, caller, scope)
            if name in manifest:
                problems.append(f"tools[{i}].name: {name!r} is a tool of {caller}'s manifest")
            elif scope is not None and name in plugin.tools:
                problems.append(f"tools[{i}].name: {name!r} is already {caller}'s tool in every session")
            elif scope is None and any(t.get("session") and t["name"] == name for t in plugin.tools.values()):
                problems.append(f"tools[{i}].name: {name!r} is already {caller}'s tool in a session")
            elif holder is not None:
                problems.append(f"tools[{i}].name: {name!r} is already a tool of {holder}")
        if len(set(names)) != len(names):
            problems.append("tools: a name is given twice")
        keys = {catalog_key(name, scope) for name in names}
        kept = sum(1 for k, t in plugin.tools.items() if t.get("runtime") and k not in keys)
        if kept + len(names) > MAX_RUNTIME_TOOLS:
            problems.append(f"tools: at most {MAX_RUNTIME_TOOLS} run-time tools per plugin")
        if problems:
            raise RpcError(INVALID_PARAMS, "kernel.tools.register: " + "; ".join(problems[:5]))
        for tool in tools:
            plugin.tools[catalog_key(tool["name"], scope)] = {
                "name": tool["name"],
                "description": str(tool.get("description") or tool["name"])[:MAX_DESCRIPTION],
                "parameters": tool.get("parameters") or {"type": "object", "properties": {}},
                "parallel_safe": bool(tool.get("parallel_safe", False)),
                "needs_approval": True,  # the user's policy decides (module docstring), never the plugin
                "deferred": True,
                "runtime": True,
                **({"session": scope} if scope is not None else {}),
            }
        return {"tools": names}

    def unregister(self, caller: str, names: Any = None, session: Any = None) -> dict[str, Any]:
        """Remove ``caller``'s run-time tools by name (``session``'s, when given); answers ``{"tools": [names
        removed]}`` (a name that is not one of them is left alone: a manifest tool cannot be removed this way)."""
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise RpcError(INVALID_PARAMS, "kernel.tools.unregister: names: expected a list of tool names")
        scope = _session_of("unregister", session)
        plugin = self.supervisor.plugins[caller]
        removed = [n for n in names if plugin.tools.get(catalog_key(n, scope), {}).get("runtime")]
        for name in removed:
            del plugin.tools[catalog_key(name, scope)]
        return {"tools": removed}

    def _holder(self, name: str, caller: str, session: str | None) -> str | None:
        """Which other plugin has a tool of this name that a turn of ``session`` (of every session, when None)
        would also be offered — in its manifest, running, or the same session's — if any."""
        for other in self.supervisor.plugins.values():
            if other.name == caller:
                continue
            if name in other.tools or any(t.name == name for t in other.spec.plugin.tools):
                return other.name
            scoped = (t for t in other.tools.values() if t.get("session") is not None and t["name"] == name)
            if any(session is None or t["session"] == session for t in scoped):
                return other.name
        return None
