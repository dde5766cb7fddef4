"""admin: self-management — the model can see and repair its own graph, as a person does with `hologram status`.

``plugins_list`` reads ``kernel.plugins`` ``list`` (state, pid, restarts, uptime, what a plugin waits on, its last
error and its own status line; the config values are left out, ``settings_get`` shows them); ``plugin_restart``
calls ``kernel.plugins`` ``restart`` and needs the user's approval (the kernel asks before the call reaches this
plugin: ``needs_approval`` in the manifest, the subject the plugin's name); ``settings_get`` reads ``kernel.settings``
``get``, which never returns a secret (hologram/kernel/settings_view.py). Everything goes through kernel facilities
the manifest requires, so a user sees what this plugin may do before it is installed.
"""

from __future__ import annotations

import json
from typing import Any

from hologram.sdk import Plugin, RpcError, tool_error

plugin = Plugin("admin")
SHOWN = ("state", "pid", "restarts", "uptime_s", "waiting_on", "provides", "requires", "last_error", "status")


def _line(entry: dict[str, Any]) -> dict[str, Any]:
    shown = {key: entry.get(key) for key in SHOWN if entry.get(key) not in (None, "", [])}
    shown["tools"] = len(entry.get("tools") or [])
    return {"name": entry.get("name"), **shown}


@plugin.tool("plugins_list")
async def plugins_list(name: str | None = None) -> Any:
    try:
        answer = await plugin.facility("kernel.plugins").call("list")
    except RpcError as exc:
        return tool_error(f"the plugins could not be listed: {exc.message}")
    entries = [e for e in answer.get("plugins", []) if isinstance(e, dict)]
    if name:
        chosen = [e for e in entries if e.get("name") == name.strip()]
        if not chosen:
            known = ", ".join(sorted(str(e.get("name")) for e in entries))
            return tool_error(f"no plugin named {name!r}; the plugins: {known}")
        entries = chosen
    down = [str(e.get("name")) for e in entries if e.get("state") != "ready"]
    head = f"{len(entries)} plugin(s); not ready: {', '.join(down)}" if down else f"{len(entries)} plugin(s), all ready"
    return head + "\n" + json.dumps([_line(e) for e in entries], ensure_ascii=False)


@plugin.tool("plugin_restart")
async def plugin_restart(name: str) -> Any:
    try:
        await plugin.facility("kernel.plugins", timeout=120).call("restart", name=name.strip())
    except RpcError as exc:
        return tool_error(f"{name} was not restarted: {exc.message}")
    if name.strip() == plugin.name:
        return "admin restarts itself right after this answer"
    try:
        answer = await plugin.facility("kernel.plugins").call("list")
    except RpcError:
        return f"{name} restarted"
    state = next((e for e in answer.get("plugins", []) if isinstance(e, dict) and e.get("name") == name.strip()), {})
    return f"{name} restarted; now {state.get('state', 'unknown')}" + (
        f" (pid {state['pid']}, {state.get('restarts', 0)} restarts)" if state.get("pid") else ""
    )


@plugin.tool("settings_get")
async def settings_get(section: str | None = None) -> Any:
    params = {"section": section.strip()} if section and section.strip() else {}
    try:
        answer = await plugin.facility("kernel.settings").call("get", **params)
    except RpcError as exc:
        return tool_error(exc.message)
    return json.dumps(answer, ensure_ascii=False)
