"""`hologram.manifest.schema_check` against `jsonschema`'s meta-schema check: every schema the fast path calls valid is
valid for `Draft202012Validator.check_schema` (property-based, over schemas built from the subset's keywords
with right and wrong values), and a schema outside the subset still gets jsonschema's verdict and message.

Mutation checks (done): letting `_type_list` accept duplicates, or `_count` accept negative numbers, turns
``test_plainly_valid_implies_metaschema_valid`` red; returning True for unknown keywords turns
``test_outside_the_subset_jsonschema_decides`` red."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import tomli
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from hologram.manifest.discovery import builtin_manifest_dir
from hologram.manifest.schema_check import _plainly_valid, schema_problem

KEYS = st.sampled_from(["a", "b", "x"])
TYPES = st.sampled_from(["string", "integer", "number", "boolean", "object", "array", "null", "bogus"])
ANY = st.none() | st.booleans() | st.integers(-3, 3) | st.floats(allow_nan=True) | st.text(max_size=2)


def schema_of(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Schemas of the subset's keywords, with values right and (often) wrong for the meta-schema."""
    return st.fixed_dictionaries(
        {},
        optional={
            "type": TYPES | st.lists(TYPES, max_size=3) | ANY,
            "properties": st.dictionaries(KEYS, inner, max_size=3) | ANY,
            "required": st.lists(KEYS | st.integers(0, 1), max_size=3) | ANY,
            "additionalProperties": inner | ANY,
            "items": inner | st.lists(inner, max_size=2),
            "enum": st.lists(ANY, max_size=3) | ANY,
            "minLength": ANY,
            "maxItems": ANY,
            "minimum": ANY,
            "description": ANY,
            "deprecated": ANY,
            "default": ANY,
            "pattern": st.sampled_from(["^a", "(", 3]),
            "$ref": st.sampled_from(["#", "#/nope"]),
        },
    )


schemas = st.recursive(st.booleans() | schema_of(st.booleans()), schema_of, max_leaves=6)


def metaschema_valid(schema: Any) -> bool:
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError:
        return False
    return True


@settings(max_examples=1500, deadline=None)
@given(schemas)
def test_plainly_valid_implies_metaschema_valid(schema: Any) -> None:
    if _plainly_valid(schema):
        assert metaschema_valid(schema)
    assert (schema_problem(schema) is None) == metaschema_valid(schema)


def test_shipped_tool_schemas_take_the_fast_path() -> None:
    """Every tool schema the shipped manifests declare is in the subset: `up` never imports jsonschema for
    them (the point of the module)."""
    root = builtin_manifest_dir()
    seen = 0
    for path in sorted(root.glob("*.toml")):
        for tool in tomli.loads(path.read_text(encoding="utf-8")).get("tools", []):
            if "parameters" in tool:
                seen += 1
                assert _plainly_valid(tool["parameters"]), (path.name, tool["name"])
    assert seen >= 10


def test_outside_the_subset_jsonschema_decides() -> None:
    assert not _plainly_valid({"type": "object", "$ref": "#"})
    assert schema_problem({"type": "object", "$ref": "#"}) is None  # valid, via jsonschema
    assert not _plainly_valid({"type": "string", "pattern": "("})
    problem = schema_problem({"type": "string", "pattern": "("})
    assert problem is not None and "regex" in problem


def test_a_plain_schema_does_not_import_jsonschema() -> None:
    code = (
        "import sys; from hologram.manifest.schema_check import schema_problem; "
        "assert schema_problem({'type': 'object', 'properties': {'p': {'type': 'string', 'minLength': 1}}, "
        "'required': ['p'], 'additionalProperties': False}) is None; "
        "print('jsonschema' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "False"
