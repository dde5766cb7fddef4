"""`hologram check`: lint a manifest or a whole plugin repository, for third-party plugins' CI.

Errors are what `hologram build` would reject, and tool schemas that disagree with the Python handlers'
signatures (`hologram.plan.signatures`: each such call would fail at run time); warnings are what makes a plugin
worse to use (a model cannot use a tool well without descriptions) but still works.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
    written: list[Path] = field(default_factory=list)  # config schemas `--write` (re)wrote


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


def schema_text(schema: dict[str, Any]) -> str:
    """How a config schema file is written: sorted and indented, so it diffs well and a rewrite is a no-op."""
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _check_config_schema(
    path: Path, manifest: Manifest, described: dict[str, Any], write: bool, report: CheckReport
) -> None:
    """The manifest's ``plugin.config_schema`` file against the JSON Schema of the plugin's config model.

    The schema is published as a file beside the manifest because `hologram build` must not import plugin
    code: build copies the file into the lock, and this check (or ``--write``) keeps it equal to the model."""
    if "error" in described:
        return  # the signature check already warned that the module could not be described
    module = python_module(manifest)
    name = manifest.plugin.config_schema
    if "config_schema_error" in described:
        problem = f"{module}'s config model has no JSON Schema: {described['config_schema_error']}"
        report.errors.append(Problem(problem, file=str(path), key="plugin.config_schema"))
        return
    schema = described.get("config_schema")
    if schema is None:
        if name is not None:
            report.warnings.append(
                Problem(
                    f"publishes {name}, but {module} declares no config model",
                    file=str(path),
                    key="plugin.config_schema",
                    hint=f"declare Plugin(..., config=Model) in {module}, or remove the key",
                )
            )
        return
    if name is None:
        report.errors.append(
            Problem(
                f"{module} declares Plugin(config=...), but the manifest does not publish its JSON Schema",
                file=str(path),
                key="plugin.config_schema",
                hint=f'add config_schema = "{manifest.plugin.name}.config.schema.json" under [plugin], then run '
                "`hologram check --write`",
            )
        )
        return
    _check_config_defaults(path, manifest, schema, report)
    target = path.parent / name
    try:
        current = target.read_text(encoding="utf-8")
    except OSError:
        current = None
    wanted = schema_text(schema)
    if current == wanted:
        return
    if write:
        target.write_text(wanted, encoding="utf-8")
        report.written.append(target)
        return
    state = "missing" if current is None else f"not the JSON Schema of {module}'s config model (out of date)"
    report.errors.append(
        Problem(
            f"{name} is {state}",
            file=str(path),
            key="plugin.config_schema",
            hint="run `hologram check --write` to write it from the model, and commit it",
        )
    )


def _check_config_defaults(path: Path, manifest: Manifest, schema: dict[str, Any], report: CheckReport) -> None:
    """The manifest's ``[config]`` defaults against the config model's schema: a default the model refuses
    would fail every start that does not override it, so it is an error here, at the line of the default."""
    from jsonschema import Draft202012Validator

    from hologram.manifest.locate import locate

    try:
        text = path.read_text(encoding="utf-8")
    except OSError:  # pragma: no cover - the manifest was just loaded from it
        text = ""
    validator = Draft202012Validator(schema)
    for error in sorted(validator.iter_errors(dict(manifest.config)), key=lambda e: list(map(str, e.path))):
        where = ["config", *error.path]
        if error.validator == "additionalProperties":  # the unknown key is in the message, not the path
            unknown = sorted(set(manifest.config) - set(schema.get("properties", {})))
            where = ["config", unknown[0]] if unknown else where
        key = ".".join(str(part) for part in where)
        report.errors.append(
            Problem(
                f"the default is refused by {python_module(manifest)}'s config model: {error.message}",
                file=str(path),
                line=locate(text, where),
                key=key,
                hint="make [config] agree with the model's defaults and constraints",
            )
        )


def _check_signatures(
    manifests: list[tuple[Path, Manifest]], repo: Path | None, report: CheckReport, write: bool = False
) -> None:
    """One child process describes every SDK plugin's handlers; each manifest is compared with its module."""
    modules = {path: python_module(manifest) for path, manifest in manifests}
    roots = [repo / "src", repo] if repo is not None else []
    roots += [path.parent.parent for path in modules]  # a manifest kept in its package: the package's parent
    described = describe_modules(filter(None, modules.values()), dict.fromkeys(roots))
    for path, manifest in manifests:
        module = modules[path]
        if module is not None:
            found = described.get(module, {"error": "not described"})
            errors, warnings = tool_problems(manifest, path, found)
            report.errors.extend(errors)
            report.warnings.extend(warnings)
            _check_config_schema(path, manifest, found, write, report)


def entry_point_manifests(repo: Path, report: CheckReport) -> list[Path]:
    """The manifests a plugin repository's pyproject.toml declares (the 'hologram.plugins' entry points), each
    found in the repository's package (``src/`` layout or flat); problems go to ``report``."""
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


def check(path: Path, *, write: bool = False) -> CheckReport:
    """Lint one manifest file, or every manifest a plugin repository declares or keeps in manifests/.

    ``write``: (re)write each manifest's ``plugin.config_schema`` file from the plugin's config model
    instead of reporting it out of date."""
    report = CheckReport()
    if path.is_file():
        manifest = _check_file(path, report)
        if manifest is not None:
            _check_signatures([(path, manifest)], None, report, write)
        return report
    if not path.is_dir():
        report.errors.append(Problem("no such file or directory", file=str(path)))
        return report
    files = set(entry_point_manifests(path, report))
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
    _check_signatures([(file, manifest) for file, manifest in loaded if manifest is not None], path, report, write)
    return report
