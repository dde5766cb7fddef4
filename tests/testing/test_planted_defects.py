"""The conformance kit catches planted defects, each with a reason a newcomer can act on.

Each test writes a small plugin repository with exactly one defect — or none — and runs its one-line
conformance test (``hologram_conformance()``) in a fresh pytest process (pytester), the way a plugin author's CI
runs it: the fixtures come from hologram's ``pytest11`` entry point, nothing here registers them. The run must
fail (or pass, for the good plugin) and the failure must say what the plugin did and how to fix it, without a
Python traceback of the kit.

Mutation checks (done, each turned the named test red): the stdout check passing always →
``test_junk_on_stdout``; the shutdown check accepting a SIGTERM → ``test_ignores_shutdown``; no process counted
as left → ``test_leaves_a_child_process_behind``; the log never searched for the SDK's "tool X failed" →
``test_a_tool_that_raises``.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow
pytest_plugins = ["pytester"]

MANIFEST = """\
[plugin]
name = "planted"
version = "0.1.0"
description = "a plugin with one planted defect"
run = {{ module = "defective" }}

[facilities]
provides = ["planted.echo"]

[start]
timeout_s = {timeout_s}

[stages]
before_output = {{ order = 50 }}

[[tools]]
name = "echo"
description = "Repeat a text"
parallel_safe = true
parameters = {parameters}
"""

PARAMETERS = (
    '{ type = "object", properties = { text = { type = "string", description = "the text" }, times = { type = '
    '"integer", minimum = 1, maximum = 3, description = "how often" } }, required = ["text"], '
    "additionalProperties = false }"
)

GOOD = """\
from hologram.sdk import BeforeOutputView, Change, Plugin

plugin = Plugin("planted")


@plugin.tool("echo")
def echo(text: str, times: int = 1) -> str:
    return " ".join([text] * times)


@plugin.stage("before_output")
def sign(view: BeforeOutputView) -> Change:
    return view.rewrite(view.output + " ~")
"""

CONFORMANCE_TEST = """\
def test_conformance(hologram_conformance):
    hologram_conformance()
"""


# a failure bound for a start (about 0.3 s here): generous, so a machine several times slower still starts in time
START_TIMEOUT_S = 20


def write_repo(
    pytester: pytest.Pytester, code: str, *, parameters: str = PARAMETERS, timeout_s: float = START_TIMEOUT_S
) -> Path:
    """A plugin repository as `hologram new plugin` lays one out: the manifest in the package, an entry point."""
    root = pytester.path
    package = root / "src" / "defective"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(textwrap.dedent(code), encoding="utf-8")
    (package / "__main__.py").write_text("from defective import plugin\n\nplugin.run()\n", encoding="utf-8")
    (package / "plugin.toml").write_text(MANIFEST.format(parameters=parameters, timeout_s=timeout_s), encoding="utf-8")
    (root / "pyproject.toml").write_text(
        '[project]\nname = "defective"\nversion = "0.1.0"\n\n'
        '[project.entry-points."hologram.plugins"]\nplanted = "defective"\n',
        encoding="utf-8",
    )
    (root / "tests").mkdir()
    (root / "tests" / "test_conformance.py").write_text(CONFORMANCE_TEST, encoding="utf-8")
    return root


def run_kit(pytester: pytest.Pytester, code: str, **options: Any) -> pytest.RunResult:
    write_repo(pytester, code, **options)
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", timeout=240)


def failed_with(result: pytest.RunResult, *lines: str) -> str:
    """The run failed its one test, printing each of `lines` (fnmatch patterns, in order), and no traceback of
    the kit itself (the message is the report, `pytrace=False`)."""
    output = result.stdout.str()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*hologram conformance: plugin 'planted'*", *lines])
    assert "hologram/testing/" not in output, output  # no frame of the kit: the report is the message
    return output


def test_the_good_plugin_passes(pytester: pytest.Pytester) -> None:
    result = run_kit(pytester, GOOD)
    result.assert_outcomes(passed=1)


def test_never_sends_ready(pytester: pytest.Pytester) -> None:
    code = GOOD + "\nplugin.auto_ready = False  # and nothing ever calls plugin.ready()\n"
    # the whole timeout is waited for here: 5 s, ~15 times what the initialize answer takes on this machine
    failed_with(
        run_kit(pytester, code, timeout_s=5),
        "*readiness: it answered initialize but never announced planted.echo within start.timeout_s = 5 s*",
        '*fix: send {"jsonrpc": "2.0", "method": "facility/ready", "params": {"facility": "planted.echo"}}*',
    )


def test_an_invalid_tool_schema(pytester: pytest.Pytester) -> None:
    broken = PARAMETERS.replace('type = "integer"', 'type = "int"')
    output = failed_with(
        run_kit(pytester, GOOD, parameters=broken),
        "*manifest: the manifest is not valid*",
        "*plugin.toml:*tools*parameters*",
        "*not checked: everything else*",
    )
    assert "'int' is not valid" in output or "'int'" in output, output


def test_a_schema_that_disagrees_with_the_signature(pytester: pytest.Pytester) -> None:
    code = GOOD.replace("def echo(text: str, times: int = 1)", "def echo(text: str, times: str = '1')").replace(
        '" ".join([text] * times)', '" ".join([text] * int(times))'
    )
    failed_with(
        run_kit(pytester, code),
        "*manifest: the schema lets 'times' be integer, which defective.echo()'s annotation (string) does not accept",
        "*hologram check:*plugin.toml: error: tools?0? (echo).parameters.times: the schema lets*",
        "*fix: make the schema's type and the annotation agree*",
    )


def test_junk_on_stdout(pytester: pytest.Pytester) -> None:
    code = GOOD + textwrap.dedent(
        """
        import os


        @plugin.on_start
        def chatty(ctx):
            os.write(1, b"starting up, please wait\\n")  # straight onto the protocol channel
        """
    )
    failed_with(
        run_kit(pytester, code),
        "*stdout: it wrote 1 line(s) to stdout that are not protocol messages*",
        "*'starting up, please wait'*",
        "*fix: stdout is the protocol channel: write logs to stderr*",
    )


def test_a_tool_that_raises(pytester: pytest.Pytester) -> None:
    code = GOOD.replace('    return " ".join([text] * times)', '    raise ValueError(f"cannot repeat {text!r}")')
    failed_with(
        run_kit(pytester, code),
        "*tools: echo raised an exception on a call its schema accepts*",
        '*the kit sent:*tool/invoke echo {"text": "example"}*',
        "*ValueError: cannot repeat 'example'*",
        "*fix: an exception escaped the tool*",
    )


def test_ignores_shutdown(pytester: pytest.Pytester) -> None:
    code = GOOD + textwrap.dedent(
        """
        import threading
        import time


        @plugin.on_start
        def keep_busy(ctx):
            # a non-daemon thread: the interpreter waits for it at exit, so the process never ends by itself
            threading.Thread(target=time.sleep, args=(600,), name="forever").start()
        """
    )
    failed_with(
        run_kit(pytester, code),
        "*shutdown: it did not exit within 3 s of the shutdown request: the kernel had to send SIGTERM*",
        "*answered it, but did not exit*",
        "*fix: answer shutdown with {} and exit promptly*",
    )


def test_leaves_a_child_process_behind(pytester: pytest.Pytester) -> None:
    marker = f"sleep {600 + pytester.path.stat().st_ino % 1000}"  # this test's own child, to look for it after
    code = GOOD + textwrap.dedent(
        f"""
        import subprocess


        @plugin.on_start
        def start_helper(ctx):
            subprocess.Popen({marker.split()!r}, stdout=subprocess.DEVNULL)  # never stopped
        """
    )
    failed_with(
        run_kit(pytester, code),
        "*processes: 1 process(es) it started were still running after it stopped (the kit killed them)*",
        f"*pid *: {marker}*",
        "*fix: stop what you start when the plugin stops*",
    )
    from hologram.testing import processes

    assert not [p for p in processes.snapshot().values() if p.command == marker], "the kit left the child running"


def test_a_tool_that_kills_its_process(pytester: pytest.Pytester) -> None:
    code = GOOD.replace('    return " ".join([text] * times)', "    import os\n\n    os._exit(3)")
    failed_with(
        run_kit(pytester, code),
        "*tools: its process ended while the kit was calling echo*",
        "*kernel:*exited with code 3*",
        "*not checked: the checks after that call: the plugin was gone*",
    )


def test_a_stage_hook_answering_what_the_stage_does_not_take(pytester: pytest.Pytester) -> None:
    code = GOOD.replace('    return view.rewrite(view.output + " ~")', '    return {"input": "rewritten"}')
    failed_with(
        run_kit(pytester, code),
        "*stages: its before_output hook answered something the stage does not accept*",
        "*kernel:*before_output cannot set 'input' (it may set: data, output)*",
    )


def test_the_report_says_what_each_hook_did_with_the_sample_view(pytester: pytest.Pytester) -> None:
    """Whether the kit took a hook past its pass-through: a hook that acts on one input only (issue 36's reader:
    ``tally?``) answers no change to the sample view, and the passed line says so, and where the rest is tested.
    Mutation check (done): `_what_changed` saying "→ output" for every answer turns it red."""
    from hologram.testing import check_conformance

    selective = GOOD.replace(
        '    return view.rewrite(view.output + " ~")',
        '    return view.rewrite("sealed") if view.input == "seal?" else None',
    )
    for code, seen in ((GOOD, "before_output → output"), (selective, "before_output → no change")):
        root = write_repo(pytester, code) if code is GOOD else pytester.path
        if code is not GOOD:
            (root / "src" / "defective" / "__init__.py").write_text(textwrap.dedent(code), encoding="utf-8")
        report = check_conformance(root / "src" / "defective" / "plugin.toml")
        assert report.ok, report.render()
        (stages,) = [line for line in report.passed if line.startswith("stages (")]
        assert stages == (
            f"stages (answers the stage accepts, to the kit's sample view: {seen}; a hook's other cases are yours "
            "to test with call_stage)"
        )
