"""A third-party plugin's pydantic config model, through a real `hologram build` + `hologram up` (issue 34 §3),
and its settings taken at each `hologram plugin restart`/`start` (issue 36, the reader's first gap).

`tests/e2e/plugins/e2e_configured.py` declares ``Plugin(..., config=Config)`` with ``interval_s: float =
Field(60, gt=0)``, ``city: str`` and ``retries: int``.

* Wrong values fail the start with the file, line and key of each: a value set in settings.toml names
  settings.toml's line (``settings.toml:LINE: plugins.NAME.KEY: message``), a manifest default the user did
  not override names the manifest's line; `hologram up` prints it, `hologram status` shows it, the state is
  ``failed`` without a restart (the same values would fail again), and a refused value is never echoed.
* Right values reach the plugin typed: the ``state=`` factory and ``on_start`` get the model instance, an
  integer in settings.toml arrives as the float the model declares, the kernel's own keys (``env``,
  ``pass_env``, the legacy ``mode``) are not refused by the strict (``extra="forbid"``) model.

Mutation checks (done): dropping the validation in `Runtime._initialize` (the raw dict handed on) turns both
red (no failure; ``ctx.config`` a dict, the tool fails); `describe_config_errors` naming settings.toml for
every key turns the first red at the manifest's line; the `CONFIG_INVALID` start failure made retryable
(``permanent=False``) turns it red (restarts > 0, state crashed); `KERNEL_CONFIG_KEYS` not filtered turns
the second red (``mode``/``pass_env``... refused as unknown keys). The restart test: the kernel not handing
the supervisor its settings reader (`read_plugin_config`) turns it red at the first restart (2.0, not 4.0); the
restart not checking the file first (`check_settings`) turns it red at the damaged file (exit 0, a new pid).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from hologram.kernel.control import call
from mock_llm import MockLLM
from tests.kit.wait import wait_until

from .kernel import HOLOGRAM, NOT_YET, PLUGINS, E2EKernel, as_json, env

pytestmark = pytest.mark.slow

MANIFEST = """\
[plugin]
name = "e2e-configured"
version = "0.1.0"
description = "a plugin with a pydantic config model"
run = {{ module = "e2e_configured", env = {{ PYTHONPATH = "{path}" }} }}

[[tools]]
name = "configured_show"
description = "the configuration the plugin sees"
parallel_safe = true
parameters = {{ type = "object", properties = {{}} }}

[config]
interval_s = 30
city = {city}
"""

SECRET = "sk-a-value-that-must-not-be-echoed"


class ConfiguredKernel(E2EKernel):
    def __init__(self, root: Path, mock: MockLLM, *, city: str, settings: str) -> None:
        extra = root / "extra"
        extra.mkdir(parents=True)
        self.manifest = extra / "e2e-configured.toml"
        self.manifest.write_text(MANIFEST.format(path=PLUGINS, city=city))
        super().__init__(root, [mock])
        self.hologram(
            "build", "--no-discover", "-m", str(root / "manifests"), "-m", str(extra), "-o", str(self.lock),
            check=True,
        )  # fmt: skip
        self.settings = self.data / "settings.toml"
        self.settings.write_text(self.settings.read_text() + settings)

    def start_expecting_failure(self) -> dict[str, Any]:
        self.process = subprocess.Popen(
            [*HOLOGRAM, "up", "--port", "0", "--lock", str(self.lock), "--data", str(self.data)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env(), cwd=self.root,
        )  # fmt: skip

        def configured() -> dict[str, Any] | None:
            assert self.process is not None and self.process.poll() is None, "hologram up exited"
            plugins = {p["name"]: p for p in call(self.data, "status", timeout=5)["plugins"]}
            return plugins.get("e2e-configured")

        entry: dict[str, Any] | None = wait_until(
            configured, accept=lambda p: p is not None and p["state"] not in ("waiting", "starting"),
            timeout=60, what="e2e-configured to leave starting", interval=0.1, retry_on=NOT_YET,
        )  # fmt: skip
        assert entry is not None
        return entry


def line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), start=1) if line.startswith(text))


def test_wrong_values_fail_the_start_naming_file_line_and_key(tmp_path: Path) -> None:
    settings = f'\n[plugins.e2e-configured]\ninterval_s = -5\nretries = "{SECRET}"\n'
    with MockLLM("deepseek") as mock:
        kernel = ConfiguredKernel(tmp_path, mock, city="7", settings=settings)
        try:
            entry = kernel.start_expecting_failure()
            status = kernel.hologram("status", "--data", str(kernel.data))
        finally:
            out = kernel.stop()
    interval = f"{kernel.settings}:{line_of(kernel.settings, 'interval_s')}: plugins.e2e-configured.interval_s: "
    retries = f"{kernel.settings}:{line_of(kernel.settings, 'retries')}: plugins.e2e-configured.retries: "
    city = f"{kernel.manifest}:{line_of(kernel.manifest, 'city')}: config.city: Input should be a valid string"
    expected = [
        interval + "Input should be greater than 0",
        retries + "Input should be a valid integer, unable to parse string as an integer",
        city,
    ]
    assert entry["state"] == "failed" and entry["restarts"] == 0, entry
    for text in expected:
        assert text in entry["reason"], entry["reason"]
        assert text in out, out
    assert interval + "Input should be greater than 0" in status.stdout, status.stdout
    for text in (entry["reason"], out, status.stdout, status.stderr):
        assert SECRET not in text
    assert "ValidationError" not in out, out  # told as problems, not as the plugin's traceback


def test_right_values_reach_the_plugin_typed(tmp_path: Path) -> None:
    settings = (
        '\n[plugins.e2e-configured]\ninterval_s = 2\nretries = 5\nmode = "ask"\n'
        'pass_env = ["HOME"]\nenv = { FROM_SETTINGS = "s" }\n'
    )
    with MockLLM("deepseek") as mock:
        kernel = ConfiguredKernel(tmp_path, mock, city='"Paris"', settings=settings)
        kernel.start()
        try:
            mock.script(
                [
                    {
                        "reasoning_content": "r",
                        "tool_calls": [{"id": "c", "name": "configured_show", "arguments": "{}"}],
                    },
                    {"reasoning_content": "r", "content": "ok"},
                ]
            )
            assert as_json(kernel.ask("config?", "--json"))["output"] == "ok"
            messages = mock.requests[-1].body["messages"]
            seen = json.loads(next(m["content"] for m in messages if m["role"] == "tool"))
        finally:
            kernel.stop()
    assert seen == {
        "started": True,
        "values": {"interval_s": 2.0, "city": "Paris", "retries": 5},
        "types": {"interval_s": "float", "city": "str", "retries": "int"},
    }


def test_plugin_restart_and_start_take_the_settings_as_they_are_now(tmp_path: Path) -> None:
    """Issue 36's reader: an edited [plugins.NAME] reached the plugin only after a whole `hologram up` restart.
    Now `hologram plugin restart` (and stop + start) start it with the file as it is; a file `up` would refuse,
    or one the plugin's model refuses, is told by file:line, and only the former keeps the old process."""
    with MockLLM("deepseek") as mock:
        kernel = ConfiguredKernel(
            tmp_path, mock, city='"Paris"', settings="\n[plugins.e2e-configured]\ninterval_s = 2\n"
        )
        base = kernel.settings.read_text()
        kernel.start()
        try:

            def configured(interval: str) -> None:
                kernel.settings.write_text(base.replace("interval_s = 2", f"interval_s = {interval}"))

            def seen() -> dict[str, Any]:
                answer = call(kernel.data, "tools/call", {"tool": "configured_show", "arguments": {}}, timeout=30)
                assert answer["status"] == "ok", answer
                values: dict[str, Any] = json.loads(answer["content"])["values"]
                return values

            def plugin(*args: str) -> subprocess.CompletedProcess[str]:
                return kernel.hologram("plugin", *args, "e2e-configured", "--data", str(kernel.data), timeout=120)

            def entry() -> dict[str, Any]:
                return next(p for p in kernel.status()["plugins"] if p["name"] == "e2e-configured")

            assert seen()["interval_s"] == 2.0

            configured("4")
            restarted = plugin("restart")
            pid = entry()["pid"]
            assert restarted.returncode == 0, restarted.stdout + restarted.stderr
            assert restarted.stdout == f"e2e-configured: ready (pid {pid})\n"
            assert seen()["interval_s"] == 4.0

            assert plugin("stop").returncode == 0
            configured("5")
            started = plugin("start")
            assert started.returncode == 0 and "e2e-configured: ready" in started.stdout, (
                started.stdout + started.stderr
            )
            assert seen()["interval_s"] == 5.0
            running = entry()

            # a file `hologram up` would refuse: nothing is stopped, the plugin keeps its values
            kernel.settings.write_text(base.replace("interval_s = 2", "interval_s = 6\n[plugins.broken"))
            refused = plugin("restart")
            line = line_of(kernel.settings, "[plugins.broken")
            assert refused.returncode == 1 and "Traceback" not in refused.stderr, refused.stderr
            assert refused.stderr.startswith("error: e2e-configured was not restarted: settings.toml cannot be used\n")
            assert f"{kernel.settings}:{line}: error: not valid TOML" in refused.stderr, refused.stderr
            assert f"e2e-configured keeps running (ready, pid {running['pid']}) with the values it started with" in (
                refused.stderr
            )
            after = entry()
            assert (after["state"], after["pid"], after["restarts"]) == ("ready", running["pid"], running["restarts"])
            assert seen()["interval_s"] == 5.0

            # a value the plugin's model refuses: the start fails, named by settings.toml's line and key
            configured("-1")
            failed = plugin("restart")
            line = line_of(kernel.settings, "interval_s")
            assert failed.returncode == 1, failed.stdout + failed.stderr
            assert failed.stdout.startswith(
                f"e2e-configured: failed: start failed: {kernel.settings}:{line}: plugins.e2e-configured.interval_s: "
                "Input should be greater than 0"
            ), failed.stdout

            configured("3")
            fixed = plugin("restart")
            assert fixed.returncode == 0, fixed.stdout + fixed.stderr
            assert seen()["interval_s"] == 3.0
        finally:
            kernel.stop()
