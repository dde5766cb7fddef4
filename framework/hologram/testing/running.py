"""A started plugin for plain (sync) pytest tests: `PluginHarness` on an event loop in a thread of its own.

pytest-asyncio is not something a plugin repository should need for one fixture, and the harness is async (the
kernel's supervisor is); so the fixture keeps a loop running beside the test and each call waits for its answer.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

from hologram.manifest import load_manifest
from hologram.sdk.testing import PluginHarness
from hologram.testing.logs import LogCapture

T = TypeVar("T")
CALL_TIMEOUT_S = 120.0  # a failure bound for one call, never an expected duration
FAILED_START_LINES = 40  # of the plugin's log shown with a start that failed: a traceback and what came before


class RunningPlugin:
    """The plugin of a manifest, started as a real process under the kernel's supervisor.

    ``call_tool(name, arguments)`` → the result object (``{"content": …}``); ``call_stage(stage, view)`` → the
    hook's answer; ``call_facility(facility, method, **params)`` → the method's result; ``tools`` → the tools as
    the kernel knows them; ``pid``; ``log`` → what the plugin wrote to its log (stderr: ``print``, ``logging``)
    so far, one line each; ``harness`` for anything else (async, on `loop`)."""

    def __init__(self, harness: PluginHarness) -> None:
        self.harness = harness
        # the plugin's stderr, as the supervisor logs it: kept here (nothing writes a log file under the kit),
        # shown with a start that failed
        self._log = LogCapture(harness.spec.name)
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="hologram-plugin-loop", daemon=True)
        self._thread.start()

    @classmethod
    def start(cls, manifest: str | Path, **options: Any) -> RunningPlugin:
        """Start the plugin (options as `PluginHarness.from_manifest`); raises RuntimeError if it does not
        become ready, with the kernel's reason. A ``run.module`` plugin kept in a repository runs from its source
        (its package's directory on the plugin's PYTHONPATH), installed or not. Use it as a context manager
        (``with RunningPlugin.start(path) as plugin:``), or call `stop`."""
        if options.get("env") is None:
            options["env"] = source_env(Path(manifest))
        running = cls(PluginHarness.from_manifest(manifest, **options))
        running._log.__enter__()
        try:
            running.run(running.harness.start())
        except RuntimeError as exc:  # did not become ready: the kernel's reason, and what the plugin said
            running.stop()
            raise RuntimeError(f"{exc}\n{running.log_tail()}") from None
        except BaseException:
            running.stop()
            raise
        return running

    @property
    def log(self) -> list[str]:
        """The lines the plugin wrote to its log (its stderr) since it was started, and the supervisor's own
        lines about it (``start failed: …``)."""
        return list(self._log.lines)

    def log_tail(self, count: int = FAILED_START_LINES) -> str:
        """The last lines of `log`, indented under a heading, for a failure message."""
        lines = self._log.lines[-count:]
        if not lines:
            return "its log: (nothing)"
        return "its log (the last lines):\n" + "\n".join("    " + line for line in lines)

    def run(self, coroutine: Coroutine[Any, Any, T], timeout: float = CALL_TIMEOUT_S) -> T:
        """Run ``coroutine`` on the plugin's loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def call_tool(self, name: str, arguments: dict[str, Any] | None = None, **options: Any) -> dict[str, Any]:
        return self.run(self.harness.call_tool(name, arguments, **options))

    def call_stage(self, stage: str, view: dict[str, Any], timeout: float = 30) -> Any:
        return self.run(self.harness.call_stage(stage, view, timeout))

    def call_facility(self, facility: str, method: str, /, **params: Any) -> Any:
        return self.run(self.harness.call_facility(facility, method, **params))

    @property
    def tools(self) -> dict[str, dict[str, Any]]:
        return self.harness.tools

    @property
    def pid(self) -> int | None:
        return self.harness.plugin.pid

    def __enter__(self) -> RunningPlugin:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop the plugin as the kernel does (shutdown, then signals) and the loop with it."""
        if self.loop.is_closed():
            return
        try:
            self.run(self.harness.stop())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join()
            self.loop.close()
            self._log.__exit__(None, None, None)


def source_env(manifest: Path) -> dict[str, str] | None:
    """The environment that runs a repository's ``run.module`` plugin from its source: its package's directory
    first on PYTHONPATH (as `hologram check` imports it); None for a plugin that needs nothing."""
    import os

    from hologram.testing.conformance import source_root

    root = source_root(load_manifest(manifest).manifest, manifest)
    if root is None:
        return None
    return {"PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))}
