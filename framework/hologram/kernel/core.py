"""The kernel process: supervisor, event ring, control socket and log file, from start to clean stop.

Kernel facilities (`kernel.*`) are served here through the same `facility/call` routing plugins use for each
other, so a plugin cannot tell whether a facility is implemented by the kernel or by another plugin.

Assembly is explicit: a component that adds to the kernel (the agent, `attach_agent`) calls the registration
methods below — control methods, kernel facility methods, event listeners, lock-changed listeners, notices
— and never writes another object's fields. Each registration refuses a duplicate, so two components cannot
silently claim one name.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from hologram._version import __version__
from hologram.base._defaults import DEFAULT_DATA_DIR as DEFAULT_DATA_DIR
from hologram.base._heap import allocator
from hologram.config.current import SettingsFile
from hologram.config.settings import load_settings
from hologram.kernel.admin_install import InstallAdmin
from hologram.kernel.admin_plugins import PluginAdmin
from hologram.kernel.control import ControlServer, Method, socket_path
from hologram.kernel.notices import Notice, NoticeListener, Notices
from hologram.kernel.settle import settle
from hologram.manifest.facility import KERNEL
from hologram.plan.lock import Lock
from hologram.rpc import INVALID_PARAMS, UNKNOWN_NAME, Connection, RingWriter, RpcError
from hologram.supervisor import ManagedPlugin, PluginSpec, State, Supervisor
from hologram.supervisor.core import EventListener, KernelMethod
from hologram.supervisor.inproc import InprocEndpoint
from hologram.supervisor.runtime_tools import FACILITY as RUNTIME_TOOLS
from hologram.supervisor.runtime_tools import RuntimeTools

log = logging.getLogger("hologram.kernel")
LockListener = Callable[[Lock], None]


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


def plugin_specs(lock: Lock) -> list[PluginSpec]:
    """What the supervisor starts, from the lock alone: no discovery, no manifest read."""
    specs = []
    for plugin in lock.plugins:
        if plugin.name == KERNEL:
            continue
        manifest_dir = None
        path = lock.manifest_file(plugin)  # named when the plugin refuses one of its [config] defaults
        if plugin.run is not None and plugin.run.command is not None:  # `./tool` is relative to the manifest
            manifest_dir = path.parent if path is not None else None
        specs.append(PluginSpec(plugin, manifest_dir, path))
    return specs


def load_inproc(module_name: str) -> InprocEndpoint:
    """A `run.inproc` plugin, served by the SDK's runtime (`hologram.sdk.local`). The kernel hands this to
    its supervisor, which sits below the SDK and knows only the protocol (supervisor/inproc.py); the SDK is
    imported when the first in-process plugin starts, as before."""
    from hologram.sdk.local import LocalEndpoint

    return LocalEndpoint.load(module_name)


class Kernel:
    def __init__(self, lock: Lock, data_dir: Path) -> None:
        self._lock = lock
        self._lock_listeners: list[LockListener] = []
        self._stopping_hooks: list[Callable[[], Awaitable[None]]] = []
        self.notices = Notices()
        self.data_dir = data_dir = data_dir.resolve()  # see prepare_data_dir: plugins must get it absolute
        self.ring = RingWriter()
        self.settings = load_settings(data_dir)
        # [plugins.NAME] is read again at each start of a plugin (config/current.py); the rest only here
        self.settings_file = SettingsFile(data_dir, self.settings)
        specs = plugin_specs(lock)
        for name in sorted(set(self.settings.plugins) - {s.name for s in specs}):
            log.warning("settings: [plugins.%s] configures a plugin that is not in the lock; ignored", name)
        self.supervisor = Supervisor(
            specs,
            data_dir,
            kernel_facilities=list(lock.kernel.provides),
            ring=self.ring,
            plugin_config=self.settings.plugins,
            read_plugin_config=self.settings_file.plugins,
            inproc_loader=load_inproc,
            settings_path=self.settings.path,
        )
        self.started_at = time.monotonic()
        self.heap_frozen = 0  # set once the start-up heap is frozen (cli/up_cmd.py, hologram/base/_heap.py)
        self.stop_requested = asyncio.Event()
        self._status_sections: dict[str, Callable[[], Any]] = {}
        self.control = ControlServer(socket_path(data_dir), {})
        for name, method in self._control_methods().items():
            self.add_control_method(name, method)
        self._register_kernel_facilities()

    # -- assembly -------------------------------------------------------------------------------------

    def add_control_method(self, name: str, method: Method) -> None:
        """Serve ``name`` on the control socket (``method(params)``, async); refuses a name already served."""
        self.control.add(name, method)

    def add_facility_method(self, facility: str, name: str, method: KernelMethod) -> None:
        """Serve ``name`` on the kernel facility ``facility`` (``kernel.sessions``) to plugins that require it,
        as ``method(caller=plugin, **params)``; refuses a method already served."""
        self.supervisor.add_kernel_method(facility, name, method)

    def add_event_listener(self, listener: EventListener) -> None:
        """Call ``listener(event)`` for every event a plugin publishes (in the kernel, beside the ring)."""
        self.supervisor.add_event_listener(listener)

    def on_client_disconnect(self, listener: Callable[[Connection], None]) -> None:
        """Call ``listener(connection)`` when a control-socket client goes away (the turn API detaches it)."""
        self.control.on_disconnect(listener)

    def on_stopping(self, hook: Callable[[], Awaitable[None]]) -> None:
        """Run ``hook`` when the kernel is asked to stop, before any plugin is stopped (the turn service ends
        its turns there, while their tools and clients are still up)."""
        self._stopping_hooks.append(hook)

    def on_lock_changed(self, listener: LockListener) -> None:
        """Call ``listener(new_lock)`` whenever the lock is replaced (`replace_lock`), before plugins restart."""
        self._lock_listeners.append(listener)

    def notify(self, source: str, text: str, *, warning: bool = False) -> None:
        """Tell the person running the kernel (`hologram up` prints it); log it as well where it happens."""
        self.notices.publish(Notice(source, text, warning))

    def on_notice(self, listener: NoticeListener) -> None:
        """Call ``listener(notice)`` for each notice, the ones given before this call first."""
        self.notices.subscribe(listener)

    # -- the lock -------------------------------------------------------------------------------------

    @property
    def lock(self) -> Lock:
        """The lock the graph runs from; it changes only through `replace_lock`."""
        return self._lock

    async def replace_lock(self, lock: Lock) -> list[str]:
        """Adopt a rebuilt lock (`hologram up --watch`): the lock-changed listeners run first (the agent
        re-installs the stage order), then plugins whose entry changed restart with their dependents.
        Returns the plugins restarted."""
        self._lock = lock
        for listener in list(self._lock_listeners):
            try:
                listener(lock)
            except Exception:  # one broken listener must not keep the others on the old lock
                log.exception("lock-changed listener failed")
        return await self.supervisor.replace_specs(plugin_specs(lock))

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

        def settings_get(caller: str, section: str | None = None) -> dict[str, Any]:
            from hologram.kernel.settings_view import settings_view  # the self-management tools' only

            if section is not None and not isinstance(section, str):
                raise RpcError(INVALID_PARAMS, "section: a name such as 'agent' or 'plugins.web', or leave it out")
            try:
                return settings_view(self.settings, section)
            except KeyError as exc:
                raise RpcError(UNKNOWN_NAME, str(exc.args[0])) from None

        self.add_facility_method("kernel.events", "publish", publish)
        self.add_facility_method("kernel.tools", "list", list_tools)
        runtime_tools = RuntimeTools(self.supervisor)  # tools a plugin adds while it runs (supervisor/runtime_tools.py)
        self.add_facility_method(RUNTIME_TOOLS, "register", runtime_tools.register)
        self.add_facility_method(RUNTIME_TOOLS, "unregister", runtime_tools.unregister)
        self.add_facility_method("kernel.settings", "info", kernel_info)
        self.add_facility_method("kernel.settings", "get", settings_get)  # never a secret (kernel/settings_view.py)
        PluginAdmin(self).serve()  # kernel.plugins, and admin/list|restart|stop|start|log on the control socket
        InstallAdmin(self).serve()  # kernel.plugins reload|inventory|add|remove: plugins added at run time

    # -- control socket -------------------------------------------------------------------------------

    def info(self) -> dict[str, Any]:
        return {
            "version": __version__,
            "pid": os.getpid(),
            "uptime_s": round(time.monotonic() - self.started_at, 3),
            "data_dir": str(self.data_dir),
            "lock": str(self.lock.path.resolve()),
            # the environment plugins are installed into (`hologram plugin add` must use the same one)
            "python": sys.executable,
            "prefix": sys.prefix,
            "heap_frozen": self.heap_frozen,  # objects moved out of full collections (hologram/base/_heap.py)
            # memory blocks the Python allocator holds: a count, not a size, so a leak of Python objects shows
            # as steady growth over turns that PSS noise hides (tests/guard/test_soak.py)
            "allocated_blocks": sys.getallocatedblocks(),
            "allocator": allocator(),  # pymalloc or malloc (PYTHONMALLOC; hologram/base/_heap.py)
        }

    def add_status_section(self, name: str, section: Callable[[], Any]) -> None:
        """Add ``name: section()`` to every `status` answer (the agent adds its providers' health)."""
        self._status_sections[name] = section

    def _control_methods(self) -> dict[str, Callable[[dict[str, Any]], Any]]:
        async def status(params: dict[str, Any]) -> dict[str, Any]:
            sections = {name: section() for name, section in self._status_sections.items()}
            return {**self.supervisor.snapshot(), **sections, "kernel": self.info()}

        async def restart(params: dict[str, Any]) -> dict[str, Any]:
            name = str(params.get("name"))
            await self.supervisor.restart_plugin(name)
            return await self._outcome(name)

        async def stop(params: dict[str, Any]) -> dict[str, Any]:
            await self.supervisor.stop_plugin(str(params.get("name")))
            return {"ok": True}

        async def start(params: dict[str, Any]) -> dict[str, Any]:
            name = str(params.get("name"))
            await self.supervisor.start_plugin(name)
            return await self._outcome(name)

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

    async def _outcome(self, name: str) -> dict[str, Any]:
        """How a plugin a person (re)started ended up, once it did (`hologram plugin restart` prints it)."""
        await settle(self, [name], (State.STARTING, State.STOPPING))
        entry = next(p for p in self.supervisor.snapshot()["plugins"] if p["name"] == name)
        return {"ok": True, "plugin": {k: entry[k] for k in ("name", "state", "pid", "reason")}}

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
            for hook in self._stopping_hooks:
                try:
                    await hook()
                except Exception:  # a hook's bug must not keep the plugins running
                    log.exception("a stopping hook failed")
            await self.supervisor.shutdown()
        finally:
            await self.control.close()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)
            self.ring.close()
            log.info("kernel stopped")
