"""`PluginHarness.start` settles on the plugin's state change: ready, or a start that failed, is known at once.

Mutation check (done): with the harness's state listener never setting its event, both tests here hit
`run`'s 30 s deadline (the harness only gave up at its 65 s start timeout), red; restored.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hologram.sdk.testing import PluginHarness
from tests.kit.loop import run
from tests.launcher.kit import events, write_plugin

START_TIMEOUT_S = 60  # the harness's bound; the runs below must be done long before it


def test_a_ready_plugin_is_usable_as_soon_as_start_returns(tmp_path: Path) -> None:
    manifest = write_plugin(tmp_path, "prompt", provides=["prompt.f"], timeout_s=START_TIMEOUT_S)

    async def main() -> str:
        async with PluginHarness.from_manifest(manifest, data_dir=tmp_path / "data") as harness:
            result = await harness.call_tool("echo", {"text": "hi"})
            return str(result["content"])

    assert run(main(), timeout=30) == "prompt: hi"
    assert [e["event"] for e in events(tmp_path)][:2] == ["start", "ready"]


def test_a_plugin_that_dies_while_starting_fails_start_with_its_state(tmp_path: Path) -> None:
    manifest = write_plugin(
        tmp_path, "doomed", config={"crash_on_start": True}, timeout_s=START_TIMEOUT_S, restart="never"
    )

    async def main() -> None:
        async with PluginHarness.from_manifest(manifest, data_dir=tmp_path / "data"):
            pass

    with pytest.raises(RuntimeError, match=r"plugin doomed did not become ready: (failed|crashed): "):
        run(main(), timeout=30)
    assert [e["event"] for e in events(tmp_path)] == ["start", "crash"]
