"""`hologram new plugin`: a ready plugin repository, from the template files beside this module.

The templates are ordinary files under ``python/`` and ``node/`` (package data, read with `importlib.resources`),
each ending ``.tmpl``; their text and their paths are filled in by `string.Template` with ``@@`` as its delimiter,
since ``$`` belongs to the languages being written (JavaScript's template literals, GitHub's ``${{ }}``). A
Python repository's config schema is then written from its model by `hologram check --write`'s own code, so the
published file is what that check will compare against, whatever pydantic version writes it.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from hologram._version import __version__
from hologram.base.errors import HologramError, Problem

if TYPE_CHECKING:
    from importlib.abc import Traversable

LANGUAGES = ("python", "node")
_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,63}$")
SUFFIX = ".tmpl"


class Template(string.Template):
    delimiter = "@@"


@dataclass(frozen=True)
class Names:
    """Every name the templates use, derived from the plugin's name (``acme-tools``)."""

    name: str  # the plugin: acme-tools
    dist: str  # the distribution: hologram-acme-tools
    package: str  # the Python package: hologram_acme_tools
    tool: str  # its tool: acme_tools_greet
    facility: str  # its facility: acme-tools.greetings
    Config: str  # its config model: AcmeToolsConfig
    description: str
    hologram_version: str

    @classmethod
    def of(cls, name: str) -> Names:
        ident = name.replace("-", "_")
        title = "".join(part.capitalize() for part in re.split(r"[-_]", name) if part)
        return cls(
            name=name,
            dist=f"hologram-{name}",
            package=f"hologram_{ident}",
            tool=f"{ident}_greet"[:64],
            facility=f"{name}.greetings",
            Config=f"{title}Config",
            description=f"Greetings from {name}",
            hologram_version=__version__,
        )


def check_name(name: str) -> None:
    """A plugin name `hologram build` accepts, or the one-line error saying what would be one."""
    if name == "kernel":
        raise HologramError(Problem("'kernel' is the kernel's own name: choose another plugin name"))
    if not _NAME.match(name):
        suggestion = re.sub(r"[^a-z0-9_-]", "-", name.lower()).strip("-_") or "acme"
        if not suggestion[0].isalpha():
            suggestion = f"p-{suggestion}"
        raise HologramError(
            Problem(
                f"{name!r} is not a plugin name: use lowercase letters, digits, '-' and '_', starting with a letter, "
                f"at most 64 characters (e.g. `hologram new plugin {suggestion[:64]}`)"
            )
        )


def check_target(target: Path) -> None:
    """The directory to write into: new, or empty; anything else is a one-line error with the fix."""
    if target.exists() and not target.is_dir():
        raise HologramError(Problem(f"{target} is a file: name a new directory with --dir DIR"))
    if target.is_dir() and any(target.iterdir()):
        raise HologramError(
            Problem(f"{target} exists and is not empty: name a new or empty directory with --dir DIR (nothing written)")
        )


def _templates(root: Traversable, prefix: str = "") -> list[tuple[str, Traversable]]:
    found: list[tuple[str, Traversable]] = []
    for entry in sorted(root.iterdir(), key=lambda e: e.name):
        relative = f"{prefix}{entry.name}"
        if entry.is_dir():
            found.extend(_templates(entry, relative + "/"))
        elif entry.name.endswith(SUFFIX):
            found.append((relative.removesuffix(SUFFIX), entry))
    return found


def render(lang: str, names: Names) -> dict[str, str]:
    """Relative path → content of every file of a ``lang`` repository for ``names``."""
    values = vars(names)
    root = resources.files("hologram.scaffold").joinpath(lang)
    return {
        Template(path).substitute(values): Template(entry.read_text(encoding="utf-8")).substitute(values)
        for path, entry in _templates(root)
    }


def new_plugin(name: str, target: Path, lang: str = "python") -> list[Path]:
    """Write a plugin repository for ``name`` into ``target`` (new or empty) and return the files written.

    For Python, its config model's JSON Schema is written by `hologram check --write`; a check that then finds
    anything to say is a bug of the templates, raised as an error rather than left for the author to find."""
    check_name(name)
    if lang not in LANGUAGES:
        raise HologramError(Problem(f"unknown language {lang!r}: choose one of {', '.join(LANGUAGES)}"))
    check_target(target)
    files = render(lang, Names.of(name))
    written = []
    for relative, text in files.items():
        path = target / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    if lang == "python":
        from hologram.plan.check import check

        report = check(target, write=True)
        written.extend(report.written)
        if report.errors or report.warnings:  # pragma: no cover - the templates' own test keeps this empty
            problems = [*report.errors, *report.warnings]
            raise HologramError(problems)
    return sorted(written)
