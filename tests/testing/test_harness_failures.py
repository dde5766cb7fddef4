"""A plugin under the kit tells its author what happened (docs/authoring.md, "The plugin's log, and a test that
cannot start it"): a start that fails shows the plugin's own last log lines, not only "see its log" (issue 36's reader
found no log to see); `RunningPlugin.log` holds what a running plugin printed; and a relative path in ``env=``
is relative to the plugin's working directory, its data directory.

Mutation check (done): `RunningPlugin.start` re-raising the harness's error as it was turns the first test red.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hologram.testing import RunningPlugin
from tests.kit.manifests import write_manifest

pytestmark = pytest.mark.slow

PLUGIN = """\
import os
import sys
from pathlib import Path

from hologram.sdk import Plugin, StartContext

plugin = Plugin("chatty")


@plugin.on_start
def start(ctx: StartContext) -> None:
    print("chatty: starting, reading", os.environ.get("CHATTY_FILE"))
    if os.environ.get("CHATTY_FAIL"):
        raise RuntimeError("the counters file is damaged")


@plugin.tool("read")
def read() -> str:
    print("chatty: read called")
    return Path(os.environ["CHATTY_FILE"]).read_text()


if __name__ == "__main__":
    plugin.run()
"""


def manifest(tmp_path: Path, **env: str) -> Path:
    code = tmp_path / "code"
    code.mkdir(exist_ok=True)
    (code / "chatty.py").write_text(PLUGIN, encoding="utf-8")
    run = {"module": "chatty", "env": {"PYTHONPATH": str(code), **env}}
    return write_manifest(code, "chatty", run=run, start={"timeout_s": 20, "restart": "never"})


def test_a_start_that_fails_shows_the_plugins_last_log_lines(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError) as failed:
        RunningPlugin.start(manifest(tmp_path, CHATTY_FAIL="1"), data_dir=tmp_path / "data")
    message = str(failed.value)
    assert message.startswith("plugin chatty did not become ready: failed: start failed: "), message
    assert "its log (the last lines):\n" in message, message
    assert "    chatty: starting, reading None" in message, message
    assert "RuntimeError: the counters file is damaged" in message, message


def test_the_log_of_a_running_plugin_and_relative_env_paths(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (data / "plugins" / "chatty").mkdir(parents=True)
    (data / "plugins" / "chatty" / "counters.json").write_text("{}", encoding="utf-8")
    (tmp_path / "counters.json").write_text("the test's own directory", encoding="utf-8")
    with RunningPlugin.start(manifest(tmp_path, CHATTY_FILE="counters.json"), data_dir=data) as plugin:
        assert plugin.call_tool("read") == {"content": "{}"}  # relative to the data directory, its working dir
        lines = plugin.log
    assert "chatty: starting, reading counters.json" in lines and "chatty: read called" in lines, lines
