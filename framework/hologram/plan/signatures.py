"""`hologram check`: a manifest's tool schemas and the Python handlers' signatures must agree.

The schema is what the model is shown and what the kernel validates arguments against; the signature is
what the call binds to. When they disagree the model is invited to send what the handler refuses (a name the
signature lacks, a required parameter the schema lets it omit) and every such call fails with ``bad
arguments`` at run time. Checked: the tool names, each parameter's name, its required-ness, and its basic
JSON type against the annotation (``str``/``int``/``float``/``bool``/``list``/``dict``, unions, ``None``,
``Literal``); anything else is not claimed about. The Python side comes from a child process
(`hologram.sdk._describe`), so importing a plugin never runs its code inside the checker.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hologram.base.errors import Problem
from hologram.manifest import Manifest

DESCRIBE_TIMEOUT_S = 60.0


def python_module(manifest: Manifest) -> str | None:
    """The module an SDK plugin lives in, or None for a `command` plugin (any language: nothing to compare)."""
    return manifest.plugin.run.module or manifest.plugin.run.inproc


def describe_modules(modules: Iterable[str], paths: Iterable[Path]) -> dict[str, dict[str, Any]]:
    """Each module's tools as `hologram.sdk._describe` sees them; ``paths`` go first on the child's path
    (a plugin repository's ``src/``, so a plugin that is not installed can be checked)."""
    names = sorted(set(modules))
    if not names:
        return {}
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*(str(p) for p in paths), *filter(None, [env.get("PYTHONPATH")])])
    command = [sys.executable, "-m", "hologram.sdk._describe", *names]
    try:
        done = subprocess.run(
            command, env=env, capture_output=True, text=True, timeout=DESCRIBE_TIMEOUT_S, stdin=subprocess.DEVNULL
        )
        answer = json.loads(done.stdout.strip().splitlines()[-1])
    except (subprocess.TimeoutExpired, json.JSONDecodeError, IndexError, OSError) as exc:
        reason = f"{type(exc).__name__}: {exc}" + (f"; stderr: {done.stderr[-500:]}" if "done" in locals() else "")
        return {name: {"error": f"describing the plugin failed: {reason}"} for name in names}
    return dict(answer)


def _schema_types(schema: Any) -> set[str] | None:
    if not isinstance(schema, dict) or "type" not in schema:
        return None
    kind = schema["type"]
    return {kind} if isinstance(kind, str) else {str(k) for k in kind}


def tool_problems(manifest: Manifest, path: Path, described: dict[str, Any]) -> tuple[list[Problem], list[Problem]]:
    """(errors, warnings) of one manifest against what its module's handlers accept."""
    module = python_module(manifest)
    if module is None:
        return [], []
    if "error" in described:
        hint = "install the plugin (pip install -e .) or check it from its repository, where src/ is on the path"
        warning = Problem(
            f"cannot compare the tool schemas with {module}: {described['error']}",
            file=str(path),
            key="plugin.run",
            hint=hint,
        )
        return [], [warning]
    handlers: dict[str, Any] = described.get("tools", {})
    errors: list[Problem] = []
    warnings: list[Problem] = []
    for index, tool in enumerate(manifest.tools):
        key = f"tools[{index}] ({tool.name})"
        handler = handlers.get(tool.name)
        if handler is None:
            errors.append(
                Problem(
                    f"{module} has no handler for tool {tool.name!r}",
                    file=str(path),
                    key=key,
                    hint=f'decorate its function with @plugin.tool("{tool.name}"), or remove the [[tools]] entry',
                )
            )
            continue
        found, soft = _compare(tool.parameters, handler, f"{path}", key)
        errors.extend(found)
        warnings.extend(soft)
    return errors, warnings


def _compare(
    schema: dict[str, Any], handler: dict[str, Any], file: str, key: str
) -> tuple[list[Problem], list[Problem]]:
    properties: dict[str, Any] = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    parameters: dict[str, Any] = handler["parameters"]
    function = handler["handler"]
    errors: list[Problem] = []
    warnings: list[Problem] = []

    def error(parameter: str, message: str, hint: str) -> None:
        errors.append(Problem(message, file=file, key=f"{key}.parameters.{parameter}", hint=hint))

    for name in properties:
        if name not in parameters and not handler["var_keyword"]:
            error(
                name,
                f"the schema has parameter {name!r}, which {function}() does not take",
                f"add `{name}` to the function's parameters, or remove it from the schema's properties",
            )
    for name, accepts in parameters.items():
        if name not in properties:
            if accepts["required"]:
                error(
                    name,
                    f"{function}() requires {name!r}, which the schema does not list: the model cannot send it",
                    f"add {name!r} to the schema's properties and required, or give it a default",
                )
            continue
        if accepts["required"] and name not in required:
            error(
                name,
                f"{name!r} is optional in the schema but {function}() requires it (no default)",
                f"add {name!r} to the schema's required list, or give the parameter a default",
            )
        elif name in required and not accepts["required"]:
            warnings.append(
                Problem(
                    f"{name!r} is required in the schema but has a default in {function}()",
                    file=file,
                    key=f"{key}.parameters.{name}",
                    hint="drop the default, or drop the parameter from required if the model may omit it",
                )
            )
        declared = _schema_types(properties[name])
        python = None if accepts["types"] is None else set(accepts["types"])
        if declared is None or python is None:
            continue
        refused = sorted(t for t in declared if t not in python and not (t == "integer" and "number" in python))
        if refused:
            error(
                name,
                f"the schema lets {name!r} be {', '.join(refused)}, which {function}()'s annotation "
                f"({', '.join(sorted(python))}) does not accept",
                "make the schema's type and the annotation agree (string ↔ str, integer ↔ int, number ↔ float, "
                "boolean ↔ bool, array ↔ list, object ↔ dict, null ↔ None)",
            )
    return errors, warnings
