"""The conformance run: a plugin started from its manifest as a real process under the kernel's supervisor, and
checked the way the kernel will use it.

In order: the manifest (what `hologram check` says: valid, tool schemas agreeing with the Python signatures, the
config schema current); the handshake (an `initialize` answer in protocol 1, hooks for the stages the manifest
declares); readiness (every provided facility announced within ``start.timeout_s``); each tool called with
arguments its schema accepts (a well-formed result, not an exception) and with arguments it refuses (a tool
error, not a crash); each declared stage hook called with a realistic view (its answer only sets what the stage
accepts: the kernel's own `StageContext.apply` judges it); nothing but protocol messages on stdout; a clean exit
within the shutdown grace; no process left behind. A problem does not stop the run where later checks still
mean something, so one run lists them all.

The supervisor is the kernel's own (`hologram.supervisor`, as `PluginHarness` uses it): same spawn (the zygote
for ``run.module``), same handshake, same readiness rules, same stop sequence; facilities the plugin requires
are served by the harness's kernel node (stub their methods with ``provide=``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from hologram.base.errors import HologramError
from hologram.manifest import Manifest, load_manifest
from hologram.sdk.testing import PluginHarness
from hologram.supervisor import ManagedPlugin
from hologram.testing import calls, processes
from hologram.testing.ending import check_leftovers, check_shutdown, check_stdout
from hologram.testing.logs import LogCapture
from hologram.testing.report import Report
from hologram.testing.startup import check_handshake, explain_start_failure

DEFAULT_TOOL_TIMEOUT_S = 30.0


@dataclass
class Options:
    """What an author may tell a run; every field is optional.

    ``config``: values over the manifest's ``[config]``. ``examples``: tool → a list of argument objects to call it
    with instead of generated ones (a schema with a ``pattern`` the generator cannot satisfy). ``skip_tools``: tools
    not to call, as tool → why (or just their names), e.g. one that sends mail. ``provide``: stubs of the
    facilities the plugin requires (facility → {method: function}). ``tool_timeout_s``: how long one tool call
    may take."""

    config: dict[str, Any] | None = None
    examples: Mapping[str, list[dict[str, Any]]] | None = None
    skip_tools: Mapping[str, str] | Iterable[str] | None = None
    provide: dict[str, dict[str, Callable[..., Any]]] | None = None
    tool_timeout_s: float = DEFAULT_TOOL_TIMEOUT_S

    def skipped(self) -> dict[str, str]:
        """Tool → why it is not called."""
        if isinstance(self.skip_tools, Mapping):
            return dict(self.skip_tools)
        return {name: "skipped by the test" for name in self.skip_tools or ()}


def source_root(manifest: Manifest, path: Path) -> Path | None:
    """Where a ``run.module`` plugin's package is, when its manifest sits in the package (``src/pkg/plugin.toml``)
    or beside it: put on the plugin's ``PYTHONPATH``, so a repository's tests run its plugin from source, installed
    or not (as `hologram check` does)."""
    module = manifest.plugin.run.module
    if module is None:
        return None
    top = module.split(".")[0]
    for root in (path.parent.parent, path.parent, path.parent / "src"):
        if (root / top).is_dir() or (root / f"{top}.py").is_file():
            return root.resolve()
    return None


class Run:
    """One conformance run of one plugin; `execute` fills `report`."""

    def __init__(self, manifest_path: Path, options: Options) -> None:
        self.path = manifest_path
        self.options = options
        self.report = Report("?", manifest_path)
        self.harness: PluginHarness | None = None
        self.log: LogCapture | None = None
        self.valid_calls: list[tuple[str, dict[str, Any], dict[str, Any], int]] = []  # tool, args, result, log mark
        self.tools_checked: list[str] = []  # tools whose calls found nothing (so far: see `raised_in_valid_calls`)

    # -- the phases --------------------------------------------------------------------------------------

    async def execute(self) -> Report:
        manifest = self._manifest()
        if manifest is None:
            return self.report
        self.report.plugin = manifest.plugin.name
        self._lint(manifest)
        from hologram.testing.running import source_env

        env = source_env(self.path)
        try:
            self.harness = PluginHarness.from_manifest(
                self.path, config=self.options.config, provide=self.options.provide, env=env
            )
        except HologramError as exc:  # pragma: no cover - the manifest loaded a moment ago
            self.report.problem("manifest", "the manifest could not be loaded", did_say=exc.render())
            return self.report
        with LogCapture(manifest.plugin.name) as self.log:
            try:
                await self._run(manifest)
            finally:
                await self._stop()
        return self.report

    def _manifest(self) -> Manifest | None:
        try:
            return load_manifest(self.path).manifest
        except HologramError as exc:
            self.report.plugin = _declared_name(self.path)
            self.report.problem(
                "manifest",
                "the manifest is not valid, so the kernel would refuse it at `hologram build`",
                hologram_says=exc.render(),
                fix="fix each problem above (`hologram check .` shows the same in CI)",
            )
            self.report.skipped.append("everything else: the plugin cannot be started from an invalid manifest")
            return None

    def _lint(self, manifest: Manifest) -> None:
        from hologram.plan.check import check

        lint = check(self.path)
        for problem in lint.errors:
            self.report.problem(
                "manifest",
                problem.message,
                hologram_check=replace(problem, hint=None).render(),
                fix=problem.hint or "see `hologram check .`",
            )
        self.report.notes.extend(problem.render().replace("error:", "warning:", 1) for problem in lint.warnings)
        if not lint.errors:
            python = manifest.plugin.run.module or manifest.plugin.run.inproc
            agree = ", tool schemas agree with the handlers" if python else ""
            self.report.passed.append(f"manifest (hologram check: valid{agree})")

    async def _run(self, manifest: Manifest) -> None:
        assert self.harness is not None
        if not await self._start(manifest):
            return
        check_handshake(self, manifest)
        if await calls.tools(self) and self.alive():
            await calls.stages(self, manifest)

    async def _start(self, manifest: Manifest) -> bool:
        assert self.harness is not None and self.log is not None
        started = time.monotonic()
        try:
            await self.harness.start()
        except RuntimeError:
            explain_start_failure(self, manifest)
            self.report.skipped.append("tools and stages: the plugin did not start")
            return False
        plugin = self.harness.plugin
        ready = ", ".join(sorted(plugin.ready_facilities)) or "nothing to provide: ready at its initialize answer"
        self.report.passed.append(
            f"readiness ({ready}; {time.monotonic() - started:.1f} s of {manifest.start.timeout_s:g} s)"
        )
        return True

    async def settle(self, bound_s: float = 10.0) -> None:
        """After the connection closed: until the supervisor has seen the process end (its exit is reaped a moment
        after its pipes close), so the report says how it ended. ``bound_s`` is a failure bound only."""
        assert self.harness is not None
        plugin = self.harness.plugin
        if not self.alive():
            return
        gone = asyncio.Event()

        def on_change(changed: ManagedPlugin) -> None:
            if changed is plugin and (changed.runtime is None or not changed.state.running):
                gone.set()

        self.harness.supervisor.listeners.append(on_change)
        try:
            await asyncio.wait_for(gone.wait(), bound_s)
        except asyncio.TimeoutError:
            pass
        finally:
            self.harness.supervisor.listeners.remove(on_change)

    # -- the end ----------------------------------------------------------------------------------------------

    async def _stop(self) -> None:
        """Stop as the kernel does; then stdout, the shutdown, and the processes it started."""
        harness, log = self.harness, self.log
        assert harness is not None and log is not None
        plugin = harness.plugin
        pid = plugin.pid if plugin.runtime is not None and plugin.runtime.process is not None else None
        started = processes.started_by(pid) if pid is not None else []
        was_running = plugin.state.running
        began = time.monotonic()
        await harness.stop()
        took = time.monotonic() - began
        calls.raised_in_valid_calls(self)
        check_stdout(self, plugin)
        if was_running:
            check_shutdown(self, plugin, took)
        if pid is not None:
            check_leftovers(self, started, pid)

    # -- helpers ----------------------------------------------------------------------------------------------

    def alive(self) -> bool:
        assert self.harness is not None
        plugin = self.harness.plugin
        return plugin.runtime is not None and plugin.state.running

    def died(self, doing: str, sent: str, mark: int) -> None:
        assert self.harness is not None and self.log is not None
        plugin = self.harness.plugin
        self.report.problem(
            "tools" if "stage" not in doing else "stages",
            f"its process ended while the kit was {doing}",
            the_kit_sent=sent,
            kernel=plugin.exit_description or plugin.reason or plugin.state.value,
            its_log=self.log.tail(mark),
            fix="a plugin must survive any call: catch the error and answer it (a tool: "
            '{"content": "error: …", "is_error": true}); a crash detaches its tools and hooks until it restarts',
        )
        self.report.skipped.append("the checks after that call: the plugin was gone")


def _declared_name(path: Path) -> str:
    """The plugin's name as its (invalid) manifest writes it, for the report's heading; else the file's name."""
    import tomli

    try:
        name = tomli.loads(path.read_text(encoding="utf-8"))["plugin"]["name"]
    except (OSError, UnicodeDecodeError, tomli.TOMLDecodeError, KeyError, TypeError):
        return path.name
    return str(name)


async def check_conformance_async(manifest: str | Path, **options: Any) -> Report:
    """`check_conformance` in a running event loop (the same keywords)."""
    return await Run(Path(manifest), Options(**options)).execute()


def check_conformance(manifest: str | Path, **options: Any) -> Report:
    """Run every conformance check on the plugin of ``manifest`` and return the report (``report.ok``,
    ``report.render()``); the pytest fixture ``hologram_conformance`` fails the test with it. The keywords are
    the fields of `Options`: ``config``, ``examples``, ``skip_tools``, ``provide``, ``tool_timeout_s``."""
    return asyncio.run(check_conformance_async(manifest, **options))
