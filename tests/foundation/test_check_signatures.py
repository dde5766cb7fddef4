"""`hologram check` proves a manifest's tool schemas and the Python handlers' signatures agree.

Mutation checks (done): skipping the "schema parameter not in the signature" loop, treating ``integer`` as
accepted by ``str``, or not reporting a required Python parameter missing from the schema each turn
``test_each_disagreement_is_an_error_naming_file_tool_and_parameter`` red; a describe child that answers
``{"error": ...}`` for every module turns ``test_the_builtins_agree_and_were_compared`` red.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any, Literal

import pytest

from hologram.manifest import load_manifest
from hologram.plan.check import check
from hologram.plan.signatures import describe_modules, python_module
from hologram.sdk._describe import json_types

ROOT = Path(__file__).resolve().parents[2]

MANIFEST = """
[plugin]
name = "sigs"
version = "0.1.0"
description = "signature check fixture"
run = { module = "sigplug" }

[[tools]]
name = "forecast"
description = "a forecast"
[tools.parameters]
type = "object"
additionalProperties = false
required = ["city"]
properties.city = { type = "string", description = "city" }
properties.days = { type = "integer", description = "days ahead" }
properties.units = { type = "string", description = "units" }
properties.extra = { type = "string", description = "not in the signature" }

[[tools]]
name = "agrees"
description = "schema and signature agree"
[tools.parameters]
type = "object"
additionalProperties = false
required = ["n"]
properties.n = { type = "integer", description = "a count" }
properties.ratio = { type = ["number", "null"], description = "a ratio" }
properties.mode = { type = "string", description = "a mode" }

[[tools]]
name = "ghost"
description = "declared, never implemented"
parameters = { type = "object", properties = {}, additionalProperties = false }
"""

PLUGIN = """
from typing import Literal

from hologram.sdk import Plugin, ToolContext

plugin = Plugin("sigs")


@plugin.tool("forecast")
def forecast(city: str, days: str = "1", *, units: str, hours: int, ctx: ToolContext) -> str:
    return city


@plugin.tool("agrees")
def agrees(n: int, ratio: float | None = None, mode: Literal["a", "b"] = "a") -> str:
    return str(n)
"""


def _repo(tmp_path: Path) -> Path:
    (tmp_path / "manifests").mkdir()
    (tmp_path / "manifests" / "sigs.toml").write_text(textwrap.dedent(MANIFEST), encoding="utf-8")
    (tmp_path / "src" / "sigplug").mkdir(parents=True)
    (tmp_path / "src" / "sigplug" / "__init__.py").write_text(PLUGIN, encoding="utf-8")
    return tmp_path


def test_the_builtins_agree_and_were_compared() -> None:
    report = check(ROOT)
    assert (
        len(report.checked) == len(list((ROOT / "manifests").glob("*.toml")))
        and not report.errors
        and not report.warnings
    ), (report.errors, report.warnings)
    manifests = [load_manifest(path).manifest for path in report.checked]
    described = describe_modules([m for m in map(python_module, manifests) if m], [])
    for manifest in manifests:
        tools = described[str(python_module(manifest))].get("tools")
        assert tools is not None, described[str(python_module(manifest))]
        assert {t.name for t in manifest.tools} <= set(tools), manifest.plugin.name


def test_each_disagreement_is_an_error_naming_file_tool_and_parameter(tmp_path: Path) -> None:
    report = check(_repo(tmp_path))
    manifest = str(tmp_path / "manifests" / "sigs.toml")
    found = {(p.key, p.message) for p in report.errors}
    assert all(p.file == manifest for p in report.errors)
    handler = "sigplug.forecast()"
    assert found == {
        (
            "tools[0] (forecast).parameters.extra",
            f"the schema has parameter 'extra', which {handler} does not take",
        ),
        (
            "tools[0] (forecast).parameters.hours",
            f"{handler} requires 'hours', which the schema does not list: the model cannot send it",
        ),
        (
            "tools[0] (forecast).parameters.units",
            f"'units' is optional in the schema but {handler} requires it (no default)",
        ),
        (
            "tools[0] (forecast).parameters.days",
            f"the schema lets 'days' be integer, which {handler}'s annotation (string) does not accept",
        ),
        ("tools[2] (ghost)", "sigplug has no handler for tool 'ghost'"),
    }
    rendered = "\n".join(p.render() for p in report.errors)
    assert f"{manifest}: error: tools[0] (forecast).parameters.extra:" in rendered
    assert "hint: add `extra` to the function's parameters" in rendered
    assert not any("agrees" in (p.key or "") for p in [*report.errors, *report.warnings])


def test_a_required_schema_parameter_with_a_python_default_is_a_warning(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    source = repo / "src" / "sigplug" / "__init__.py"
    source.write_text(source.read_text().replace("def agrees(n: int,", "def agrees(n: int = 0,"))
    warnings = [p for p in check(repo).warnings if "agrees" in (p.key or "")]
    assert [p.message for p in warnings] == ["'n' is required in the schema but has a default in sigplug.agrees()"]


def test_a_plugin_that_cannot_be_imported_is_a_warning_not_a_crash(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    (repo / "src" / "sigplug" / "__init__.py").write_text("import not_a_module_anywhere\n")
    report = check(repo)
    assert not report.errors
    assert len(report.warnings) == 1
    assert report.warnings[0].key == "plugin.run"
    assert "cannot compare the tool schemas with sigplug: ModuleNotFoundError" in report.warnings[0].message


@pytest.mark.parametrize(
    ("annotation", "expected"),
    [
        (str, {"string"}),
        (int, {"integer"}),
        (float, {"number", "integer"}),
        (bool, {"boolean"}),
        (list[str], {"array"}),
        (dict[str, Any], {"object"}),
        (str | None, {"string", "null"}),
        (Literal["a", 1], {"string", "integer"}),
        (Any, None),
        (int | Any, None),
        (Path, None),
    ],
)
def test_annotations_map_to_json_types(annotation: Any, expected: set[str] | None) -> None:
    assert json_types(annotation) == expected
