"""Is a tool's parameters schema a valid JSON Schema (Draft 2020-12)? Without importing `jsonschema` when the
schema is plainly valid.

Why. `hologram up` checked every tool schema against the 2020-12 meta-schema three times before its first
answer — reading the lock, the staleness check's manifests, and the first turn's tool registry — and each
check needed `jsonschema` imported (~60-110 ms, most of it `referencing` and the meta-schemas) plus ~1.7 ms
per schema: on the default graph (19 tools) ~0.15 s of the kernel's single core before it could answer
(docs/performance.md, "up → first answer").

So `schema_problem` first asks `_plainly_valid`: a schema built only of the keywords tool schemas use
(``type``, ``properties``, ``required``, ``additionalProperties``, ``items``, ``enum``, ``const``, the
numeric and length bounds, annotations), each with a value the meta-schema accepts, is valid — no import.
Anything else (another keyword, a value of the wrong shape) goes to `jsonschema.Draft202012Validator
.check_schema` as before, which also writes the message. The fast path only ever answers "valid"; a gap in
it costs the import, never a wrong verdict — provided its "valid" is valid for `jsonschema` too, which
tests/foundation/test_schema_check.py checks property-based against the meta-schema itself.

Mutation checks (done): accepting a ``type`` list with duplicates, or a negative ``minLength``, turns
``test_plainly_valid_implies_metaschema_valid`` red.
"""

from __future__ import annotations

from typing import Any

TYPES = frozenset({"string", "integer", "number", "boolean", "object", "array", "null"})
_STRINGS = frozenset({"description", "title", "$comment"})  # not `pattern`: a regex jsonschema must compile
_BOOLEANS = frozenset({"deprecated", "readOnly", "writeOnly", "uniqueItems"})
_NUMBERS = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
_COUNTS = frozenset({"minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"})
_ANY = frozenset({"default", "const"})
_SUBSCHEMA = frozenset({"additionalProperties", "items"})


def schema_problem(schema: Any) -> str | None:
    """None if ``schema`` is a valid Draft 2020-12 schema, else what is wrong with it (jsonschema's message)."""
    if _plainly_valid(schema):
        return None
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        return str(exc.message)
    return None


def _count(value: Any) -> bool:
    return type(value) is int and value >= 0


def _number(value: Any) -> bool:
    return type(value) in (int, float) and value == value and value not in (float("inf"), float("-inf"))


def _plainly_valid(schema: Any, depth: int = 0) -> bool:
    """True only for schemas of the common subset whose every keyword has a value the meta-schema accepts."""
    if type(schema) is bool:
        return True
    if type(schema) is not dict or depth > 32:
        return False
    for key, value in schema.items():
        if key == "type":
            ok = value in TYPES if type(value) is str else _type_list(value)
        elif key == "properties":
            ok = type(value) is dict and all(_plainly_valid(sub, depth + 1) for sub in value.values())
        elif key == "required":
            ok = type(value) is list and all(type(v) is str for v in value) and len(set(value)) == len(value)
        elif key in _SUBSCHEMA:
            ok = _plainly_valid(value, depth + 1)
        elif key in ("enum", "examples"):
            ok = type(value) is list
        elif key in _STRINGS:
            ok = type(value) is str
        elif key in _BOOLEANS:
            ok = type(value) is bool
        elif key in _NUMBERS:
            ok = _number(value)
        elif key in _COUNTS:
            ok = _count(value)
        elif key in _ANY:
            ok = True
        else:
            ok = False  # a keyword outside the subset: jsonschema decides
        if not ok:
            return False
    return True


def _type_list(value: Any) -> bool:
    return (
        type(value) is list
        and len(value) > 0
        and all(type(v) is str and v in TYPES for v in value)
        and len(set(value)) == len(value)
    )
