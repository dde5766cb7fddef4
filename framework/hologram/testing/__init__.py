"""The conformance kit: test a plugin the way the kernel will use it, from its manifest, as a real process.

    from hologram.testing import check_conformance

    report = check_conformance("src/hologram_acme/plugin.toml")
    assert report.ok, report.render()

In a plugin repository's pytest suite the same is one line, through the fixtures this package registers as a
pytest plugin (``pytest11`` entry point; `hologram.testing.pytest_plugin`):

    def test_conformance(hologram_conformance):
        hologram_conformance()

`PluginHarness` (async; also `hologram.sdk.testing.PluginHarness`) and `RunningPlugin` (sync) start a plugin and
call its tools, stage hooks and facility methods. See docs/authoring.md, "Testing it".

The kit imports the SDK, the manifest and plan modules, the kernel's supervisor (`hologram.supervisor`, which
spawns and stops the plugin) and the stage contract (`hologram.stages.context`) — none of the memory stack — so
the SDK-only install is enough to run it. Names load on first use: pytest imports the plugin module in every run
where hologram is installed, and a run that uses no fixture of it should not pay for the supervisor.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hologram.sdk.testing import PluginHarness
    from hologram.testing.conformance import Options, check_conformance, check_conformance_async
    from hologram.testing.report import Finding, Report
    from hologram.testing.running import RunningPlugin

__all__ = [
    "Finding",
    "Options",
    "PluginHarness",
    "Report",
    "RunningPlugin",
    "check_conformance",
    "check_conformance_async",
]

_HOME = {
    "PluginHarness": "hologram.sdk.testing",
    "check_conformance": "hologram.testing.conformance",
    "check_conformance_async": "hologram.testing.conformance",
    "Options": "hologram.testing.conformance",
    "Finding": "hologram.testing.report",
    "Report": "hologram.testing.report",
    "RunningPlugin": "hologram.testing.running",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'hologram.testing' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value
