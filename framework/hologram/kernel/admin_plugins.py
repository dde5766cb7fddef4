"""``kernel.plugins``: what the supervisor knows about each plugin, its start/stop/restart, and its log.

A plugin's stderr goes to the kernel's log file, one line each as ``hologram.plugin.NAME: [NAME] text``
(supervisor/managed.py), and the supervisor's own lines about it are ``hologram.supervisor: [NAME] ...``;
``log`` reads the tail of that real file, from the end (and on into its rotated backups:
kernel/logfile.py), so a long-running kernel's big log costs only the part that is read.
"""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from hologram.kernel.logfile import log_files
from hologram.rpc import INVALID_PARAMS, UNKNOWN_NAME, RpcError
from hologram.supervisor import ManagedPlugin, State

if TYPE_CHECKING:
    from hologram.kernel.core import Kernel

FACILITY = "kernel.plugins"
MAX_LINES = 5000
CHUNK = 64 * 1024
MAX_SCAN = 32 * 1024 * 1024  # a log this far back (the file and its backups) is not a tail any more


def current_log_file(data_dir: Path) -> Path | None:
    """The file this kernel logs to (`kernel.logfile.open_log_file`), else the newest one in ``<data>/logs``."""
    logs = (data_dir / "logs").resolve()
    for handler in logging.getLogger("hologram").handlers:
        name = getattr(handler, "baseFilename", None)
        if isinstance(name, str) and Path(name).parent == logs:
            return Path(name)
    files = sorted(logs.glob("hologram-*.log"), key=lambda p: p.stat().st_mtime) if logs.is_dir() else []
    return files[-1] if files else None


def tail_matching(path: Path, markers: tuple[str, ...], lines: int) -> list[str]:
    """The last ``lines`` lines of ``path`` containing one of ``markers``, oldest first, read backwards — on
    into its rotated backups (``path.1``, ``path.2`` …) when the file itself holds fewer, so the view keeps
    its lines across a rotation. A file rotated while it is read is read once (by its inode)."""
    found: list[str] = []
    seen: set[tuple[int, int]] = set()
    budget = MAX_SCAN
    for file in log_files(path):
        try:
            handle = file.open("rb")
        except OSError:
            continue  # deleted by a rotation meanwhile: its lines are in the next backup
        with handle:
            info = os.fstat(handle.fileno())
            if (info.st_dev, info.st_ino) in seen:
                continue
            seen.add((info.st_dev, info.st_ino))
            budget -= _tail_of(handle, markers, lines - len(found), found, budget)
        if len(found) >= lines or budget <= 0:
            break
    return found[::-1]


def _tail_of(handle: BinaryIO, markers: tuple[str, ...], lines: int, found: list[str], budget: int) -> int:
    """Append to `found` the last `lines` matching lines of one open file, newest first; returns the bytes read."""
    handle.seek(0, 2)
    pos, rest, scanned, wanted = handle.tell(), b"", 0, len(found) + lines
    while pos > 0 and len(found) < wanted and scanned < budget:
        step = min(CHUNK, pos)
        pos -= step
        scanned += step
        handle.seek(pos)
        block = handle.read(step) + rest
        parts = block.split(b"\n")
        rest = parts[0] if pos > 0 else b""
        complete = parts[1:] if pos > 0 else parts
        for raw in reversed(complete):
            text = raw.decode("utf-8", "replace").rstrip("\r")
            if text and any(m in text for m in markers):
                found.append(text)
                if len(found) >= wanted:
                    break
    return scanned


SECRET_HINTS = ("token", "secret", "password", "api_key", "apikey")


def config_view(plugin: ManagedPlugin) -> dict[str, Any]:
    """``config_schema`` (the lock's copy of the plugin's config model) and ``config``, the effective value of
    each key the schema declares, for the web UI's plugins tab; nothing for a plugin without a schema.

    Only declared keys are shown, and a secret never: a key the schema marks ``writeOnly`` or
    ``format: password`` (pydantic's ``SecretStr``), or whose name says token/secret/password, is told as
    ``{"set": true}`` instead of its value."""
    schema = plugin.spec.plugin.config_schema
    if schema is None:
        return {}
    effective = {**plugin.spec.plugin.config, **plugin.config_override}
    properties = schema.get("properties") or {}
    values: dict[str, Any] = {}
    for key, prop in properties.items():
        if key not in effective:
            continue
        secret = isinstance(prop, dict) and (prop.get("writeOnly") or prop.get("format") == "password")
        if secret or any(hint in key.lower() for hint in SECRET_HINTS):
            values[key] = {"set": effective[key] not in (None, "")}
        else:
            values[key] = {"value": effective[key]}
    return {"config_schema": schema, "config": values}


class PluginAdmin:
    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self._tasks: set[asyncio.Task[None]] = set()
        self._errors: dict[str, str] = {}  # the last crash or failure of each plugin, kept across its restarts
        kernel.add_listener(self._record)

    def _record(self, plugin: ManagedPlugin) -> None:
        if plugin.state in (State.CRASHED, State.FAILED) and plugin.reason:
            self._errors[plugin.name] = plugin.reason

    def _name(self, name: Any) -> str:
        plugins = self.kernel.supervisor.plugins
        if isinstance(name, str) and name in plugins:
            return name
        known = ", ".join(sorted(plugins)) or "none"
        if not isinstance(name, str) or not name:
            raise RpcError(INVALID_PARAMS, f"name: give a plugin's name; the plugins: {known}")
        raise RpcError(UNKNOWN_NAME, f"no plugin named {name!r}; the plugins: {known}")

    async def list(self) -> dict[str, Any]:
        supervisor = self.kernel.supervisor
        entries = []
        for entry in supervisor.snapshot()["plugins"]:
            plugin = supervisor.plugins[entry["name"]]
            state = entry["state"]
            entries.append(
                {
                    "name": entry["name"],
                    "state": state,
                    "on_demand": entry["on_demand"],  # `[start] lazy`, no process until the first call of its tools
                    "reason": entry["reason"],
                    "pid": entry["pid"],
                    "restarts": entry["restarts"],
                    "uptime_s": entry["uptime_s"],
                    "waiting_on": [w["facility"] for w in entry["waiting_on"]],
                    "provides": list(entry["provides"]),
                    "requires": sorted(plugin.spec.requires),
                    "tools": entry["tools"],
                    "last_error": self._errors.get(plugin.name),
                    "status": entry["status"],
                    **config_view(plugin),
                }
            )
        return {"plugins": entries}

    def _later(self, action: Any) -> None:
        """Run ``action`` after this answer went out (a plugin restarting or stopping itself)."""

        async def run() -> None:
            await asyncio.sleep(0)
            await action

        task = asyncio.ensure_future(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _act(self, caller: str | None, name: Any, verb: str) -> dict[str, Any]:
        name = self._name(name)
        supervisor = self.kernel.supervisor
        if verb != "stop":  # refused now, before a plugin restarting itself is answered (settings.toml unusable)
            supervisor.check_settings(name, f"{verb}ed")
        action = {
            "restart": supervisor.restart_plugin,
            "stop": supervisor.stop_plugin,
            "start": supervisor.start_plugin,
        }[verb](name)
        if caller == name:
            self._later(action)
        else:
            await action
        return {"ok": True}

    async def restart(self, name: Any = None, caller: str | None = None) -> dict[str, Any]:
        return await self._act(caller, name, "restart")

    async def stop(self, name: Any = None, caller: str | None = None) -> dict[str, Any]:
        return await self._act(caller, name, "stop")

    async def start(self, name: Any = None, caller: str | None = None) -> dict[str, Any]:
        return await self._act(caller, name, "start")

    async def log(self, name: Any = None, lines: Any = 200) -> dict[str, Any]:
        name = self._name(name)
        if isinstance(lines, bool) or not isinstance(lines, int) or not 1 <= lines <= MAX_LINES:
            raise RpcError(INVALID_PARAMS, f"lines: a whole number from 1 to {MAX_LINES}")
        path = current_log_file(self.kernel.data_dir)
        if path is None:
            return {"lines": []}
        markers = (f" hologram.plugin.{name}: ", f" hologram.supervisor: [{name}] ")
        return {"lines": await asyncio.to_thread(tail_matching, path, markers, lines)}

    def serve(self) -> None:
        from hologram.kernel.admin import serve_admin

        for method in (self.list, self.restart, self.stop, self.start, self.log):
            serve_admin(self.kernel, FACILITY, method.__name__, method)
