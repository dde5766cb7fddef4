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
import logging
import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from hologram.base import protocol
from hologram.base.errors import HologramError
from hologram.manifest import Manifest, load_manifest
from hologram.rpc import APPLICATION_ERROR, INVALID_PARAMS, ConnectionClosed, RequestTimeout, RpcError
from hologram.sdk.testing import PluginHarness
from hologram.supervisor import ManagedPlugin
from hologram.supervisor.managed import SHUTDOWN_GRACE_S
from hologram.testing import processes
from hologram.testing.arguments import CannotGenerate, invalid_arguments, valid_arguments
from hologram.testing.report import Report, excerpt

DEFAULT_TOOL_TIMEOUT_S = 30.0
LOG_TAIL = 12  # lines of the plugin's log shown with a problem
_SDK_TOOL_FAILED = re.compile(r"hologram\.sdk: (?P<plugin>\S+): tool (?P<tool>\S+) failed")


@dataclass
class Options:
    """What an author may tell the run (all optional; `check_conformance` documents each)."""

    config: dict[str, Any] | None = None
    examples: Mapping[str, list[dict[str, Any]]] | None = None
    skip_tools: Mapping[str, str] | None = None
    provide: dict[str, dict[str, Callable[..., Any]]] | None = None
    tool_timeout_s: float = DEFAULT_TOOL_TIMEOUT_S


class LogCapture(logging.Handler):
    """The plugin's stderr (the supervisor logs each line as ``hologram.plugin.NAME``) and the supervisor's own
    warnings about it, in arrival order."""

    def __init__(self, plugin: str) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []
        self._loggers = [logging.getLogger(f"hologram.plugin.{plugin}"), logging.getLogger("hologram.supervisor")]
        self._levels = [logger.level for logger in self._loggers]
        self._prefix = f"[{plugin}] "

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if record.name.startswith("hologram.supervisor") and self._prefix not in message:
            return  # about another process (the zygote, another plugin)
        self.lines.append(message.removeprefix(self._prefix))

    def __enter__(self) -> LogCapture:
        for logger in self._loggers:
            logger.addHandler(self)
            if logger.getEffectiveLevel() > logging.INFO:
                logger.setLevel(logging.INFO)
        return self

    def __exit__(self, *exc: object) -> None:
        for logger, level in zip(self._loggers, self._levels, strict=True):
            logger.removeHandler(self)
            logger.setLevel(level)

    def tail(self, start: int = 0, count: int = LOG_TAIL) -> str:
        lines = self.lines[start:]
        return "\n".join(lines[-count:]) if lines else "(nothing)"


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
        self.tools_checked: list[str] = []  # tools whose calls found nothing (so far: see `_raised_in_valid_calls`)

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
        self._handshake(manifest)
        if await self._tools() and self._alive():
            await self._stages(manifest)

    async def _start(self, manifest: Manifest) -> bool:
        assert self.harness is not None and self.log is not None
        started = time.monotonic()
        try:
            await self.harness.start()
        except RuntimeError:
            self._start_failed(manifest)
            self.report.skipped.append("tools and stages: the plugin did not start")
            return False
        plugin = self.harness.plugin
        ready = ", ".join(sorted(plugin.ready_facilities)) or "nothing to provide: ready at its initialize answer"
        self.report.passed.append(
            f"readiness ({ready}; {time.monotonic() - started:.1f} s of {manifest.start.timeout_s:g} s)"
        )
        return True

    def _start_failed(self, manifest: Manifest) -> None:
        assert self.harness is not None and self.log is not None
        plugin = self.harness.plugin
        answer, log = plugin.handshake, self.log.tail()
        reason = re.sub(r"; restarting in [\d.]+ s$", "", plugin.reason)  # the harness stops it, it is not restarted
        timeout = manifest.start.timeout_s
        if answer is not None and answer.get("protocol") != protocol.PROTOCOL_VERSION:
            self.report.problem(
                "handshake",
                f"it answered initialize with protocol {answer.get('protocol')!r}; this kernel speaks "
                f"{protocol.PROTOCOL_VERSION}",
                the_plugin_answered=excerpt(answer),
                fix=f'answer initialize with "protocol": {protocol.PROTOCOL_VERSION} (docs/protocol.md, section 6); '
                "with the SDK, install matching versions of hologram and the plugin",
            )
        elif answer is None and "no answer to initialize" in reason:
            self.report.problem(
                "handshake",
                f"it never answered the initialize request within start.timeout_s = {timeout:g} s",
                kernel=reason,
                its_log=log,
                fix="read one JSON object per line on stdin and answer "
                '{"jsonrpc": "2.0", "id": <the request\'s id>, "result": {"protocol": 1, ...}} on stdout '
                "(docs/protocol.md, sections 1 and 6); with the SDK, make sure the module calls plugin.run()",
            )
        elif answer is None and plugin.exit_description:
            self.report.problem(
                "handshake",
                "its process ended before it answered initialize",
                kernel=reason,
                its_log=log,
                fix="run the plugin's command by hand to see the error; a Python plugin that is not importable needs "
                "`pip install -e .` (or its src/ on PYTHONPATH)",
            )
        elif answer is None:
            self.report.problem(
                "handshake",
                "it answered initialize with an error",
                kernel=reason,
                its_log=log,
                fix="a configuration the plugin's model refuses: make the manifest's [config] agree with the model "
                "(`hologram check .` names the line); a failing start (state= or on_start): see its log",
            )
        elif "never announced" in reason or not plugin.exit_description:
            missing = sorted(set(self.harness.spec.provides) - plugin.ready_facilities) or ["NAME"]
            self.report.problem(
                "readiness",
                f"it answered initialize but never announced {', '.join(missing)} within start.timeout_s = "
                f"{timeout:g} s",
                kernel=reason,
                its_log=log,
                fix=f'send {{"jsonrpc": "2.0", "method": "facility/ready", "params": {{"facility": "{missing[0]}"}}}} '
                "once it can serve (docs/protocol.md, section 6); with the SDK this happens when on_start returns, "
                f'unless plugin.auto_ready = False: then call `await plugin.ready("{missing[0]}")`',
            )
        else:
            self.report.problem(
                "readiness",
                "its process ended after initialize, before every facility was ready",
                kernel=reason,
                its_log=log,
                fix="see the log above: start code that fails after the handshake ends the plugin",
            )

    def _handshake(self, manifest: Manifest) -> None:
        assert self.harness is not None
        answer = self.harness.plugin.handshake or {}
        problems = 0
        declared = set(manifest.stages.hooked())
        listed = answer.get("stages") or []
        if not isinstance(listed, list):
            listed = []
        for stage in sorted(declared - set(listed)):
            problems += 1
            self.report.problem(
                "handshake",
                f"the manifest hooks {stage!r} in [stages], but its initialize answer does not list a hook for it",
                the_plugin_answered=f"stages = {excerpt(listed)}",
                fix=f'define the hook (SDK: @plugin.stage("{stage}")) or remove {stage} from [stages]: the kernel '
                "calls every declared hook on every turn and would get 'method not found'",
            )
        for stage in sorted(set(map(str, listed)) - declared):
            problems += 1
            unknown = stage not in protocol.STAGE_NAMES
            self.report.problem(
                "handshake",
                f"it has a hook for {stage!r}, which "
                + ("is not a stage" if unknown else "the manifest does not declare in [stages]: it is never called"),
                the_plugin_answered=f"stages = {excerpt(listed)}",
                fix=f"stages are {', '.join(protocol.STAGE_NAMES)}"
                if unknown
                else f"add `{stage} = {{ order = 100 }}` under [stages] in the manifest, or remove the hook",
            )
        tools = answer.get("tools") or []
        for tool in tools if isinstance(tools, list) else [tools]:
            if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
                problems += 1
                self.report.problem(
                    "handshake",
                    "its initialize answer lists a tool that is not an object with a name",
                    the_plugin_answered=f"tools = {excerpt(tools)}",
                    fix='each tool is {"name", "description", "parameters" (a JSON Schema of type object)} '
                    "(docs/protocol.md, section 7)",
                )
        if not problems:
            sdk = answer.get("sdk")
            self.report.passed.append(f"handshake (protocol {protocol.PROTOCOL_VERSION}{f', {sdk}' if sdk else ''})")

    async def _tools(self) -> bool:
        """Every tool: its valid calls, then its invalid ones. False when the plugin is gone."""
        assert self.harness is not None
        skip = dict(self.options.skip_tools or {})
        examples = dict(self.options.examples or {})
        for name, tool in sorted(self.harness.tools.items()):
            if name in skip:
                self.report.skipped.append(f"tool {name} ({skip[name]})")
                continue
            schema = tool.get("parameters") or {"type": "object"}
            try:
                valid = [dict(e) for e in examples[name]] if name in examples else valid_arguments(schema)
            except CannotGenerate as exc:
                self.report.problem(
                    "tools",
                    f"the kit could not make a call of {name} that its schema accepts",
                    generator=str(exc),
                    fix=f"give the schema an `examples` list of valid arguments, or pass "
                    f'hologram_conformance(examples={{"{name}": [{{...}}]}})',
                )
                continue
            before = len(self.report.findings)
            for arguments in valid:
                if not await self._valid_call(name, arguments):
                    return False
            for invalid in invalid_arguments(schema, valid[-1]) if valid else []:
                if not await self._invalid_call(name, invalid.arguments, invalid.broken):
                    return False
            if len(self.report.findings) == before:
                self.tools_checked.append(name)
        return True

    async def _call(self, name: str, arguments: dict[str, Any]) -> tuple[Any, str | None]:
        """(the result, None) or (None, what went wrong instead)."""
        assert self.harness is not None
        try:
            return await self.harness.call_tool(name, arguments, timeout=self.options.tool_timeout_s), None
        except RequestTimeout:
            return None, f"no answer within {self.options.tool_timeout_s:g} s"
        except RpcError as exc:
            return None, f"a JSON-RPC error {exc.code}: {exc.message}"
        except (ConnectionClosed, RuntimeError) as exc:
            await self._settle()
            return None, f"the connection closed ({exc})"

    async def _settle(self, bound_s: float = 10.0) -> None:
        """After the connection closed: until the supervisor has seen the process end (its exit is reaped a moment
        after its pipes close), so the report says how it ended. ``bound_s`` is a failure bound only."""
        assert self.harness is not None
        plugin = self.harness.plugin
        if not self._alive():
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

    async def _valid_call(self, name: str, arguments: dict[str, Any]) -> bool:
        assert self.log is not None
        mark = len(self.log.lines)
        result, failed = await self._call(name, arguments)
        sent = f"tool/invoke {name} {excerpt(arguments)}"
        if not self._alive():
            self._died(f"calling {name}", sent, mark)
            return False
        if failed is not None:
            self.report.problem(
                "tools",
                f"{name} did not answer a call its schema accepts with a result",
                the_kit_sent=sent,
                instead=failed,
                its_log=self.log.tail(mark),
                fix='answer every tool/invoke with {"content": str} (or {"content": str, "is_error": true} for a '
                "failure the model should read); a JSON-RPC error means the handler crashed",
            )
            return True
        shape = _result_problem(result)
        if shape is not None:
            self.report.problem(
                "tools",
                f"{name} answered with a malformed result: {shape}",
                the_kit_sent=sent,
                the_plugin_answered=excerpt(result),
                fix='a tool result is {"content": "text for the model", "is_error"?: bool, "blob"?: {...}} '
                "(docs/protocol.md, section 7)",
            )
            return True
        self.valid_calls.append((name, arguments, result, mark))
        return True

    async def _invalid_call(self, name: str, arguments: dict[str, Any], broken: str) -> bool:
        assert self.log is not None
        mark = len(self.log.lines)
        result, failed = await self._call(name, arguments)
        sent = f"tool/invoke {name} {excerpt(arguments)} ({broken})"
        if not self._alive():
            self._died(f"calling {name} with arguments its schema refuses", sent, mark)
            return False
        refused = failed is not None and any(f"error {code}:" in failed for code in (INVALID_PARAMS, APPLICATION_ERROR))
        if failed is not None and not refused:
            self.report.problem(
                "tools",
                f"{name} crashed on arguments its schema refuses instead of answering a tool error",
                the_kit_sent=sent,
                instead=failed,
                its_log=self.log.tail(mark),
                fix='check the arguments and answer {"content": "error: …", "is_error": true}; the kernel '
                "validates calls against the schema, but a plugin must not trust what reaches it",
            )
        elif failed is None and not (isinstance(result, dict) and result.get("is_error") is True):
            self.report.problem(
                "tools",
                f"{name} accepted arguments its schema refuses",
                the_kit_sent=sent,
                the_plugin_answered=excerpt(result),
                fix='refuse them with {"content": "error: …", "is_error": true}. With the SDK, make the '
                "function's parameters and annotations agree with the schema (names, required, types): the SDK "
                "refuses what they do not accept",
            )
        return True

    def _raised_in_valid_calls(self) -> None:
        """A valid call answered with an error whose tool logged an exception (the SDK's ``tool X failed``).

        Judged once the plugin has stopped: its stderr is a pipe of its own, read beside the protocol channel, so
        the log lines of a call may arrive after its answer; by the end of the run they have been read."""
        assert self.log is not None
        raised = set()
        for name, arguments, result, mark in self.valid_calls:
            if not result.get("is_error"):
                continue
            lines = self.log.lines[mark:]
            index = next((i for i, line in enumerate(lines) if _raised(line, name)), None)
            if index is None or name in raised:
                continue
            raised.add(name)
            self.report.problem(
                "tools",
                f"{name} raised an exception on a call its schema accepts",
                the_kit_sent=f"tool/invoke {name} {excerpt(arguments)}",
                the_plugin_answered=excerpt(result),
                its_log="\n".join(lines[index : index + LOG_TAIL]),
                fix='an exception escaped the tool: handle that case, and return tool_error("…") (SDK) for a '
                "failure the model should read and act on",
            )
        checked = [name for name in self.tools_checked if name not in raised]
        if checked:
            self.report.passed.append(f"tools ({', '.join(checked)}: valid calls answered, invalid ones refused)")

    async def _stages(self, manifest: Manifest) -> None:
        from hologram.stages.context import StageContext

        assert self.harness is not None and self.log is not None
        hooked = manifest.stages.hooked()
        good = []
        for stage, hook in sorted(hooked.items(), key=lambda item: protocol.STAGE_NAMES.index(item[0])):
            context = self._sample_context()
            view = context.view(stage)
            mark = len(self.log.lines)
            sent = f"stage/invoke {stage} {excerpt(view)}"
            try:
                answer = await self.harness.call_stage(stage, view, timeout=hook.timeout_s)
            except RequestTimeout:
                self.report.problem(
                    "stages",
                    f"its {stage} hook did not answer within its timeout_s = {hook.timeout_s:g} s",
                    the_kit_sent=sent,
                    fix="a slow hook is skipped on every turn: make it quick, or async / blocking=True (SDK)",
                )
                continue
            except (RpcError, ConnectionClosed, RuntimeError) as exc:
                if isinstance(exc, (ConnectionClosed, RuntimeError)):
                    await self._settle()
                if not self._alive():
                    self._died(f"calling its {stage} hook", sent, mark)
                    return
                self.report.problem(
                    "stages",
                    f"its {stage} hook failed instead of answering",
                    the_kit_sent=sent,
                    instead=str(exc),
                    its_log=self.log.tail(mark),
                    fix="return None (no change) or a dict of the changes the stage accepts (docs/agent.md, "
                    "'Stage hooks'); an exception in a hook is recorded in the turn's errors on every turn",
                )
                continue
            judged = StageContext("conformance-session", "conformance-turn")
            judged.apply(stage, manifest.plugin.name, answer)
            if judged.errors:
                self.report.problem(
                    "stages",
                    f"its {stage} hook answered something the stage does not accept",
                    the_kit_sent=sent,
                    the_plugin_answered=excerpt(answer),
                    kernel=" ; ".join(str(e["error"]) for e in judged.errors),
                    fix="use the stage's typed view (SDK: annotate the hook's parameter, e.g. "
                    "`view: BeforeOutputView`, and return view.rewrite(...)), or return only the keys docs/agent.md "
                    f"lists for {stage}",
                )
                continue
            good.append(stage)
        if good:
            self.report.passed.append(f"stages ({', '.join(good)}: answers the stage accepts)")

    def _sample_context(self) -> Any:
        """A turn as a stage hook would see it mid-way: an input, a system prompt, a model step that calls one
        of this plugin's tools, its result, an answer."""
        from hologram.stages.context import StageContext

        assert self.harness is not None
        tool = next(iter(sorted(self.harness.tools)), "example_tool")
        arguments: dict[str, Any] = {}
        for name, args, _result, _mark in self.valid_calls:
            if name == tool:
                arguments = args
                break
        call = {"id": "call_conformance_1", "name": tool, "plugin": self.harness.spec.name, "arguments": arguments}
        return StageContext(
            "conformance-session",
            "conformance-turn",
            channel="cli",
            client="hologram.testing",
            input="What is the weather in Oslo today?",
            system="You are a helpful assistant.",
            content="Let me look that up.",
            tool_calls=[call],
            tool_call=call,
            result={"content": "sunny, 21 °C", "is_error": False},
            output="It is sunny in Oslo today, 21 °C.",
        )

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
        self._raised_in_valid_calls()
        self._stdout(plugin)
        if was_running:
            self._shutdown(plugin, took)
        if pid is not None:
            self._leftovers(started, pid)

    def _stdout(self, plugin: ManagedPlugin) -> None:
        if not plugin.malformed_total:
            self.report.passed.append("stdout (only protocol messages)")
            return
        lines = "\n".join(f"{text!r} ({why})" for text, why in plugin.malformed_seen)
        self.report.problem(
            "stdout",
            f"it wrote {plugin.malformed_total} line(s) to stdout that are not protocol messages",
            the_plugin_wrote=lines,
            fix="stdout is the protocol channel: write logs to stderr (Python SDK: print() and logging already go "
            "there; a subprocess you start inherits stdout, so give it stdout=subprocess.DEVNULL or a pipe; "
            "Node: console.error, not console.log)",
        )

    def _shutdown(self, plugin: ManagedPlugin, took: float) -> None:
        if plugin.stopped_by == "shutdown":
            self.report.passed.append(f"shutdown (exited {took:.1f} s after the shutdown request)")
            return
        answered = "answered it, but did not exit" if plugin.shutdown_answered else "did not answer it"
        self.report.problem(
            "shutdown",
            f"it did not exit within {SHUTDOWN_GRACE_S:g} s of the shutdown request: the kernel had to send "
            f"{plugin.stopped_by or 'signals'}",
            the_plugin=f"{answered} ({plugin.exit_description or 'exit status unknown'})",
            fix="answer shutdown with {} and exit promptly (docs/protocol.md, section 6): stop your own threads, "
            "timers and servers (SDK: in an @plugin.on_stop hook; a non-daemon thread keeps the process alive)",
        )

    def _leftovers(self, started: list[processes.Proc], pid: int) -> None:
        left = processes.still_running(started, session=pid)
        if not left:
            self.report.passed.append("processes (nothing left running)")
            return
        processes.kill(left)
        self.report.problem(
            "processes",
            f"{len(left)} process(es) it started were still running after it stopped (the kit killed them)",
            left_running="\n".join(p.describe() for p in left),
            fix="stop what you start when the plugin stops (SDK: terminate and wait for it in @plugin.on_stop); the "
            "kernel kills the plugin's process group only when it has to signal the plugin",
        )

    # -- helpers ----------------------------------------------------------------------------------------------

    def _alive(self) -> bool:
        assert self.harness is not None
        plugin = self.harness.plugin
        return plugin.runtime is not None and plugin.state.running

    def _died(self, doing: str, sent: str, mark: int) -> None:
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


def _raised(line: str, tool: str) -> bool:
    match = _SDK_TOOL_FAILED.search(line)
    return match is not None and match["tool"] == tool


def _result_problem(result: Any) -> str | None:
    if not isinstance(result, dict):
        return f"a {type(result).__name__}, not an object"
    if "content" not in result:
        return "no 'content'"
    if not isinstance(result["content"], str):
        return f"'content' is a {type(result['content']).__name__}, not a string"
    if "is_error" in result and not isinstance(result["is_error"], bool):
        return "'is_error' is not a boolean"
    blob = result.get("blob")
    if blob is not None and not (isinstance(blob, dict) and ("ref" in blob or "base64" in blob)):
        return '\'blob\' is neither {"ref": …} nor {"base64": …}'
    return None


async def check_conformance_async(
    manifest: str | Path,
    *,
    config: dict[str, Any] | None = None,
    examples: Mapping[str, list[dict[str, Any]]] | None = None,
    skip_tools: Mapping[str, str] | Iterable[str] | None = None,
    provide: dict[str, dict[str, Callable[..., Any]]] | None = None,
    tool_timeout_s: float = DEFAULT_TOOL_TIMEOUT_S,
) -> Report:
    """`check_conformance` in a running event loop."""
    skip = skip_tools if isinstance(skip_tools, Mapping) else {n: "skipped by the test" for n in skip_tools or ()}
    options = Options(config, examples, skip, provide, tool_timeout_s)
    return await Run(Path(manifest), options).execute()


def check_conformance(
    manifest: str | Path,
    *,
    config: dict[str, Any] | None = None,
    examples: Mapping[str, list[dict[str, Any]]] | None = None,
    skip_tools: Mapping[str, str] | Iterable[str] | None = None,
    provide: dict[str, dict[str, Callable[..., Any]]] | None = None,
    tool_timeout_s: float = DEFAULT_TOOL_TIMEOUT_S,
) -> Report:
    """Run every conformance check on the plugin of ``manifest`` and return the report (``report.ok``,
    ``report.render()``); the pytest fixture ``hologram_conformance`` fails the test with it.

    ``config``: values over the manifest's ``[config]``. ``examples``: tool → a list of argument objects to call it
    with instead of generated ones (a schema with a ``pattern`` the generator cannot satisfy). ``skip_tools``: tools
    not to call (tool → why), e.g. one that sends mail. ``provide``: stubs of the facilities the plugin requires
    (facility → {method: function}). ``tool_timeout_s``: how long one tool call may take."""
    return asyncio.run(
        check_conformance_async(
            manifest,
            config=config,
            examples=examples,
            skip_tools=skip_tools,
            provide=provide,
            tool_timeout_s=tool_timeout_s,
        )
    )
