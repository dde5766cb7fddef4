"""Tool arguments made from a tool's JSON Schema: calls the schema accepts, and calls it refuses.

The conformance kit calls every tool once per example with arguments its schema accepts, and with arguments it
refuses, to see a well-formed result and a tool error. The examples are made here by a small deterministic
generator, documented below, rather than by `hypothesis-jsonschema`: its last release (0.23.1) fails on the
hypothesis this project runs (``AttributeError: 'many' object has no attribute 'more'`` drawing any object
schema), and a conformance run wants a few readable, repeatable calls, not a search.

Valid examples (`valid_arguments`), at most two per tool:

* the schema's own ``examples`` (JSON Schema keyword) are used first, as they are;
* otherwise a *minimal* call (only the required properties) and a *full* one (every property);
* a value is, by keyword: ``const``; the first (minimal) or last (full) of ``enum``; for a string ``"example"``
  (or ``"a"`` repeated to ``minLength`` when that does not fit; ``format`` date, date-time, email, uri, uuid get a
  canned value); for an integer or number the smallest value in ``minimum``/``exclusiveMinimum``…``maximum`` (a
  multiple of ``multipleOf``), else 1 (full: 2, or 1.5 for a number); booleans false/true; arrays of
  ``minItems`` items (full: at least one); objects
  recursively; ``anyOf``/``oneOf`` the first branch that works; a schema without a type gets a string.

Every example is validated against the schema (Draft 2020-12, as the kernel validates calls); a tool whose schema
the generator cannot satisfy (a ``pattern``, a tricky ``allOf``) is reported with the fix: give the schema an
``examples`` list, or pass examples to the kit.

Invalid examples (`invalid_arguments`), each checked to be refused by the schema: a required property left out;
a property of the wrong type; an undeclared property when ``additionalProperties`` is false.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator

_FORMATS = {
    "date": "2024-01-31",
    "date-time": "2024-01-31T12:00:00Z",
    "time": "12:00:00Z",
    "email": "ada@example.com",
    "uri": "https://example.com/",
    "url": "https://example.com/",
    "uuid": "123e4567-e89b-12d3-a456-426614174000",
    "hostname": "example.com",
    "ipv4": "192.0.2.1",
}
# a value of each JSON type, in the order the wrong-type example picks the first its property does not accept
_OF_TYPE: dict[str, Any] = {
    "integer": 12345,
    "string": "not the right type",
    "boolean": True,
    "array": ["not the right type"],
    "object": {"not": "the right type"},
    "number": 1.5,
    "null": None,
}


class CannotGenerate(Exception):
    """The generator found no value the schema accepts; the message says which part."""


@dataclass(frozen=True)
class InvalidCall:
    """Arguments the schema refuses, and how they break it (for the failure message)."""

    arguments: dict[str, Any]
    broken: str


def _types(schema: dict[str, Any]) -> list[str]:
    kind = schema.get("type")
    if kind is None:
        return []
    return [kind] if isinstance(kind, str) else [str(k) for k in kind]


def _number(schema: dict[str, Any], integer: bool, full: bool) -> int | float:
    low = schema.get("minimum")
    exclusive_low = schema.get("exclusiveMinimum")
    high = schema.get("maximum")
    exclusive_high = schema.get("exclusiveMaximum")
    step = schema.get("multipleOf")
    value: float = 2 if full else 1
    if not integer and full:
        value = 1.5
    if low is not None:
        value = max(value, low) if full and high is None and exclusive_high is None else low
    if exclusive_low is not None and value <= exclusive_low:
        value = exclusive_low + (1 if integer else 0.5)
    if integer:
        value = int(-(-value // 1))  # the next integer at or above
    if step:
        value = -(-value // step) * step
    if high is not None and value > high:
        value = high
    if exclusive_high is not None and value >= exclusive_high:
        value = exclusive_high - (1 if integer else 0.5)
    return int(value) if integer else float(value)


def _string(schema: dict[str, Any]) -> str:
    canned = _FORMATS.get(str(schema.get("format", "")))
    if canned is not None:
        return canned
    low, high = int(schema.get("minLength", 0)), schema.get("maxLength")
    if low <= len("example") and (high is None or len("example") <= int(high)):
        return "example"
    return "a" * (low if high is None else min(low, int(high)))


def example(schema: Any, *, full: bool, where: str = "arguments") -> Any:
    """One value ``schema`` should accept (see the module docstring); raises CannotGenerate."""
    if schema is True or schema == {}:
        return "example"
    if not isinstance(schema, dict):
        raise CannotGenerate(f"{where}: a schema that accepts nothing")
    if "const" in schema:
        return copy.deepcopy(schema["const"])
    if schema.get("enum"):
        return copy.deepcopy(schema["enum"][-1 if full else 0])
    if schema.get("examples") and isinstance(schema["examples"], list):
        return copy.deepcopy(schema["examples"][0])
    for combinator in ("anyOf", "oneOf"):
        if combinator in schema:
            for index, branch in enumerate(schema[combinator]):
                try:
                    value = example(branch, full=full, where=f"{where}.{combinator}[{index}]")
                except CannotGenerate:
                    continue
                if Draft202012Validator(schema).is_valid(value):
                    return value
            raise CannotGenerate(f"{where}: no branch of {combinator} could be satisfied")
    if "allOf" in schema:
        merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
        for part in schema["allOf"]:
            if isinstance(part, dict):
                merged = {**merged, **part}
        return example(merged, full=full, where=where)
    kinds = _types(schema)
    non_null = [k for k in kinds if k != "null"]
    kind = non_null[0] if non_null else (kinds[0] if kinds else _implied_type(schema))
    if kind == "object":
        return _object(schema, full=full, where=where)
    if kind == "array":
        items = schema.get("items", {})
        count = max(int(schema.get("minItems", 0)), 1 if full else 0)
        if schema.get("maxItems") is not None:
            count = min(count, int(schema["maxItems"]))
        values = []
        for index in range(count):
            value = example(items, full=full, where=f"{where}[{index}]")
            if schema.get("uniqueItems") and isinstance(value, (int, float)) and not isinstance(value, bool):
                value = value + index
            values.append(value)
        return values
    if kind == "string":
        return _string(schema)
    if kind == "integer":
        return _number(schema, integer=True, full=full)
    if kind == "number":
        return _number(schema, integer=False, full=full)
    if kind == "boolean":
        return full
    if kind == "null":
        return None
    raise CannotGenerate(f"{where}: unknown type {kind!r}")


def _implied_type(schema: dict[str, Any]) -> str:
    if "properties" in schema or "required" in schema:
        return "object"
    if "items" in schema:
        return "array"
    if any(k in schema for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")):
        return "number"
    return "string"


def _object(schema: dict[str, Any], *, full: bool, where: str) -> dict[str, Any]:
    properties: dict[str, Any] = schema.get("properties") or {}
    required = [str(r) for r in schema.get("required") or []]
    names = list(properties) if full else [name for name in properties if name in required]
    names += [name for name in required if name not in names]  # required but not described: a string
    return {name: example(properties.get(name, {}), full=full, where=f"{where}.{name}") for name in names}


def valid_arguments(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """Up to two distinct argument objects ``schema`` accepts (its ``examples`` if it has them); raises
    CannotGenerate naming the part of the schema no generated value satisfied."""
    validator = Draft202012Validator(schema)
    given = schema.get("examples")
    if isinstance(given, list) and given:
        candidates = [copy.deepcopy(e) for e in given]
    else:
        candidates = [example(schema, full=False), example(schema, full=True)]
    found: list[dict[str, Any]] = []
    for candidate in candidates:
        if not isinstance(candidate, dict):
            raise CannotGenerate(f"arguments must be an object, the schema's example is {candidate!r}")
        error = next(iter(validator.iter_errors(candidate)), None)
        if error is not None:
            path = ".".join(str(p) for p in error.absolute_path) or "arguments"
            raise CannotGenerate(f"{path}: the generated {candidate!r} is refused: {error.message}")
        if candidate not in found:
            found.append(candidate)
    return found


def invalid_arguments(schema: dict[str, Any], valid: dict[str, Any]) -> list[InvalidCall]:
    """Arguments ``schema`` refuses, each made from the valid ``valid`` by one change (see the module docstring)."""
    validator = Draft202012Validator(schema)
    properties: dict[str, Any] = schema.get("properties") or {}
    calls: list[InvalidCall] = []
    required = [str(r) for r in schema.get("required") or []]
    if required:
        name = required[0]
        calls.append(InvalidCall({k: v for k, v in valid.items() if k != name}, f"the required {name!r} left out"))
    for name, spec in properties.items():
        kinds = _types(spec) if isinstance(spec, dict) else []
        if not kinds:
            continue
        accepted = set(kinds) | ({"integer"} if "number" in kinds else set())
        wrong_type = next((k for k in _OF_TYPE if k not in accepted), None)
        if wrong_type is None:
            continue
        wrong = copy.deepcopy(_OF_TYPE[wrong_type])
        calls.append(InvalidCall({**valid, name: wrong}, f"{name!r} of the wrong type ({wrong_type} {wrong!r})"))
        break
    if schema.get("additionalProperties") is False:
        extra = "not_a_parameter"
        calls.append(InvalidCall({**valid, extra: 1}, f"an undeclared argument {extra!r}"))
    return [call for call in calls if not validator.is_valid(call.arguments)]
