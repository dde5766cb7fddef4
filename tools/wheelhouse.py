"""Wheels of Hologram's three distributions and a local wheelhouse of their dependencies, for installing
Hologram the way a user does (`uv tool install`, pip) without reaching an index.

    from wheelhouse import build_wheels, dependency_wheelhouse

The dependency wheelhouse is made once, from the versions installed in this development venv (their
dependency closure, read from the installed metadata, each pinned; pytest's too, for a plugin's tests run in
an SDK-only venv), with `pip wheel --no-deps`: the first time it fetches from PyPI (or pip's cache) and builds
the few source-only packages (jieba), later runs find it complete and touch no network. It lives in the venv
(`.venv/wheelhouse`), so `make clean` drops it.

The three wheels are built fresh from the tree each time (hatchling in this venv, no build isolation, no
index): hologram-sdk, hologram, and hologram-use-model — its model file taken from this venv's own installed
copy (HOLOGRAM_USE_MODEL_FROM, distributions/hologram-use-model/hatch_build.py), the same bytes by sha256.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
DISTRIBUTIONS = {
    "hologram": ROOT,
    "hologram-sdk": ROOT / "distributions" / "hologram-sdk",
    "hologram-use-model": ROOT / "distributions" / "hologram-use-model",
}
WHEELHOUSE = Path(sys.prefix) / "wheelhouse"
TEST_ROOTS = ("pytest",)  # what a plugin repository's tests add to hologram-sdk (tests/packaging runs them)


def normalise(name: str) -> str:
    """A distribution's name as wheel files spell it (PEP 427/503: runs of -_. as one underscore, lower)."""
    return re.sub(r"[-_.]+", "_", name).lower()


def runtime_closure(root: str = "hologram") -> dict[str, str]:
    """Name → installed version of every distribution `root` needs at run time (no extras), from this
    environment's metadata; our own three distributions excluded (they are built from the tree)."""
    found: dict[str, str] = {}
    done: set[tuple[str, str]] = set()  # (distribution, extra) whose requirements were followed
    pending = [Requirement(root)]
    while pending:
        requirement = pending.pop()
        name = normalise(requirement.name)
        found.setdefault(name, metadata.version(requirement.name))
        # a dependant may ask for extras (mcp needs pyjwt[crypto], hence cryptography): follow those too
        for extra in ("", *sorted(requirement.extras)):
            if (name, extra) in done:
                continue
            done.add((name, extra))
            for line in metadata.requires(requirement.name) or []:
                dependency = Requirement(line)
                if dependency.marker is None or dependency.marker.evaluate({"extra": extra}):
                    pending.append(dependency)
    return {name: version for name, version in found.items() if name not in {normalise(d) for d in DISTRIBUTIONS}}


def _has_wheel(directory: Path, name: str, version: str) -> bool:
    return any(directory.glob(f"{name}-{version}-*.whl")) or any(
        p.name.lower().startswith(f"{name}-{version}-") for p in directory.glob("*.whl")
    )


def dependency_wheelhouse(directory: Path = WHEELHOUSE) -> Path:
    """The wheelhouse of hologram's run-time dependencies (and `TEST_ROOTS`') at this venv's versions, completed
    if needed."""
    directory.mkdir(parents=True, exist_ok=True)
    wanted = runtime_closure()
    for root in TEST_ROOTS:
        wanted.update(runtime_closure(root))
    missing = [f"{n}=={v}" for n, v in sorted(wanted.items()) if not _has_wheel(directory, n, v)]
    if missing:
        command = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(directory)]
        subprocess.run([*command, *missing], check=True)
    return directory


def build_wheels(out: Path, names: tuple[str, ...] = tuple(DISTRIBUTIONS)) -> dict[str, Path]:
    """Build the named distributions of this tree into `out`; name → wheel."""
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, HOLOGRAM_USE_MODEL_FROM=str(_installed_model()))
    command = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "--no-index"]
    command += ["--wheel-dir", str(out), *(str(DISTRIBUTIONS[n]) for n in names)]
    subprocess.run(command, check=True, env=env)
    wheels = {}
    for name in names:
        version = metadata.version(name)
        (wheel,) = out.glob(f"{normalise(name)}-{version}-*.whl")
        wheels[name] = wheel
    return wheels


def _installed_model() -> Path:
    from hologram.memory.embed.embedder import model_file

    found = model_file()
    if found is None:
        raise RuntimeError("hologram-use-model is not installed in this venv (make install)")
    return found


def installed_size(path: Path) -> int:
    """Bytes of the files under `path` as `du` counts them (allocated blocks), links not followed."""
    total = 0
    for directory, _, files in os.walk(path):
        for name in files:
            stat = os.lstat(os.path.join(directory, name))
            total += stat.st_blocks * 512
    return total
