"""The manifest contract: what is accepted, and the exact shape of every error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hologram.base.errors import HologramError
from hologram.manifest import load_manifest, manifest_json_schema_text, parse_manifest
from hologram.manifest.facility import parse_provided, parse_required
from hologram.manifest.model import relevant_content
from hologram.plan.check import check

ROOT = Path(__file__).resolve().parents[2]

DESIGN_EXAMPLE = """
# manifests/notes.toml
[plugin]
name = "notes"                       # unique, [a-z][a-z0-9_-]*
version = "0.1.0"
description = "Markdown notes the model can read and write"
run = { module = "hologram_plugins.notes" }

[facilities]
provides = ["notes.store"]
requires = ["kernel.memory", "kernel.tools"]
after_if_present = ["search.index"]

[stages]
before_output = { order = 50 }
before_toolcall = { order = 10, scope = "own_tools" }

[[tools]]
name = "notes_write"
description = "Create or overwrite a note"
parallel_safe = false
parameters = { type = "object", properties = { title = { type = "string" }, body = { type = "string" } }, required = ["title", "body"] }

[start]
timeout_s = 30
restart = "on-failure"
"""


def errors_of(text: str, file: str = "m.toml") -> list[str]:
    with pytest.raises(HologramError) as caught:
        parse_manifest(text, file)
    return [p.render() for p in caught.value.problems]


def test_design_example_is_valid() -> None:
    manifest = parse_manifest(DESIGN_EXAMPLE, "notes.toml")
    assert manifest.plugin.name == "notes"
    assert manifest.plugin.run.kind == "module"
    assert [str(r) for r in manifest.facilities.required()] == ["kernel.memory", "kernel.tools"]
    assert manifest.stages.hooked()["before_toolcall"].scope == "own_tools"
    assert manifest.tools[0].parameters["required"] == ["title", "body"]
    assert manifest.start.timeout_s == 30


def test_unknown_key_names_file_line_and_key() -> None:
    text = DESIGN_EXAMPLE.replace('restart = "on-failure"', 'restart = "on-failure"\nrestarts = 3')
    (error,) = errors_of(text, "manifests/notes.toml")
    line = text.splitlines().index("restarts = 3") + 1
    assert error.startswith(f"manifests/notes.toml:{line}: error: start.restarts: unknown key")
    assert "hint:" in error


def test_unknown_key_inside_inline_table_is_located() -> None:
    text = DESIGN_EXAMPLE.replace('run = { module = "hologram_plugins.notes" }', 'run = { modul = "x" }')
    errors = errors_of(text)
    line = next(i for i, s in enumerate(text.splitlines(), 1) if s.startswith("run ="))
    assert any(e.startswith(f"m.toml:{line}: error: plugin.run.modul: unknown key") for e in errors)


def test_run_needs_exactly_one_way_to_start() -> None:
    text = DESIGN_EXAMPLE.replace(
        'run = { module = "hologram_plugins.notes" }', 'run = { module = "a", command = ["b"] }'
    )
    (error,) = errors_of(text)
    assert "plugin.run: set exactly one of 'module', 'command' or 'inproc' (found module, command)" in error


def test_toml_syntax_error_has_file_and_line() -> None:
    (error,) = errors_of('[plugin]\nname = "x"\nversion = \n', "bad.toml")
    assert error.startswith("bad.toml:3: error: invalid TOML: ")
    assert "Traceback" not in error


def test_several_errors_reported_together() -> None:
    text = DESIGN_EXAMPLE.replace('name = "notes_write"', 'name = "notes write"').replace(
        'restart = "on-failure"', 'restart = "sometimes"'
    )
    errors = errors_of(text)
    assert len(errors) == 2
    assert any("tools[0].name" in e and "'notes write'" in e for e in errors)
    assert any(
        "start.restart: Input should be 'never', 'on-failure' or 'always' (got 'sometimes')" in e for e in errors
    )


@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        ("Notes", "String should match pattern"),
        ("1notes", "String should match pattern"),
        ("kernel", "'kernel' is reserved for the kernel node"),
    ],
)
def test_invalid_plugin_names(name: str, fragment: str) -> None:
    (error,) = errors_of(DESIGN_EXAMPLE.replace('name = "notes" ', f'name = "{name}" '))
    assert "plugin.name" in error and fragment in error


def test_invalid_facility_names_and_self_require() -> None:
    bad = DESIGN_EXAMPLE.replace('provides = ["notes.store"]', 'provides = ["Notes.Store"]')
    (error,) = errors_of(bad)
    assert "facilities.provides: 'Notes.Store' is not a valid facility name" in error
    selfish = DESIGN_EXAMPLE.replace('requires = ["kernel.memory"', 'requires = ["notes.store", "kernel.memory"')
    (error,) = errors_of(selfish)
    assert "'notes.store' is provided by this plugin itself; a plugin cannot require its own facility" in error
    kernel = DESIGN_EXAMPLE.replace('provides = ["notes.store"]', 'provides = ["kernel.memory"]')
    (error,) = errors_of(kernel)
    assert "facilities under 'kernel.' are provided by the kernel only" in error


def test_scope_own_tools_only_on_tool_stages() -> None:
    bad = DESIGN_EXAMPLE.replace(
        "before_output = { order = 50 }", 'before_output = { order = 50, scope = "own_tools" }'
    )
    (error,) = errors_of(bad)
    assert "before_output: scope 'own_tools' only applies to before_toolcall and after_toolcall" in error


def test_tool_parameters_must_be_an_object_schema() -> None:
    bad = DESIGN_EXAMPLE.replace('parameters = { type = "object",', 'parameters = { type = "array",')
    (error,) = errors_of(bad)
    assert 'tools[0].parameters: the parameters schema must have type = "object"' in error


def test_strict_types_are_not_coerced() -> None:
    (error,) = errors_of(DESIGN_EXAMPLE.replace("timeout_s = 30", 'timeout_s = "30"'))
    assert "start.timeout_s" in error


def test_facility_grammar() -> None:
    assert str(parse_provided("notes.store@1")) == "notes.store@1"
    req = parse_required("notes.store@1")
    assert str(req.spec) == "<2,>=1"
    assert req.accepts(parse_provided("notes.store@1.4"))
    assert not req.accepts(parse_provided("notes.store@2"))
    assert not req.accepts(parse_provided("notes.store")), "an unversioned offer cannot satisfy a range"
    chosen = parse_required("llm.provider:deepseek")
    assert (chosen.name, chosen.provider) == ("llm.provider", "deepseek")


def test_relevant_content_ignores_the_plugin_description_only() -> None:
    """Tool descriptions count since lock version 2: the lock carries them to the model via `hologram up`."""
    base = parse_manifest(DESIGN_EXAMPLE, "a")
    reworded = parse_manifest(DESIGN_EXAMPLE.replace("Markdown notes", "Notes in Markdown"), "a")
    retooled = parse_manifest(DESIGN_EXAMPLE.replace("Create or overwrite", "Write"), "a")
    reordered = parse_manifest(DESIGN_EXAMPLE.replace("order = 50", "order = 60"), "a")
    assert relevant_content(base) == relevant_content(reworded)
    assert relevant_content(base) != relevant_content(retooled)
    assert relevant_content(base) != relevant_content(reordered)


def test_published_schema_matches_model() -> None:
    """docs/manifest.schema.json is generated from the model; regenerate with `make schema`."""
    published = (ROOT / "docs" / "manifest.schema.json").read_text(encoding="utf-8")
    assert published == manifest_json_schema_text(), "schema drifted: run `make schema`"
    schema = json.loads(published)
    assert schema["additionalProperties"] is False
    assert set(schema["properties"]) == {
        "manifest_version",
        "plugin",
        "facilities",
        "stages",
        "tools",
        "start",
        "channel",
        "config",
    }


def test_builtin_manifests_are_valid() -> None:
    for path in sorted((ROOT / "manifests").glob("*.toml")):
        loaded = load_manifest(path, source="builtin")
        assert loaded.name == path.stem, f"{path}: the file name should be the plugin name"
        assert check(path).warnings == [], f"{path}: `hologram check` warns"


def test_published_schema_checks_facility_strings_like_the_model() -> None:
    """Editors use the schema: it must accept every built-in manifest and reject what the model rejects."""
    import tomli
    from jsonschema import Draft202012Validator

    validator = Draft202012Validator(json.loads((ROOT / "docs" / "manifest.schema.json").read_text(encoding="utf-8")))
    for path in sorted((ROOT / "manifests").glob("*.toml")):
        assert not list(validator.iter_errors(tomli.loads(path.read_text(encoding="utf-8")))), path
    base = {"plugin": {"name": "x", "version": "1", "run": {"module": "m"}}}
    good = {"provides": ["notes.store@1.2"], "requires": ["llm.provider:deepseek", "notes.store@>=1,<2"]}
    assert not list(validator.iter_errors({**base, "facilities": good}))
    for bad in ({"requires": ["Bad.Name"]}, {"provides": ["notes.store:x"]}, {"after_if_present": ["a..b"]}):
        assert list(validator.iter_errors({**base, "facilities": bad})), bad
