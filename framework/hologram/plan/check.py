"""`hologram check`: lint a manifest or a whole plugin repository, for third-party plugins' CI.

Errors are what `hologram build` would reject, and tool schemas that disagree with the Python handlers'
signatures (`hologram.plan.signatures`: each such call would fail at run time); warnings are what makes a plugin
worse to use (a model cannot use a tool well without descriptions) but still works.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import tomli

from hologram.base.errors import HologramError, Problem
from hologram.manifest import Manifest, load_manifest
from hologram.manifest.discovery import DEFAULT_MANIFEST_FILE, ENTRY_POINT_GROUP
from hologram.plan.signatures import describe_modules, python_module, tool_problems


@dataclass
class CheckReport:
    checked: list[Path] = field(default_factory=list)
    errors: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)


def _warnings(manifest: Manifest, path: Path) -> list[Problem]:
    found = []
    if not manifest.plugin.description:
        found.append(Problem("no description", file=str(path), key="plugin.description"))
    for index, tool in enumerate(manifest.tools):
        properties = tool.parameters.get("properties", {})
        undocumented = sorted(
            name for name, schema in properties.items() if isinstance(schema, dict) and "description" not in schema
        )
        if tool.parameters.get("additionalProperties") is not False:
            found.append(
                Problem(
                    "the parameters schema accepts keys it does not list",
                    file=str(path),
                    key=f"tools[{index}].parameters",
                    hint="set additionalProperties = false, so an invented argument is refused before the call "
                    "(and before any approval prompt) instead of failing inside the tool",
                )
            )
        if undocumented:
            found.append(
                Problem(
                    f"parameters without a description: {', '.join(undocumented)}",
                    file=str(path),
                    key=f"tools[{index}].parameters",
                    hint="models call tools far more reliably when every parameter is described",
                )
            )
    return found


def _check_file(path: Path, report: CheckReport) -> Manifest | None:
    report.checked.append(path)
    try:
        loaded = load_manifest(path)
    except HologramError as exc:
        report.errors.extend(exc.problems)
        return None
    report.warnings.extend(_warnings(loaded.manifest, path))
    return loaded.manifest


def _check_signatures(manifests: list[tuple[Path, Manifest]], repo: Path | None, report: CheckReport) -> None:
    """One child process describes every SDK plugin's handlers; each manifest is compared with its module."""
    modules = {path: python_module(manifest) for path, manifest in manifests}
    roots = [repo / "src", repo] if repo is not None else []
    roots += [path.parent.parent for path in modules]  # a manifest kept in its package: the package's parent
    described = describe_modules(filter(None, modules.values()), dict.fromkeys(roots))
    for path, manifest in manifests:
        module = modules[path]
        if module is not None:
            errors, warnings = tool_problems(manifest, path, described.get(module, {"error": "not described"}))
            report.errors.extend(errors)
            report.warnings.extend(warnings)


def _entry_point_manifests(repo: Path, report: CheckReport) -> list[Path]:
    pyproject = repo / "pyproject.toml"
    if not pyproject.is_file():
        return []
    try:
        data = tomli.loads(pyproject.read_text(encoding="utf-8"))
    except tomli.TOMLDecodeError as exc:
        report.errors.append(Problem(f"invalid TOML: {exc}", file=str(pyproject)))
        return []
    entries = data.get("project", {}).get("entry-points", {}).get(ENTRY_POINT_GROUP, {})
    paths = []
    for name, value in sorted(entries.items()):
        package, _, relative = str(value).partition(":")
        candidates = [repo / "src" / package.replace(".", "/"), repo / package.replace(".", "/")]
        package_dir = next((c for c in candidates if c.is_dir()), None)
        if package_dir is None:
            report.errors.append(
                Problem(
                    f"entry point {name!r} names package {package!r}, which is not in this repository",
                    file=str(pyproject),
                    key=f'project.entry-points."{ENTRY_POINT_GROUP}".{name}',
                )
            )
            continue
        manifest = package_dir / (relative or DEFAULT_MANIFEST_FILE)
        if not manifest.is_file():
            report.errors.append(
                Problem(
                    f"entry point {name!r}: the package has no manifest at {manifest.relative_to(repo)}",
                    file=str(pyproject),
                    hint=f"put {DEFAULT_MANIFEST_FILE} in the package and ship it as package data",
                )
            )
            continue
        paths.append(manifest)
    return paths


def check(path: Path) -> CheckReport:
    """Lint one manifest file, or every manifest a plugin repository declares or keeps in manifests/."""
    report = CheckReport()
    if path.is_file():
        manifest = _check_file(path, report)
        if manifest is not None:
            _check_signatures([(path, manifest)], None, report)
        return report
    if not path.is_dir():
        report.errors.append(Problem("no such file or directory", file=str(path)))
        return report
    files = set(_entry_point_manifests(path, report))
    files.update(p for p in (path / "manifests").glob("*.toml") if p.is_file())
    if (path / DEFAULT_MANIFEST_FILE).is_file():
        files.add(path / DEFAULT_MANIFEST_FILE)
    if not files and not report.errors:
        report.errors.append(
            Problem(
                "no manifest found",
                file=str(path),
                hint=f"declare an entry point in the '{ENTRY_POINT_GROUP}' group, or add manifests/*.toml",
            )
        )
    loaded = [(file, _check_file(file, report)) for file in sorted(files)]
    _check_signatures([(file, manifest) for file, manifest in loaded if manifest is not None], path, report)
    return report
