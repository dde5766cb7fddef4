"""Validate a JSON object against a dataclass's annotated fields, without pydantic.

Why not pydantic: `hologram ask` is a new process per turn and importing pydantic costs ~100 ms there, more
than the rest of the client. The turn API's events and params use a handful of field types (str, int, float,
bool, None unions, Literal, dict[str, Any], list[dict[str, Any]]) and two constraints (``min_length``,
``max_length`` in the field's metadata); this checks exactly those, strictly as JSON delivers them (an int is
a valid float, a bool is not an int), and words its errors the way pydantic does so messages stay the same.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any, Literal, Union

_MISSING = dataclasses.MISSING


class FieldError(ValueError):
    """What is wrong and where: ``loc`` is the path of field names (empty: the object itself)."""

    def __init__(self, loc: tuple[str, ...], msg: str) -> None:
        super().__init__(f"{'.'.join(loc) or '(object)'}: {msg}")
        self.loc = loc
        self.msg = msg


_HINTS: dict[type[Any], dict[str, Any]] = {}


def _hints(cls: type[Any]) -> dict[str, Any]:
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = typing.get_type_hints(cls)
    return hints


def build(cls: type[Any], data: Any, *, extra: str = "ignore") -> Any:
    """An instance of dataclass `cls` from `data`, every field checked. `extra`: ``ignore`` drops keys that
    are not fields, ``forbid`` raises `FieldError` naming the first one."""
    if not isinstance(data, dict):
        raise FieldError((), "Input should be a valid dictionary")
    hints = _hints(cls)
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name in data:
            value = data[f.name]
            _check(hints[f.name], value, (f.name,))
            _constraints(f, value)
            values[f.name] = value
        elif f.default is _MISSING and f.default_factory is _MISSING:
            raise FieldError((f.name,), "Field required")
    if extra == "forbid":
        for key in data:
            if key not in values and key not in {f.name for f in dataclasses.fields(cls)}:
                raise FieldError((str(key),), "Extra inputs are not permitted")
    return cls(**values)


def _constraints(f: dataclasses.Field[Any], value: Any) -> None:
    low = f.metadata.get("min_length")
    if low is not None and isinstance(value, str) and len(value) < low:
        raise FieldError((f.name,), f"String should have at least {low} character{'s' if low != 1 else ''}")
    high = f.metadata.get("max_length")
    if high is not None and isinstance(value, str) and len(value) > high:
        raise FieldError((f.name,), f"String should have at most {high} character{'s' if high != 1 else ''}")


def _check(hint: Any, value: Any, loc: tuple[str, ...]) -> None:
    if hint is Any:
        return
    origin = typing.get_origin(hint)
    if origin is Union or origin is types.UnionType:
        options = typing.get_args(hint)
        if value is None and type(None) in options:
            return
        errors: list[FieldError] = []
        for option in options:
            if option is type(None):
                continue
            try:
                _check(option, value, loc)
                return
            except FieldError as exc:
                errors.append(exc)
        raise errors[0]
    if origin is Literal:
        allowed = typing.get_args(hint)
        if value in allowed and type(value) in {type(a) for a in allowed}:
            return
        words = [repr(a) for a in allowed]
        said = words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"
        raise FieldError(loc, f"Input should be {said}")
    if origin is dict:
        if not isinstance(value, dict):
            raise FieldError(loc, "Input should be a valid dictionary")
        _, item = typing.get_args(hint) or (Any, Any)
        for key, entry in value.items():
            if not isinstance(key, str):
                raise FieldError((*loc, str(key)), "Input should be a valid string")
            _check(item, entry, (*loc, key))
        return
    if origin is list:
        if not isinstance(value, list):
            raise FieldError(loc, "Input should be a valid list")
        (item,) = typing.get_args(hint) or (Any,)
        for index, entry in enumerate(value):
            _check(item, entry, (*loc, str(index)))
        return
    if hint is str:
        if not isinstance(value, str):
            raise FieldError(loc, "Input should be a valid string")
    elif hint is bool:
        if not isinstance(value, bool):
            raise FieldError(loc, "Input should be a valid boolean")
    elif hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise FieldError(loc, "Input should be a valid integer")
    elif hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise FieldError(loc, "Input should be a valid number")
    else:  # pragma: no cover - a field type this module was not written for
        raise TypeError(f"hologram._fields cannot check {hint!r} (field {'.'.join(loc)})")
