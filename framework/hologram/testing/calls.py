"""The tools and stages checks of a conformance run: each tool called with arguments its schema accepts and with
arguments it refuses, each declared stage hook called with a realistic view of its stage.

A tool's valid call must get a well-formed result (``{"content": str, "is_error"?: bool, "blob"?}``) and must not
raise (the SDK logs ``tool X failed`` with the traceback; a JSON-RPC error or the process ending is worse); an
invalid call must get an error result or a JSON-RPC ``-32602``/``-32000``, not a crash and not a success. A hook's
answer is judged by the kernel's own `StageContext.apply`, so the kit accepts exactly what a turn accepts.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, NamedTuple

from hologram.base import protocol
from hologram.rpc import APPLICATION_ERROR, INVALID_PARAMS, ConnectionClosed, RequestTimeout, RpcError
from hologram.testing.arguments import CannotGenerate, invalid_arguments, valid_arguments
from hologram.testing.logs import LOG_TAIL
from hologram.testing.report import excerpt

if TYPE_CHECKING:
    from hologram.manifest import Manifest
    from hologram.testing.conformance import Run


class Attempt(NamedTuple):
    """One tool call as the kit saw it: the result (or None), what went wrong instead, what was sent, the log's mark."""

    result: Any
    failed: str | None
    sent: str
    mark: int


_SDK_TOOL_FAILED = re.compile(r"hologram\.sdk: (?P<plugin>\S+): tool (?P<tool>\S+) failed")


async def tools(run: Run) -> bool:
    """Every tool: its valid calls, then its invalid ones. False when the plugin is gone."""
    assert run.harness is not None
    skip = run.options.skipped()
    examples = dict(run.options.examples or {})
    for name, tool in sorted(run.harness.tools.items()):
        if name in skip:
            run.report.skipped.append(f"tool {name} ({skip[name]})")
            continue
        schema = tool.get("parameters") or {"type": "object"}
        try:
            valid = [dict(e) for e in examples[name]] if name in examples else valid_arguments(schema)
        except CannotGenerate as exc:
            run.report.problem(
                "tools",
                f"the kit could not make a call of {name} that its schema accepts",
                generator=str(exc),
                fix=f"give the schema an `examples` list of valid arguments, or pass "
                f'hologram_conformance(examples={{"{name}": [{{...}}]}})',
            )
            continue
        before = len(run.report.findings)
        for arguments in valid:
            if not await valid_call(run, name, arguments):
                return False
        for invalid in invalid_arguments(schema, valid[-1]) if valid else []:
            if not await invalid_call(run, name, invalid.arguments, invalid.broken):
                return False
        if len(run.report.findings) == before:
            run.tools_checked.append(name)
    return True


async def call(run: Run, name: str, arguments: dict[str, Any]) -> tuple[Any, str | None]:
    """(the result, None) or (None, what went wrong instead)."""
    assert run.harness is not None
    try:
        return await run.harness.call_tool(name, arguments, timeout=run.options.tool_timeout_s), None
    except RequestTimeout:
        return None, f"no answer within {run.options.tool_timeout_s:g} s"
    except RpcError as exc:
        return None, f"a JSON-RPC error {exc.code}: {exc.message}"
    except (ConnectionClosed, RuntimeError) as exc:
        await run.settle()
        return None, f"the connection closed ({exc})"


async def attempt(run: Run, name: str, arguments: dict[str, Any], note: str, doing: str) -> Attempt | None:
    """Call the tool; None (the plugin's end reported) when its process did not survive the call."""
    assert run.log is not None
    mark = len(run.log.lines)
    result, failed = await call(run, name, arguments)
    sent = f"tool/invoke {name} {excerpt(arguments)}{note}"
    if not run.alive():
        run.died(doing, sent, mark)
        return None
    return Attempt(result, failed, sent, mark)


async def valid_call(run: Run, name: str, arguments: dict[str, Any]) -> bool:
    assert run.log is not None
    done = await attempt(run, name, arguments, "", f"calling {name}")
    if done is None:
        return False
    result, failed, sent, mark = done
    if failed is not None:
        run.report.problem(
            "tools",
            f"{name} did not answer a call its schema accepts with a result",
            the_kit_sent=sent,
            instead=failed,
            its_log=run.log.tail(mark),
            fix='answer every tool/invoke with {"content": str} (or {"content": str, "is_error": true} for a '
            "failure the model should read); a JSON-RPC error means the handler crashed",
        )
        return True
    shape = _result_problem(result)
    if shape is not None:
        run.report.problem(
            "tools",
            f"{name} answered with a malformed result: {shape}",
            the_kit_sent=sent,
            the_plugin_answered=excerpt(result),
            fix='a tool result is {"content": "text for the model", "is_error"?: bool, "blob"?: {...}} '
            "(docs/protocol.md, section 7)",
        )
        return True
    run.valid_calls.append((name, arguments, result, mark))
    return True


async def invalid_call(run: Run, name: str, arguments: dict[str, Any], broken: str) -> bool:
    assert run.log is not None
    done = await attempt(run, name, arguments, f" ({broken})", f"calling {name} with arguments its schema refuses")
    if done is None:
        return False
    result, failed, sent, mark = done
    refused = failed is not None and any(f"error {code}:" in failed for code in (INVALID_PARAMS, APPLICATION_ERROR))
    if failed is not None and not refused:
        run.report.problem(
            "tools",
            f"{name} crashed on arguments its schema refuses instead of answering a tool error",
            the_kit_sent=sent,
            instead=failed,
            its_log=run.log.tail(mark),
            fix='check the arguments and answer {"content": "error: …", "is_error": true}; the kernel '
            "validates calls against the schema, but a plugin must not trust what reaches it",
        )
    elif failed is None and not (isinstance(result, dict) and result.get("is_error") is True):
        run.report.problem(
            "tools",
            f"{name} accepted arguments its schema refuses",
            the_kit_sent=sent,
            the_plugin_answered=excerpt(result),
            fix='refuse them with {"content": "error: …", "is_error": true}. With the SDK, make the '
            "function's parameters and annotations agree with the schema (names, required, types): the SDK "
            "refuses what they do not accept",
        )
    return True


def raised_in_valid_calls(run: Run) -> None:
    """A valid call answered with an error whose tool logged an exception (the SDK's ``tool X failed``).

    Judged once the plugin has stopped: its stderr is a pipe of its own, read beside the protocol channel, so
    the log lines of a call may arrive after its answer; by the end of the run they have been read."""
    assert run.log is not None
    raised = set()
    for name, arguments, result, mark in run.valid_calls:
        if not result.get("is_error"):
            continue
        lines = run.log.lines[mark:]
        index = next((i for i, line in enumerate(lines) if _raised(line, name)), None)
        if index is None or name in raised:
            continue
        raised.add(name)
        run.report.problem(
            "tools",
            f"{name} raised an exception on a call its schema accepts",
            the_kit_sent=f"tool/invoke {name} {excerpt(arguments)}",
            the_plugin_answered=excerpt(result),
            its_log="\n".join(lines[index : index + LOG_TAIL]),
            fix='an exception escaped the tool: handle that case, and return tool_error("…") (SDK) for a '
            "failure the model should read and act on",
        )
    checked = [name for name in run.tools_checked if name not in raised]
    if checked:
        run.report.passed.append(f"tools ({', '.join(checked)}: valid calls answered, invalid ones refused)")


async def stages(run: Run, manifest: Manifest) -> None:
    from hologram.stages.context import StageContext

    assert run.harness is not None and run.log is not None
    hooked = manifest.stages.hooked()
    good = []
    for stage, hook in sorted(hooked.items(), key=lambda item: protocol.STAGE_NAMES.index(item[0])):
        context = sample_context(run)
        view = context.view(stage)
        mark = len(run.log.lines)
        sent = f"stage/invoke {stage} {excerpt(view)}"
        try:
            answer = await run.harness.call_stage(stage, view, timeout=hook.timeout_s)
        except RequestTimeout:
            run.report.problem(
                "stages",
                f"its {stage} hook did not answer within its timeout_s = {hook.timeout_s:g} s",
                the_kit_sent=sent,
                fix="a slow hook is skipped on every turn: make it quick, or async / blocking=True (SDK)",
            )
            continue
        except (RpcError, ConnectionClosed, RuntimeError) as exc:
            if isinstance(exc, (ConnectionClosed, RuntimeError)):
                await run.settle()
            if not run.alive():
                run.died(f"calling its {stage} hook", sent, mark)
                return
            run.report.problem(
                "stages",
                f"its {stage} hook failed instead of answering",
                the_kit_sent=sent,
                instead=str(exc),
                its_log=run.log.tail(mark),
                fix="return None (no change) or a dict of the changes the stage accepts (docs/agent.md, "
                "'Stage hooks'); an exception in a hook is recorded in the turn's errors on every turn",
            )
            continue
        judged = StageContext("conformance-session", "conformance-turn")
        judged.apply(stage, manifest.plugin.name, answer)
        if judged.errors:
            run.report.problem(
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
        good.append(f"{stage} {_what_changed(answer)}")
    if good:
        run.report.passed.append(
            f"stages (answers the stage accepts, to the kit's sample view: {', '.join(good)}; a hook's other "
            "cases are yours to test with call_stage)"
        )


def _what_changed(answer: Any) -> str:
    """A hook's accepted answer in a few words, so the report shows whether the sample view took it past its
    pass-through (issue 36's reader could not tell whether the kit had exercised the branch they wrote)."""
    if not answer:
        return "→ no change"
    return "→ " + ", ".join(sorted(str(key) for key in answer))


def sample_context(run: Run) -> Any:
    """A turn as a stage hook would see it mid-way: an input, a system prompt, a model step that calls one
    of this plugin's tools, its result, an answer."""
    from hologram.stages.context import StageContext

    assert run.harness is not None
    tool = next(iter(sorted(run.harness.tools)), "example_tool")
    arguments: dict[str, Any] = {}
    for name, args, _result, _mark in run.valid_calls:
        if name == tool:
            arguments = args
            break
    call = {"id": "call_conformance_1", "name": tool, "plugin": run.harness.spec.name, "arguments": arguments}
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
