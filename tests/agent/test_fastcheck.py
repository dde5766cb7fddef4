"""`hologram.agent.fastcheck` against `jsonschema` itself: for every schema of the subset it compiles, its
verdict equals `Draft202012Validator.is_valid` on arbitrary JSON values (property-based), so skipping
jsonschema on a fast "valid" can never let bad arguments through.

Mutation checks (done): dropping the bool exclusion in `_is_type` (``True`` counted as an integer) and
ignoring ``additionalProperties`` each turn ``test_same_verdict_as_jsonschema`` red within the default
example budget."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from hologram.agent.fastcheck import compile_check
from hologram.agent.tools import KernelTool, ToolInvocation, ToolRegistry

KEYS = st.sampled_from(["a", "b", "x", "y"])
BOUNDS = st.integers(-3, 3) | st.sampled_from([0.5, 1.0, -1.5, 3.25])
TYPES = st.sampled_from(["string", "integer", "number", "boolean", "object", "array", "null"])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.sampled_from([0.0, 1.0, -2.0, 1.5, 3.25]) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
    max_leaves=8,
)


def schema_of(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.fixed_dictionaries(
        {},
        optional={
            "type": TYPES | st.lists(TYPES, min_size=1, max_size=3, unique=True),
            "properties": st.dictionaries(KEYS, inner, max_size=3),
            "required": st.lists(KEYS, max_size=3, unique=True),
            "additionalProperties": inner,
            "items": inner,
            "description": st.just("annotation"),
            "minimum": BOUNDS,
            "maximum": BOUNDS,
            "exclusiveMinimum": BOUNDS,
            "exclusiveMaximum": BOUNDS,
        },
    )


schemas = st.recursive(st.booleans() | schema_of(st.booleans()), schema_of, max_leaves=6)


@settings(max_examples=600, deadline=None)
@given(schemas, json_values)
def test_same_verdict_as_jsonschema(schema: Any, value: Any) -> None:
    check = compile_check(schema)
    assert check is not None  # everything generated is inside the subset
    assert check(value) == Draft202012Validator(schema).is_valid(value)


def test_numeric_bounds_at_their_edges_as_jsonschema() -> None:
    """files_list's ``max_entries`` (minimum 1, maximum 5000): the edges, either side, and the other types."""
    for keyword in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        for bound in (1, 5000, 1.5):
            schema = {"type": "object", "properties": {"n": {"type": ["integer", "number"], keyword: bound}}}
            check = compile_check(schema)
            assert check is not None
            for n in (bound - 1, bound - 0.5, bound, bound + 0.5, bound + 1, True, "1", None):
                assert check({"n": n}) == Draft202012Validator(schema).is_valid({"n": n}), (keyword, bound, n)


def test_schemas_outside_the_subset_are_left_to_jsonschema() -> None:
    assert compile_check({"type": "string", "enum": ["a"]}) is None
    assert compile_check({"type": "object", "properties": {"n": {"type": "integer", "multipleOf": 2}}}) is None
    assert compile_check({"type": "integer", "minimum": "1"}) is None  # not a number: jsonschema says so
    assert compile_check({"$ref": "#/$defs/x"}) is None
    assert compile_check({"type": "bogus"}) is None


def test_the_registry_still_explains_invalid_arguments() -> None:
    async def handler(arguments: dict[str, Any], inv: ToolInvocation) -> str:
        return ""

    schema = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}
    registry = ToolRegistry()
    registry.add_kernel_tool(KernelTool("t", "t", handler, schema))
    tools = registry.snapshot()
    tool = tools.get("t")
    assert tool is not None
    assert tools.parse(tool, '{"x": 1}') == ({"x": 1}, None)
    value, problem = tools.parse(tool, '{"x": true}')
    assert value is None and problem is not None and "x: True is not of type 'integer'" in problem
