"""Discovery of third-party plugins through the `hologram.plugins` entry-point group.

A small plugin distribution is built as a real wheel and installed with pip into a temporary venv, and
`hologram build` runs in that venv: the same path a user takes with `pip install hologram-weather`.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.kit.venv import make_wheel, throwaway_venv

pytestmark = pytest.mark.slow

MANIFEST = """\
[plugin]
name = "weather"
version = "0.2.0"
description = "Weather forecasts"
run = { module = "hologram_weather" }

[facilities]
provides = ["weather.forecast@1"]
requires = ["kernel.tools"]
"""


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return throwaway_venv(tmp_path_factory.mktemp("venv") / "env")


def pip_install(python: Path, wheel: Path) -> None:
    subprocess.run(
        [str(python), "-m", "pip", "install", "--no-deps", "--no-index", "--force-reinstall", "-q", str(wheel)],
        check=True,
        capture_output=True,
    )


def run_build(python: Path, cwd: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(python), "-m", "hologram", "build", *extra], cwd=cwd, capture_output=True, text=True, timeout=120
    )


def test_installed_plugin_is_discovered_through_its_entry_point(venv: Path, tmp_path: Path) -> None:
    wheel = make_wheel(
        tmp_path,
        "hologram-weather",
        "hologram_weather",
        {"__init__.py": "raise RuntimeError('build must not import plugin code')\n", "plugin.toml": MANIFEST},
        "[hologram.plugins]\nweather = hologram_weather\n",
    )
    pip_install(venv, wheel)
    result = run_build(venv, tmp_path)
    assert result.returncode == 0, result.stderr
    lock = (tmp_path / "hologram.lock").read_text()
    assert 'name = "weather"' in lock
    assert 'source = "entry-point:hologram-weather"' in lock
    assert 'manifest = "<hologram-weather>/plugin.toml"' in lock


def test_broken_entry_point_is_skipped_unless_strict(venv: Path, tmp_path: Path) -> None:
    wheel = make_wheel(
        tmp_path,
        "hologram-broken",
        "hologram_broken",
        {"__init__.py": ""},
        "[hologram.plugins]\nbroken = hologram_broken\n",
    )
    pip_install(venv, wheel)
    lenient = run_build(venv, tmp_path)
    assert lenient.returncode == 0, lenient.stderr
    assert "warning: plugin from hologram-broken (entry point 'broken') skipped" in lenient.stderr
    assert "no manifest at" in lenient.stderr
    assert 'name = "hologram-broken"' not in (tmp_path / "hologram.lock").read_text()
    strict = run_build(venv, tmp_path, "--strict")
    assert strict.returncode == 1
    assert "error: plugin from hologram-broken (entry point 'broken') skipped" in strict.stderr
    assert "Traceback" not in strict.stderr
