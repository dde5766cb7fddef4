"""The Python environment `hologram` runs from: what it holds, and pip to change it.

`sys.executable -m pip`: the plugin lands where this hologram (and a kernel started from it) imports from.
pip runs with the scrubbed environment plugins get (no provider key reaches a package's build code) plus
pip's own settings (`PIP_*`: an index, a proxy, offline `PIP_NO_INDEX`).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from importlib.metadata import Distribution, distributions
from pathlib import Path
from urllib.parse import unquote, urlparse

from packaging.utils import canonicalize_name

from hologram.base import sitepaths
from hologram.base.errors import HologramError, Problem
from hologram.manifest.discovery import ENTRY_POINT_GROUP

PIP_TAIL_LINES = 12  # of pip's output, shown when it fails


@dataclass(frozen=True)
class Installed:
    name: str
    """Canonical (`hologram-weather`)."""
    version: str


def snapshot() -> dict[str, str]:
    """Canonical distribution name → version, of everything this interpreter can import from now."""
    sitepaths.refresh()  # what pip just added (a new .pth) included
    found: dict[str, str] = {}
    for dist in distributions():
        name = dist.metadata["Name"] if dist.metadata else None
        if name:
            found.setdefault(canonicalize_name(name), dist.version)
    return found


def difference(before: dict[str, str], after: dict[str, str]) -> tuple[list[Installed], list[tuple[str, str, str]]]:
    """(distributions new in `after`, (name, old version, new version) of those whose version changed)."""
    new = [Installed(n, v) for n, v in sorted(after.items()) if n not in before]
    changed = [(n, before[n], v) for n, v in sorted(after.items()) if n in before and before[n] != v]
    return new, changed


def _pip_env() -> dict[str, str]:
    from hologram.supervisor.environment import scrubbed_environ

    keep = {k: v for k, v in os.environ.items() if k.startswith("PIP_")}
    return scrubbed_environ() | keep


def pip(args: list[str], *, what: str) -> None:
    """Run `python -m pip ARGS`; a failure is a HologramError with the end of pip's output. An environment
    without pip — `uv tool install hologram` makes one — is told how its tool manager adds a plugin."""
    if importlib.util.find_spec("pip") is None:
        raise HologramError(
            Problem(
                f"{what}: this hologram's environment has no pip ({sys.prefix}; a `uv tool install` makes one so)",
                hint="add the plugin with the tool manager: `uv tool install hologram --with PACKAGE` (or "
                "--with-editable PATH), then `hologram build` and restart `hologram up`",
            )
        )
    argv = [sys.executable, "-m", "pip", *args]
    try:
        result = subprocess.run(
            argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, env=_pip_env(), check=False
        )
    except OSError as exc:
        raise HologramError(Problem(f"{what}: cannot run pip: {exc}")) from None
    if result.returncode != 0:
        output = (result.stderr.strip() or result.stdout.strip()).splitlines()[-PIP_TAIL_LINES:]
        detail = "\n    ".join(line for line in output if line.strip())
        raise HologramError(
            Problem(
                f"{what} failed (pip exited {result.returncode}):\n    {detail}",
                hint=f"the command was: {' '.join(argv)}",
            )
        )


def install(args: list[str], *, what: str) -> None:
    pip(["install", "--disable-pip-version-check", "--no-input", *args], what=what)


def uninstall(names: list[str], *, what: str) -> None:
    if names:
        pip(["uninstall", "--disable-pip-version-check", "--yes", *names], what=what)


def _distribution(name: str) -> Distribution | None:
    for dist in distributions():
        if dist.metadata and canonicalize_name(dist.metadata["Name"] or "") == name:
            return dist
    return None


def editable_at(path: Path) -> str | None:
    """The canonical name of the distribution installed editable from `path` (PEP 610's direct_url.json)."""
    for dist in distributions():
        text = dist.read_text("direct_url.json")
        if not text or not dist.metadata:
            continue
        try:
            url = json.loads(text)
        except ValueError:
            continue
        where = urlparse(str(url.get("url", "")))
        if where.scheme == "file" and Path(unquote(where.path)).resolve() == path.resolve():
            return canonicalize_name(dist.metadata["Name"] or "")
    return None


def plugin_entry_points(name: str) -> list[str]:
    """The `hologram.plugins` entry points the distribution `name` declares."""
    dist = _distribution(name)
    if dist is None:
        return []
    return sorted(ep.name for ep in dist.entry_points if ep.group == ENTRY_POINT_GROUP)
