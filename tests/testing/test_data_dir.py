"""Where a plugin keeps its files, as docs/authoring.md ("Where a plugin keeps its files") tells an author, on a
real plugin process started by the kit: ``ctx.data_dir`` is ``<data>/plugins/NAME``, it exists before the
plugin's first line of start code runs, it is the working directory of a ``run.module`` plugin, a run without
``data_dir=`` (what the ``hologram_plugin`` fixture does) gets a fresh one removed after it, and the same
``data_dir=`` twice is the plugin restarted on its files.

Mutation checks (done): the supervisor spawning the plugin in the kernel's working directory (``cwd`` not the
data dir) turns the first test red; `PluginHarness` keeping its temporary directory (no cleanup) turns the
second red.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hologram.testing import RunningPlugin
from tests.kit.manifests import write_manifest

pytestmark = pytest.mark.slow

PLUGIN = """\
import json
import os
from pathlib import Path

from hologram.sdk import Plugin, StartContext


def start(ctx: StartContext) -> dict:
    return {"data_dir": ctx.data_dir, "existed": os.path.isdir(ctx.data_dir)}


plugin = Plugin("whereami", state=start)


@plugin.tool("where")
def where() -> str:
    kept = Path("kept.txt")  # relative: lands in the working directory
    before = kept.read_text() if kept.exists() else None
    kept.write_text("written by the previous start")
    return json.dumps({**plugin.state, "cwd": os.getcwd(), "before": before})


if __name__ == "__main__":
    plugin.run()
"""


@pytest.fixture
def manifest(tmp_path: Path) -> Path:
    code = tmp_path / "code"
    code.mkdir()
    (code / "whereami.py").write_text(PLUGIN, encoding="utf-8")
    return write_manifest(code, "whereami", run={"module": "whereami", "env": {"PYTHONPATH": str(code)}})


def where(plugin: RunningPlugin) -> dict[str, Any]:
    answer = plugin.call_tool("where")
    assert not answer.get("is_error"), answer
    seen: dict[str, Any] = json.loads(answer["content"])
    return seen


def test_data_dir_is_data_plugins_name_made_before_start_and_the_working_directory(
    manifest: Path, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    with RunningPlugin.start(manifest, data_dir=data) as plugin:
        first = where(plugin)
    with RunningPlugin.start(manifest, data_dir=data) as plugin:  # the plugin restarted on the same directory
        second = where(plugin)
    mine = str(data / "plugins" / "whereami")
    assert first == {"data_dir": mine, "existed": True, "cwd": mine, "before": None}
    assert second == {**first, "before": "written by the previous start"}
    assert (data / "plugins" / "whereami" / "kept.txt").is_file()


def test_without_data_dir_each_run_gets_a_fresh_directory_removed_after_it(manifest: Path) -> None:
    seen = []
    for _ in range(2):
        with RunningPlugin.start(manifest) as plugin:  # as the hologram_plugin fixture starts it
            seen.append(where(plugin))
    assert seen[0]["data_dir"] != seen[1]["data_dir"]
    assert [s["before"] for s in seen] == [None, None], "the second run saw nothing of the first"
    assert not any(Path(s["data_dir"]).exists() for s in seen), "removed after the run"
