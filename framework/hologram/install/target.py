"""What `hologram plugin add` was given: PATH (a Python project, or a directory of manifests) or PACKAGE.

As pip reads its arguments: a path is written as one (`./acme`, `/src/acme`, `~/acme`); a bare word is a
package name even when a directory of that name is here, so `acme` never installs the wrong thing by
accident. A project is installed editable (its code is used where it is); a directory with manifests but no
project is added to the lock's manifest paths, as `hologram build -m DIR` would.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import tomli
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from hologram.base.errors import HologramError, Problem

Kind = Literal["editable", "path", "package"]
PROJECT_FILES = ("pyproject.toml", "setup.py", "setup.cfg")


@dataclass(frozen=True)
class Target:
    kind: Kind
    text: str
    """As the person wrote it."""
    path: Path | None = None
    """editable and path: the directory, absolute."""
    requirement: str | None = None
    """package: the requirement handed to pip (`acme==1.2`)."""
    distribution: str | None = None
    """The distribution's canonical name when it is known before installing (a package; a project whose
    pyproject.toml names it)."""

    def pip_args(self) -> list[str]:
        """What `pip install` is given for this target (nothing for a manifest directory)."""
        if self.kind == "editable":
            return ["-e", str(self.path)]
        if self.kind == "package":
            return [str(self.requirement)]
        return []

    def describe(self) -> str:
        if self.kind == "editable":
            return f"the Python project {self.path} (installed editable)"
        if self.kind == "path":
            return f"the manifests in {self.path}"
        return f"the package {self.requirement}"


def looks_like_path(text: str) -> bool:
    if "://" in text:  # a URL (or `name @ URL`), which the package branch refuses
        return False
    return text.startswith((".", "~", "/")) or os.sep in text or (os.altsep is not None and os.altsep in text)


def parse_target(text: str, cwd: Path | None = None) -> Target:
    """The target `text` names, or a one-line error saying what would be accepted."""
    text = text.strip()
    if not text:
        raise HologramError(Problem("give a path or a package name", hint="hologram plugin add ./my-plugin"))
    if looks_like_path(text):
        return _path_target(text, cwd or Path.cwd())
    return _package_target(text)


def _path_target(text: str, cwd: Path) -> Target:
    path = (cwd / Path(text).expanduser()).resolve()
    if not path.exists():
        raise HologramError(Problem("no such directory", file=str(path), hint="give the plugin's directory"))
    if path.is_file():
        raise HologramError(
            Problem(
                "a plugin is added by its directory, not a file",
                file=str(path),
                hint=f"hologram plugin add {path.parent}",
            )
        )
    if any((path / name).is_file() for name in PROJECT_FILES):
        return Target("editable", text, path=path, distribution=_project_name(path))
    if any(p.is_file() for p in path.glob("*.toml")):
        return Target("path", text, path=path)
    raise HologramError(
        Problem(
            "neither a Python project (pyproject.toml) nor a directory of plugin manifests (*.toml)",
            file=str(path),
            hint="docs/authoring.md describes a plugin project",
        )
    )


def _project_name(path: Path) -> str | None:
    """The distribution name pyproject.toml declares, if it declares one statically."""
    try:
        data = tomli.loads((path / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomli.TOMLDecodeError):
        return None
    project = data.get("project")
    name = project.get("name") if isinstance(project, dict) else None
    return canonicalize_name(name) if isinstance(name, str) and name else None


def _package_target(text: str) -> Target:
    hint = "give PACKAGE or PACKAGE==VERSION (a path is written ./DIR)"
    try:
        requirement = Requirement(text)
    except InvalidRequirement as exc:
        raise HologramError(Problem(f"{text!r} is not a package name: {exc}", hint=hint)) from None
    if requirement.url or requirement.marker:
        raise HologramError(Problem(f"{text!r}: a URL or an environment marker is not taken here", hint=hint))
    return Target("package", text, requirement=str(requirement), distribution=canonicalize_name(requirement.name))
