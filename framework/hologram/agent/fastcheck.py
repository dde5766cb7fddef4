"""A fast yes/no check of tool arguments for the JSON Schema subset tools actually use.

`jsonschema` costs ~23 µs to validate ``{"x": 3}`` against a three-keyword schema — a third of the kernel's
whole per-call overhead in tools/bench/turn.py. Most tool schemas use only ``type``, ``properties``,
``required``, ``additionalProperties``, ``items``, numeric bounds and annotations; for those, `compile_check`
builds a plain predicate (~1–2 µs) with Draft 2020-12's semantics. It only ever answers "valid": when it says no, or
the schema uses any other keyword (``enum``, ``pattern``, ``multipleOf``, ``$ref``, …: `compile_check` returns
None), the caller runs `jsonschema` as before, which also writes the message the model sees. So a gap in
this module can cost speed, never a wrong verdict — provided a "valid" here is valid for `jsonschema` too,
which tests/agent/test_fastcheck.py checks by property-based comparison against `Draft202012Validator`.

Mutation checks (done): treating ``True`` as an ``integer`` (dropping the bool exclusion in `_is_integer`),
or ignoring ``additionalProperties: false``, turns the comparison test red.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Check = Callable[[Any], bool]

_ANNOTATIONS = frozenset(
    {"description", "title", "default", "examples", "$comment", "deprecated", "readOnly", "writeOnly"}
)
_BOUNDS = {
    "minimum": lambda value, bound: value >= bound,
    "maximum": lambda value, bound: value <= bound,
    "exclusiveMinimum": lambda value, bound: value > bound,
    "exclusiveMaximum": lambda value, bound: value < bound,
}
"""Numeric bounds (Draft 2020-12: numbers only, every other type passes). `files_list`'s ``max_entries`` has
``minimum`` and ``maximum``: without them every call of it went to `jsonschema`, whose first few hundred
validations in a process also fill lookup caches — made in the middle of a long turn, they kept some of its
freed memory (docs/memory.md, "Fifth round")."""
_KEYWORDS = frozenset({"type", "properties", "required", "additionalProperties", "items", *_BOUNDS})


def _is_integer(value: Any) -> bool:
    kind = type(value)
    if kind is int:
        return True
    if kind is bool:  # bool is an int subclass in Python, never a number in JSON Schema
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# one predicate per JSON type; a single-type schema (the common case) uses its predicate directly (~0.1 µs)
_TYPE_CHECKS: dict[str, Check] = {
    "string": lambda value: isinstance(value, str),
    "object": lambda value: isinstance(value, dict),
    "array": lambda value: isinstance(value, list),
    "null": lambda value: value is None,
    "boolean": lambda value: isinstance(value, bool),
    "integer": _is_integer,
    "number": _is_number,
}


def compile_check(schema: Any) -> Check | None:
    """A predicate that is True only for instances Draft 2020-12 accepts; None if the schema is outside
    the subset (the caller then validates with `jsonschema` alone)."""
    if schema is True:
        return lambda value: True
    if schema is False:
        return lambda value: False
    if not isinstance(schema, dict) or not set(schema) - _ANNOTATIONS <= _KEYWORDS:
        return None
    checks: list[Check] = []
    if "type" in schema:
        kinds = schema["type"]
        kinds = [kinds] if isinstance(kinds, str) else kinds
        if not isinstance(kinds, list) or not kinds or not all(k in _TYPE_CHECKS for k in kinds):
            return None
        predicates = tuple(_TYPE_CHECKS[k] for k in kinds)
        checks.append(predicates[0] if len(predicates) == 1 else lambda value: any(p(value) for p in predicates))
    properties: dict[str, Check] = {}
    if "properties" in schema:
        if not isinstance(schema["properties"], dict):
            return None
        for name, sub in schema["properties"].items():
            check = compile_check(sub)
            if check is None:
                return None
            properties[name] = check
    required: tuple[str, ...] = ()
    if "required" in schema:
        if not isinstance(schema["required"], list) or not all(isinstance(n, str) for n in schema["required"]):
            return None
        required = tuple(schema["required"])
    additional: Check | None = None
    if "additionalProperties" in schema:
        additional = compile_check(schema["additionalProperties"])
        if additional is None:
            return None
    if properties or required or additional is not None:
        checks.append(_object_check(properties, required, additional))
    for keyword, compare in _BOUNDS.items():
        if keyword in schema:
            bound = schema[keyword]
            if not _is_number(bound):
                return None
            checks.append(_bound_check(compare, bound))
    if "items" in schema:
        items = compile_check(schema["items"])
        if items is None:
            return None
        checks.append(lambda value: not isinstance(value, list) or all(items(v) for v in value))
    if len(checks) == 1:
        return checks[0]
    return _all_of(tuple(checks))


def _bound_check(compare: Callable[[Any, Any], bool], bound: int | float) -> Check:
    def check(value: Any) -> bool:
        return not _is_number(value) or compare(value, bound)

    return check


def _all_of(checks: tuple[Check, ...]) -> Check:
    def check(value: Any) -> bool:
        for one in checks:  # noqa: SIM110 — a plain loop: `all(<generator>)` costs a generator per call
            if not one(value):
                return False
        return True

    return check


def _object_check(properties: dict[str, Check], required: tuple[str, ...], additional: Check | None) -> Check:
    def check(value: Any) -> bool:
        if not isinstance(value, dict):
            return True  # object keywords do not apply to other types
        for name in required:
            if name not in value:
                return False
        for name, item in value.items():
            sub = properties.get(name)
            if sub is not None:
                if not sub(item):
                    return False
            elif additional is not None and not additional(item):
                return False
        return True

    return check
