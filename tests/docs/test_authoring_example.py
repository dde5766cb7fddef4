"""The flagship example of docs/authoring.md is real: the page shows the files of docs/examples/hologram-weather
verbatim, the example's own test passes against a real plugin process, and `hologram check` finds nothing.

Mutation check (done): the hook reading ``context["text"]`` (the page's old, broken version) turns
``test_the_example_plugin_passes_its_own_test`` red, as does dropping its ``[stages]`` table."""

from __future__ import annotations

import os
import re
import subprocess
import sys
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
