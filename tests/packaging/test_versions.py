"""hologram pins hologram-sdk at its own version: both are built from framework/hologram/_version.py, and a
release of one without the other must not resolve. Mutation check (done): bumping _version.py alone fails it."""

from __future__ import annotations

from pathlib import Path

import tomli
from packaging.requirements import Requirement

from hologram._version import __version__

ROOT = Path(__file__).resolve().parents[2]


def test_hologram_pins_the_sdk_at_its_own_version() -> None:
    project = tomli.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = [Requirement(d) for d in project["dependencies"] if Requirement(d).name == "hologram-sdk"]
    assert [str(p.specifier) for p in pins] == [f"=={__version__}"]


def test_the_sdk_reads_the_same_version_file() -> None:
    sdk = ROOT / "distributions" / "hologram-sdk"
    path = tomli.loads((sdk / "pyproject.toml").read_text())["tool"]["hatch"]["version"]["path"]
    assert (sdk / path).resolve() == (ROOT / "framework" / "hologram" / "_version.py").resolve()
