"""Which JSON types a Python annotation accepts, and a tool's arguments checked against its handler's annotations.

The same mapping serves `hologram check` (a manifest's schema against the handler's signature, `_describe`) and
`tool/invoke` (an argument whose JSON type the handler's annotation does not accept is a tool error naming it,
not a ``TypeError`` deep inside the tool, nor a tool that quietly works on a number it took for a string). The
kernel validates arguments against the manifest's schema before every call, so in a plugin whose schema and
signature agree (what `hologram check` proves) this check never refuses anything; it catches the calls that
reach the plugin some other way (a conformance kit's schema-invalid call, a hand-written client).
"""

from __future__ import annotations

import functools
import inspect
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any

# Python types → the JSON Schema types a value of them may arrive as. ``number`` covers ``integer``.
_SIMPLE: dict[Any, set[str]] = {
    str: {"string"},
    bool: {"boolean"},
    int: {"integer"},
    float: {"number", "integer"},
    list: {"array"},
    tuple: {"array"},
    set: {"array"},
    Sequence: {"array"},
    dict: {"object"},
    Mapping: {"object"},
    type(None): {"null"},
}


def json_types(annotation: Any) -> set[str] | None:
    """The JSON types an annotation accepts; None when it accepts anything or is not understood (``Any``,
    no annotation, a class of the author's), so nothing is claimed about it."""
    if annotation is inspect.Parameter.empty or annotation is Any:
        return None
    if annotation is None:
        return {"null"}
    origin = typing.get_origin(annotation)
    if origin is typing.Union or origin is types.UnionType:
        found: set[str] = set()
        for arg in typing.get_args(annotation):
            part = json_types(arg)
            if part is None:
                return None
            found |= part
        return found
    if origin is typing.Literal:
        found = set()
        for value in typing.get_args(annotation):
            part = json_types(type(value))
            if part is None:
                return None
            found |= part
        return found
    if origin is typing.Annotated:
        return json_types(typing.get_args(annotation)[0])
    return _SIMPLE.get(origin or annotation)


def json_type_of(value: Any) -> str:
    """The JSON type of a decoded JSON value (``3.0`` is an integer, as JSON Schema counts it)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


@functools.cache
def accepted_types(handler: Callable[..., Any]) -> dict[str, frozenset[str]]:
    """Parameter → the JSON types its annotation accepts, for the parameters whose annotation says (computed once
    per handler: `typing.get_type_hints` costs tens of µs)."""
    try:
        hints = typing.get_type_hints(handler, include_extras=True)
    except Exception:  # an annotation that does not resolve: nothing is claimed about the arguments
        return {}
    accepted: dict[str, frozenset[str]] = {}
    for name in inspect.signature(handler).parameters:
        known = json_types(hints.get(name, inspect.Parameter.empty))
        if known is not None:
            accepted[name] = frozenset(known)
    return accepted


def argument_problem(handler: Callable[..., Any], arguments: Mapping[str, Any]) -> str | None:
    """Why ``arguments`` do not fit the handler's annotations (the first argument that does not), or None."""
    accepted = accepted_types(handler)
    for name, value in arguments.items():
        allowed = accepted.get(name)
        if allowed is None:
            continue
        kind = json_type_of(value)
        if kind not in allowed and not (kind == "integer" and "number" in allowed):
            return f"{name!r} must be {' or '.join(sorted(allowed))}, not {kind}"
    return None
