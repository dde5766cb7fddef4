"""The conformance kit as a pytest plugin: installing hologram gives a plugin repository's tests these fixtures.

Registered through the ``pytest11`` entry point (pyproject.toml), so pytest loads it wherever hologram is
installed; nothing here runs until a test asks for a fixture.

* ``hologram_manifest`` — the repository's manifest (its pyproject's 'hologram.plugins' entry point, else
  ``plugin.toml``, else its only ``manifests/*.toml``); override the fixture to name another.
* ``hologram_config`` — values over the manifest's ``[config]`` for ``hologram_plugin`` (default none); override it.
* ``hologram_plugin`` — the plugin started as a real process under the kernel's supervisor, stopped after the
  test: ``hologram_plugin.call_tool("acme_greet", {"name": "Ada"})``, ``call_stage``, ``call_facility``.
* ``hologram_conformance`` — one line runs every conformance check and fails the test with what the plugin did
  and how to fix it: ``def test_conformance(hologram_conformance): hologram_conformance()``. Its keywords are
  the fields of `hologram.testing.Options` (``examples=``, ``skip_tools=``, ``config=``, ``provide=``, …).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # the report's module loads with the first fixture that runs, not in every pytest run
    from hologram.testing.report import Report


@pytest.fixture
def hologram_manifest(request: pytest.FixtureRequest) -> Path:
    """The manifest of the plugin under test, found from pytest's root directory."""
    from hologram.testing.discover import NoManifest, discover_manifest

    try:
        return discover_manifest(Path(request.config.rootpath))
    except NoManifest as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture
def hologram_config() -> dict[str, Any]:
    """Configuration over the manifest's ``[config]`` for ``hologram_plugin``; override it to set some."""
    return {}


@pytest.fixture
def hologram_plugin(hologram_manifest: Path, hologram_config: dict[str, Any]) -> Iterator[Any]:
    """The plugin running as a real process (`hologram.testing.RunningPlugin`), stopped after the test."""
    from hologram.testing.running import RunningPlugin

    try:
        running = RunningPlugin.start(hologram_manifest, config=hologram_config or None)
    except RuntimeError as exc:
        pytest.fail(f"{exc}\n(run hologram_conformance() for the details and the fix)", pytrace=False)
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def hologram_conformance(request: pytest.FixtureRequest) -> Callable[..., Report]:
    """``hologram_conformance(manifest=None, **options)``: every conformance check; fails the test on a problem."""

    def run(manifest: str | Path | None = None, **options: Any) -> Report:
        from hologram.testing.conformance import check_conformance

        if manifest is None:
            path: Path = request.getfixturevalue("hologram_manifest")
        else:  # relative to where pytest runs, else to its root directory
            path = Path(manifest)
            if not path.is_absolute() and not path.exists():
                path = Path(request.config.rootpath) / path
        report = check_conformance(path, **options)
        if not report.ok:
            pytest.fail(report.render(), pytrace=False)
        return report

    return run
