"""The flagship example of docs/authoring.md is real: the page shows the files of docs/examples/hologram-weather
verbatim, the example's own test passes against a real plugin process, and `hologram check` finds nothing.

Its packaging is real too: the wheel its pyproject builds carries the manifest and the config schema (what
`hologram build` reads from an installed plugin).

Mutation checks (done): the hook reading ``context["text"]`` (the page's old, broken version) turns
``test_the_example_plugin_passes_its_own_test`` red, as does dropping its ``[stages]`` table; the wheel target
excluding ``*.toml`` and ``*.json`` (a wheel without its manifest) turns the wheel test red."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from hologram.plan.check import check

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "docs" / "examples" / "hologram-weather"
PAGE = ROOT / "docs" / "authoring.md"
BLOCK = re.compile(r"```(?:toml|python)\n# (?P<path>[\w./-]+)\n(?P<body>.*?)\n```", re.S)


def test_every_block_of_the_page_is_a_file_of_the_example() -> None:
    blocks = {m.group("path"): m.group("body") for m in BLOCK.finditer(PAGE.read_text(encoding="utf-8"))}
    assert set(blocks) == {
        "src/hologram_weather/plugin.toml",
        "src/hologram_weather/__main__.py",
        "pyproject.toml",
        "tests/test_weather.py",
    }
    for path, body in blocks.items():
        assert body == (EXAMPLE / path).read_text(encoding="utf-8").rstrip("\n"), f"{path} differs from the page"


def test_the_example_plugin_passes_its_own_test() -> None:
    """Its tests, run as its author runs them: `pytest` in the repository (the fixtures from hologram's pytest11
    entry point, the plugin run from src/ as the kit does for a repository)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # nothing written into docs/examples
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=EXAMPLE, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed" in result.stdout, result.stdout


def test_hologram_check_finds_nothing_to_say() -> None:
    report = check(EXAMPLE)
    assert report.checked and not report.errors and not report.warnings, (report.errors, report.warnings)


def test_the_example_builds_a_wheel_with_its_manifest(tmp_path: Path) -> None:
    """`python -m build` as section 5 says, here as pip's wheel build with the backend this venv has (offline)."""
    source = shutil.copytree(EXAMPLE, tmp_path / "src", ignore=shutil.ignore_patterns("__pycache__"))
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-index", "--no-build-isolation",
         "--wheel-dir", str(tmp_path / "dist"), str(source)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel,) = (tmp_path / "dist").glob("hologram_weather-0.1.0-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {"hologram_weather/plugin.toml", "hologram_weather/config.schema.json", "hologram_weather/__main__.py"} <= (
        names
    ), sorted(names)
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "[hologram.plugins]\nweather = hologram_weather" in zipfile.ZipFile(wheel).read(entry_points).decode()
