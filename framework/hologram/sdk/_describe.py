"""What a plugin's tool handlers accept, and its config model's JSON Schema, as JSON: the Python half of
`hologram check`'s signature and config-schema checks.

A tool's parameters are written twice, as JSON Schema in the manifest (what the model is shown and the kernel
validates) and as the handler's signature (what the call binds to). `hologram check` runs
``python -m hologram.sdk._describe MODULE...`` in a child process — importing a plugin runs its code, which
must not happen inside the checker, and the child gets the plugin repository on its path — and compares the
two (`hologram.plan.signatures`).
"""

from __future__ import annotations

import importlib
import inspect
import sys
import typing
from typing import Any

from hologram.base import _fastjson as _json
from hologram.sdk._jsontypes import json_types
from hologram.sdk._plugin import Plugin, ToolSpec


def describe_tool(spec: ToolSpec) -> dict[str, Any]:
    handler = spec.handler
    try:
        hints = typing.get_type_hints(handler)
    except Exception:  # an annotation that does not resolve: check names and required-ness only
        hints = {}
    parameters: dict[str, Any] = {}
    var_keyword = False
    for name, parameter in inspect.signature(handler).parameters.items():
        if name == "ctx":
            continue  # the ToolContext the SDK passes, not an argument of the model
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            var_keyword = True
            continue
        if parameter.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.POSITIONAL_ONLY):
            continue  # the SDK passes arguments by keyword only
        known = json_types(hints.get(name, inspect.Parameter.empty))
        parameters[name] = {
            "required": parameter.default is inspect.Parameter.empty,
            "types": None if known is None else sorted(known),
        }
    return {
        "handler": f"{handler.__module__}.{handler.__qualname__}",
        "parameters": parameters,
        "var_keyword": var_keyword,
    }


def find_plugin(module_name: str) -> Plugin[Any]:
    """The module's ``plugin``: in the package itself, or in its ``__main__`` (the layout of
    docs/examples/hologram-weather, whose ``__main__`` only runs the plugin when run as a program)."""
    module = importlib.import_module(module_name)
    plugin = getattr(module, "plugin", None)
    if not isinstance(plugin, Plugin) and hasattr(module, "__path__"):
        plugin = getattr(importlib.import_module(f"{module_name}.__main__"), "plugin", None)
    if not isinstance(plugin, Plugin):
        raise LookupError(f"{module_name} has no module-level `plugin = Plugin(...)`")
    return plugin


def describe(module_name: str) -> dict[str, Any]:
    try:
        plugin = find_plugin(module_name)
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
    described: dict[str, Any] = {"tools": {name: describe_tool(spec) for name, spec in plugin.tools.items()}}
    if plugin.config_model is not None:  # what `hologram check --write` publishes beside the manifest
        try:
            described["config_schema"] = plugin.config_model.model_json_schema()
        except Exception as exc:  # a field pydantic cannot express in JSON Schema: said, not a traceback
            described["config_schema_error"] = f"{type(exc).__name__}: {exc}"
    return described


def main(argv: list[str]) -> int:
    out = sys.stdout
    sys.stdout = sys.stderr  # a plugin that prints while it is imported must not corrupt the answer
    try:
        described = {name: describe(name) for name in argv}
    finally:
        sys.stdout = out
    out.write(_json.dumps(described) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
