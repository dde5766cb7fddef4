"""Discovery of third-party plugins through the `hologram.plugins` entry-point group.

A small plugin distribution is built as a real wheel and installed with pip into a temporary venv, and
`hologram build` runs in that venv: the same path a user takes with `pip install hologram-weather`.
"""

from __future__ import annotations

import base64
import hashlib
import subprocess
import zipfile
from pathlib import Path

import pytest

import hologram
from tests.kit.venv import fresh_venv
from tests.kit.venv import pip_install as install

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


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def make_wheel(directory: Path, dist: str, package: str, files: dict[str, str], entry_points: str) -> Path:
    """A minimal but valid wheel (PEP 427), written directly so the test needs no build backend."""
    version = "0.2.0"
    info = f"{dist.replace('-', '_')}-{version}.dist-info"
    contents = {f"{package}/{name}": text.encode() for name, text in files.items()}
    contents[f"{info}/METADATA"] = f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n".encode()
    contents[f"{info}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    contents[f"{info}/entry_points.txt"] = entry_points.encode()
    record = [_record_line(name, data) for name, data in contents.items()] + [f"{info}/RECORD,,"]
    contents[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    path = directory / f"{dist.replace('-', '_')}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in contents.items():
            archive.writestr(name, data)
    return path


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # this checkout's hologram importable in the new venv (not installed: build must find plugins without it)
    framework = Path(hologram.__file__).resolve().parents[1]
    return fresh_venv(tmp_path_factory.mktemp("venv"), extra_paths=[framework])


def pip_install(python: Path, wheel: Path) -> None:
    install(python, str(wheel), options=["--force-reinstall"])


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
