"""The kit's argument generator on real schemas: every tool of the built-in plugins, and the keywords it promises.

Each generated valid call must pass the kernel's validator (Draft 2020-12) and each invalid one must fail it, with
the change that breaks it named; a schema no generated value satisfies is a `CannotGenerate` naming the part.

Mutation check (done): `_number` ignoring ``minimum`` turned
``test_every_built_in_tool_gets_valid_and_invalid_calls`` and the ``minimum`` case of ``test_the_keywords_it_promises``
red.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from hologram.manifest import load_manifest
from hologram.testing.arguments import CannotGenerate, invalid_arguments, valid_arguments

MANIFESTS = sorted((Path(__file__).resolve().parents[2] / "manifests").glob("*.toml"))


def built_in_tools() -> list[tuple[str, dict[str, Any]]]:
    found = []
    for path in MANIFESTS:
        for tool in load_manifest(path).manifest.tools:
            found.append((tool.name, dict(tool.parameters)))
    return found


def test_every_built_in_tool_gets_valid_and_invalid_calls() -> None:
    tools = built_in_tools()
    assert len(tools) > 10
    for name, schema in tools:
        validator = Draft202012Validator(schema)
        try:
            valid = valid_arguments(schema)
        except CannotGenerate as exc:  # only a pattern is beyond the generator
            assert "does not match" in str(exc), (name, str(exc))
            continue
        assert valid, name
        for arguments in valid:
            assert validator.is_valid(arguments), (name, arguments)
        for invalid in invalid_arguments(schema, valid[-1]):
            assert not validator.is_valid(invalid.arguments), (name, invalid)
        required = schema.get("required") or []
        if required:
            assert valid[0].keys() == set(required) or len(valid) == 1, (name, valid)
            assert any("left out" in c.broken for c in invalid_arguments(schema, valid[-1])), name


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        (
            {"type": "object", "properties": {"n": {"type": "integer", "minimum": 5, "maximum": 9}}, "required": ["n"]},
            [{"n": 5}],
        ),
        (
            {"type": "object", "properties": {"x": {"type": "number", "exclusiveMinimum": 0, "maximum": 1}}},
            [{}, {"x": 1.0}],
        ),
        ({"type": "object", "properties": {"m": {"enum": ["a", "b"]}}, "required": ["m"]}, [{"m": "a"}, {"m": "b"}]),
        (
            {"type": "object", "properties": {"d": {"type": "string", "format": "date"}}, "required": ["d"]},
            [{"d": "2024-01-31"}],
        ),
        (
            {"type": "object", "properties": {"s": {"type": "string", "minLength": 10}}, "required": ["s"]},
            [{"s": "a" * 10}],
        ),
        (
            {
                "type": "object",
                "properties": {"t": {"type": "array", "items": {"type": "integer"}, "minItems": 2}},
                "required": ["t"],
            },
            [{"t": [1, 1]}, {"t": [2, 2]}],
        ),
        (
            {
                "type": "object",
                "properties": {"u": {"anyOf": [{"type": "null"}, {"type": "boolean"}]}},
                "required": ["u"],
            },
            [{"u": None}],
        ),
        (
            {
                "type": "object",
                "examples": [{"q": "x1"}],
                "properties": {"q": {"type": "string", "pattern": "^x[0-9]$"}},
            },
            [{"q": "x1"}],
        ),
    ],
)
def test_the_keywords_it_promises(schema: dict[str, Any], expected: list[dict[str, Any]]) -> None:
    assert valid_arguments(schema) == expected


def test_a_schema_it_cannot_satisfy_names_the_part() -> None:
    schema = {
        "type": "object",
        "properties": {"code": {"type": "string", "pattern": "^[0-9]{4}$"}},
        "required": ["code"],
    }
    with pytest.raises(
        CannotGenerate, match=r"^code: the generated \{'code': 'example'\} is refused: 'example' does not match"
    ):
        valid_arguments(schema)


def test_the_invalid_calls_say_what_breaks_them() -> None:
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "times": {"type": "integer"}},
        "required": ["name"],
        "additionalProperties": False,
    }
    broken = {c.broken: c.arguments for c in invalid_arguments(schema, {"name": "example", "times": 2})}
    assert broken == {
        "the required 'name' left out": {"times": 2},
        "'name' of the wrong type (integer 12345)": {"name": 12345, "times": 2},
        "an undeclared argument 'not_a_parameter'": {"name": "example", "times": 2, "not_a_parameter": 1},
    }
