"""The kernel process: supervisor, event ring, control socket and log file, from start to clean stop.

Kernel facilities (`kernel.*`) are served here through the same `facility/call` routing plugins use for each
other, so a plugin cannot tell whether a facility is implemented by the kernel or by another plugin.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from hologram._version import __version__
from hologram.facility import KERNEL
from hologram.kernel.control import ControlServer, socket_path
from hologram.lock import Lock
from hologram.rpc import RingWriter
from hologram.settings import load_settings
from hologram.supervisor import ManagedPlugin, PluginSpec, State, Supervisor

log = logging.getLogger("hologram.kernel")
DEFAULT_DATA_DIR = Path(".hologram")


def prepare_data_dir(data_dir: Path) -> Path:
    """Create the data directory (0700) and return it **absolute**, resolved once, before anything uses it.

    Every plugin runs with its own working directory (``<data>/plugins/NAME``), so a relative path handed
    on would be re-resolved from there: with the default ``./.hologram`` that `make up` uses, files wrote
    into ``.hologram/plugins/files/.hologram/workspace`` while shell ran in a different directory, and a
    restart with the same directory written absolute saw other notes (issue 10). From here on only the
    absolute path exists."""
    data_dir.mkdir(parents=True, exist_ok=True)
    data_dir = data_dir.resolve()
    (data_dir / "logs").mkdir(exist_ok=True)
    make_private(data_dir)
    return data_dir


def make_private(data_dir: Path) -> None:
    """Directories 0700 and files 0600 in the data directory: sessions, memory, logs and workspaces are the
    user's alone. New files get it from the kernel's umask (`hologram up` sets 077, plugins inherit it);
    this tightens what an older version or another umask left behind, the top level and logs/."""
    entries = [data_dir, *data_dir.iterdir(), *(data_dir / "logs").iterdir()]
    for entry in entries:
        with contextlib.suppress(OSError):
            if entry.is_symlink():
                continue
            wanted = 0o700 if entry.is_dir() else 0o600
            if entry.stat().st_mode & 0o777 != wanted:
                entry.chmod(wanted)


def open_log_file(data_dir: Path) -> Path:
    """One log file per start, with plugin stderr in it: `<data>/logs/hologram-<time>.log`."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    path = data_dir / "logs" / f"hologram-{stamp}-{os.getpid()}.log"
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger("hologram")
    root.setLevel(logging.INFO)
    root.addHandler(handler)
    return path


def plugin_specs(lock: Lock) -> list[PluginSpec]:
    """What the supervisor starts, from the lock alone: no discovery, no manifest read."""
    specs = []
    for plugin in lock.plugins:
        if plugin.name == KERNEL:
            continue
        manifest_dir = None
        if plugin.run is not None and plugin.run.command is not None:  # `./tool` is relative to the manifest
            path = lock.manifest_file(plugin)
            manifest_dir = path.parent if path is not None else None
        specs.append(PluginSpec(plugin, manifest_dir))
    return specs


class Kernel:
    def __init__(self, lock: Lock, data_dir: Path) -> None:
        self.lock = lock
        self.data_dir = data_dir = data_dir.resolve()  # see prepare_data_dir: plugins must get it absolute
        self.ring = RingWriter()
        self.settings = load_settings(data_dir)
        specs = plugin_specs(lock)
        for name in sorted(set(self.settings.plugins) - {s.name for s in specs}):
            log.warning("settings: [plugins.%s] configures a plugin that is not in the lock; ignored", name)
        self.supervisor = Supervisor(
            specs,
            data_dir,
            kernel_facilities=list(lock.kernel.provides),
            ring=self.ring,
            plugin_config=self.settings.plugins,
        )
        self.started_at = time.monotonic()
        self.heap_frozen = 0  # set once the start-up heap is frozen (cli/up_cmd.py, hologram/_heap.py)
        self.stop_requested = asyncio.Event()
        self._status_sections: dict[str, Callable[[], Any]] = {}
        self.control = ControlServer(socket_path(data_dir), self._control_methods())
        self._register_kernel_facilities()

    # -- kernel facilities ----------------------------------------------------------------------------

    def _register_kernel_facilities(self) -> None:
        def publish(caller: str, event: dict[str, Any]) -> int:
            return self.ring.publish({**event, "source": caller})

        def list_tools(caller: str) -> list[dict[str, Any]]:
            return [
                {**tool, "plugin": plugin.name}
                for plugin in self.supervisor.plugins.values()
                if plugin.state is State.READY
                for tool in plugin.tools.values()
            ]

        def kernel_info(caller: str) -> dict[str, Any]:
            return self.info()

        methods: dict[str, dict[str, Callable[..., Any]]] = {
            "kernel.events": {"publish": publish},
            "kernel.tools": {"list": list_tools},
            "kernel.settings": {"info": kernel_info},
        }
        self.supervisor.kernel_methods.update(methods)

    # -- control socket -------------------------------------------------------------------------------

    def info(self) -> dict[str, Any]:
        return {
            "version": __version__,
            "pid": os.getpid(),
            "uptime_s": round(time.monotonic() - self.started_at, 3),
            "data_dir": str(self.data_dir),
            "lock": str(self.lock.path.resolve()),
            "heap_frozen": self.heap_frozen,  # objects moved out of full collections (hologram/_heap.py)
        }

    def add_status_section(self, name: str, section: Callable[[], Any]) -> None:
        """Add ``name: section()`` to every `status` answer (the agent adds its providers' health)."""
        self._status_sections[name] = section

    def _control_methods(self) -> dict[str, Callable[[dict[str, Any]], Any]]:
        async def status(params: dict[str, Any]) -> dict[str, Any]:
            sections = {name: section() for name, section in self._status_sections.items()}
            return {**self.supervisor.snapshot(), **sections, "kernel": self.info()}

        async def restart(params: dict[str, Any]) -> dict[str, Any]:
            await self.supervisor.restart_plugin(str(params.get("name")))
            return {"ok": True}

        async def stop(params: dict[str, Any]) -> dict[str, Any]:
            await self.supervisor.stop_plugin(str(params.get("name")))
            return {"ok": True}

        async def start(params: dict[str, Any]) -> dict[str, Any]:
            await self.supervisor.start_plugin(str(params.get("name")))
            return {"ok": True}

        async def shutdown(params: dict[str, Any]) -> dict[str, Any]:
            self.stop_requested.set()
            return {"ok": True}

        return {
            "status": status,
            "plugin/restart": restart,
            "plugin/stop": stop,
            "plugin/start": start,
            "shutdown": shutdown,
        }

    # -- life -----------------------------------------------------------------------------------------

    def add_listener(self, listener: Callable[[ManagedPlugin], None]) -> None:
        self.supervisor.listeners.append(listener)

    async def run(self) -> None:
        """Start everything, serve until SIGINT/SIGTERM or a `shutdown` request, then stop cleanly."""
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self.stop_requested.set)
        await self.control.start()
        log.info("kernel %s up (pid %d), data in %s", __version__, os.getpid(), self.data_dir)
        try:
            self.supervisor.start()
            await self.stop_requested.wait()
            log.info("stopping")
            await self.supervisor.shutdown()
        finally:
            await self.control.close()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)
            self.ring.close()
            log.info("kernel stopped")
