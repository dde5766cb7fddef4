"""Validate data against a dataclass's annotated fields, without pydantic.

Why not pydantic: every process that validates would pay for it before doing anything — `hologram ask` is a
new process per turn (~100 ms of import there), and the kernel validates its settings, its lock and the
manifests it re-checks at start: importing pydantic and building those models held ~10 MB of the kernel's
memory and ~50-80 ms of its CPU before the first answer (docs/performance.md). The models need a small part
of what pydantic does, and that part is here, in one place, for the turn API's events and params, the
settings, the provider settings, the lock and the manifest.

What is checked: the field types these models use (str, int, float, bool, None unions, Literal, Any,
dict[str, T], list[T], tuple[T, ...], nested dataclasses, `Path`, `SecretStr`), the constraints a field
declares in its metadata (`meta`: ge/gt/le/lt, min_length/max_length, pattern), a field's own validator
(``check``) and, for `hologram._model.Model` classes, a check across fields (``_check_model``).

Two modes, as pydantic had them (a class's ``_strict``; the scalars' rules are `hologram._scalars`). Strict
(the turn API, the manifest): values as JSON and TOML deliver them — an int is a valid float, a bool is not an
int. Lax (settings, the lock): pydantic's coercions are kept, so a file that loaded before still loads —
``"16"`` and ``16.0`` are 16, ``"yes"`` and ``1`` are true, ``"2.5"`` is 2.5, a list is a tuple. Errors are
worded, located and typed (``kind``) the way pydantic words them, and every problem of the input is reported,
in field order, unknown keys last: the messages users see stay the same. A value is never put into a message
(``input`` carries it for the callers that may show it).
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, Literal, Union

from hologram._scalars import SCALARS, Refusal, Scalar

Loc = tuple["str | int", ...]
Converter = Callable[[Any, Loc, "list[FieldError]"], Any]
_MISSING = dataclasses.MISSING
_BAD: Any = object()  # what a converter returns for a value it could not accept (its errors are in the list)


class FieldError(ValueError):
    """What is wrong and where: ``loc`` is the path of field names and list indexes (empty: the object
    itself), ``kind`` pydantic's error type (``missing``, ``extra_forbidden``, ``value_error`` …), ``input``
    the value at fault. A validation that finds several problems raises the first with all of them, in
    order, in ``errors``."""

    def __init__(self, loc: Loc, msg: str, *, kind: str = "value_error", input: Any = None) -> None:
        super().__init__(msg)
        self.loc = tuple(loc)
        self.msg = msg
        self.kind = kind
        self.input = input
        self.errors: tuple[FieldError, ...] = (self,)

    def __str__(self) -> str:
        return "; ".join(f"{'.'.join(map(str, e.loc)) or '(object)'}: {e.msg}" for e in self.errors)


def meta(
    *,
    description: str | None = None,
    ge: float | None = None,
    gt: float | None = None,
    le: float | None = None,
    lt: float | None = None,
    min_length: int | None = None,
    max_length: int | None = None,
    pattern: str | None = None,
    check: Callable[[Any], Any] | None = None,
    alias: str | None = None,
    exclude: bool = False,
    schema: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A field's metadata: ``dataclasses.field(default=…, metadata=meta(gt=0, description=…))``.

    ``check`` validates the converted value (raise ValueError; return the value, changed or not),
    ``alias`` is the key the data uses (the lock's dashed keys), ``exclude`` keeps the field out of dumps,
    ``description`` and ``schema`` (extra JSON Schema keywords) are for the published schema."""
    given = {
        "description": description,
        "ge": ge,
        "gt": gt,
        "le": le,
        "lt": lt,
        "min_length": min_length,
        "max_length": max_length,
        "pattern": pattern,
        "check": check,
        "alias": alias,
        "schema": schema,
    }
    out = {key: value for key, value in given.items() if value is not None}
    if exclude:
        out["exclude"] = True
    return out


def _fail(errors: list[FieldError]) -> FieldError:
    first = errors[0]
    first.errors = tuple(errors)
    return first


# -- the per-class plan ---------------------------------------------------------------------------------------


class _Field:
    """A field as `build` and `check_instance` walk it (plain classes: a dataclass costs ~0.5 ms to create)."""

    __slots__ = ("convert", "field", "key", "name", "required")

    def __init__(self, f: dataclasses.Field[Any], key: str, convert: Converter) -> None:
        self.name = f.name
        self.key = key  # where the data holds it (the alias, or the name) and what errors call it
        self.convert = convert
        self.required = f.default is _MISSING and f.default_factory is _MISSING
        self.field = f


class _Plan:
    __slots__ = ("extra", "fields", "keys")

    def __init__(self, fields: tuple[_Field, ...], extra: str) -> None:
        self.fields = fields
        self.keys = frozenset({f.name for f in fields} | {f.key for f in fields})  # anything else is unknown
        self.extra = extra


_PLANS: dict[type[Any], _Plan] = {}


def _plan(cls: type[Any]) -> _Plan:
    plan = _PLANS.get(cls)
    if plan is None:
        hints = typing.get_type_hints(cls)
        strict = bool(getattr(cls, "_strict", True))
        fields = tuple(
            _Field(f, f.metadata.get("alias", f.name), _field_converter(hints[f.name], strict, f.metadata))
            for f in dataclasses.fields(cls)
        )
        plan = _PLANS[cls] = _Plan(fields, str(getattr(cls, "_extra", "ignore")))
    return plan


def field_key(cls: type[Any], name: str) -> str:
    """The key data uses for field `name` (its alias, or the name)."""
    return next(f.key for f in _plan(cls).fields if f.name == name)


# -- entry points ---------------------------------------------------------------------------------------------


def build(cls: type[Any], data: Any, *, extra: str | None = None) -> Any:
    """An instance of dataclass `cls` from `data`, every field checked; raises `FieldError` (all problems in
    ``errors``). `extra` overrides the class's ``_extra``: ``ignore`` drops keys that are not fields,
    ``forbid`` reports each."""
    if not isinstance(data, dict):
        raise FieldError((), "Input should be a valid dictionary", kind="dict_type", input=data)
    errors: list[FieldError] = []
    built = _from_mapping(cls, data, (), errors, extra)
    if errors:
        raise _fail(errors)
    return built


def check_instance(obj: Any) -> None:
    """Validate a model built by its constructor, converting fields in place (``"5"`` → 5.0, a dict → the
    nested model): the same checks as `build`, so a model is valid however it was made."""
    errors: list[FieldError] = []
    for f in _plan(type(obj)).fields:
        value = getattr(obj, f.name)
        converted = f.convert(value, (f.key,), errors)
        if converted is not _BAD and converted is not value:
            object.__setattr__(obj, f.name, converted)
    if not errors:
        _check_model(obj, (), errors, None)
    if errors:
        raise _fail(errors)


def _from_mapping(cls: type[Any], data: dict[Any, Any], loc: Loc, errors: list[FieldError], extra: str | None) -> Any:
    plan = _plan(cls)
    before = len(errors)
    values: dict[str, Any] = {}
    for f in plan.fields:
        if f.key in data:
            raw = data[f.key]
        elif f.name in data:
            raw = data[f.name]
        else:
            if f.required:
                errors.append(FieldError((*loc, f.key), "Field required", kind="missing", input=data))
            continue
        converted = f.convert(raw, (*loc, f.key), errors)
        if converted is not _BAD:
            values[f.name] = converted
    if (extra or plan.extra) == "forbid":
        for key, raw in data.items():
            if key not in plan.keys:
                errors.append(
                    FieldError((*loc, key), "Extra inputs are not permitted", kind="extra_forbidden", input=raw)
                )
    if len(errors) > before:
        return _BAD
    if not hasattr(cls, "_check_model"):  # a plain dataclass: its __post_init__ may check more
        try:
            return cls(**values)
        except FieldError as exc:
            errors.extend(FieldError((*loc, *e.loc), e.msg, kind=e.kind, input=e.input) for e in exc.errors)
            return _BAD
    obj = object.__new__(cls)  # fields are valid already: set them without validating again in __post_init__
    for f in plan.fields:
        if f.name in values:
            value = values[f.name]
        elif f.field.default_factory is not _MISSING:
            value = f.field.default_factory()
        else:
            value = f.field.default
        object.__setattr__(obj, f.name, value)
    return obj if _check_model(obj, loc, errors, data) else _BAD


def _check_model(obj: Any, loc: Loc, errors: list[FieldError], data: Any) -> bool:
    check = getattr(obj, "_check_model", None)
    if check is None:
        return True
    try:
        check()
    except ValueError as exc:
        errors.append(FieldError(loc, f"Value error, {exc}", kind="value_error", input=data))
        return False
    return True


# -- converters -----------------------------------------------------------------------------------------------


def _field_converter(hint: Any, strict: bool, metadata: Mapping[str, Any]) -> Converter:
    """The type's converter, its constraints applied to a value that is not None, then the field's check."""
    options = typing.get_args(hint) if typing.get_origin(hint) in (Union, types.UnionType) else (hint,)
    inner = [o for o in options if o is not type(None)]
    nullable = len(inner) < len(options)
    convert = _compile(inner[0], strict) if len(inner) == 1 else _union([_compile(o, strict) for o in inner])
    bounds = {k: metadata[k] for k in ("ge", "gt", "le", "lt", "min_length", "max_length", "pattern") if k in metadata}
    if bounds:
        convert = _constrained(convert, bounds)
    if nullable:
        convert = _nullable(convert)
    check = metadata.get("check")
    return _checked(convert, check) if check is not None else convert


def _compile(hint: Any, strict: bool) -> Converter:
    if hint is Any:
        return _any
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (Union, types.UnionType):
        return _field_converter(hint, strict, {})
    if origin is Literal:
        return _literal(args)
    if origin is dict:
        return _dict(_compile(args[1], strict) if args else _any, strict)
    if origin is list:
        return _sequence(_compile(args[0], strict) if args else _any, strict, list)
    if origin is tuple:
        if len(args) != 2 or args[1] is not Ellipsis:  # pragma: no cover - only homogeneous tuples are used
            raise TypeError(f"hologram._fields checks tuple[T, ...] only, not {hint!r}")
        return _sequence(_compile(args[0], strict), strict, tuple)
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return _model(hint)
    scalar = SCALARS.get(hint)
    if scalar is None:  # pragma: no cover - a field type this module was not written for
        raise TypeError(f"hologram._fields cannot check {hint!r}")
    return _scalar(scalar[strict])


def _scalar(convert: Scalar) -> Converter:
    def scalar(value: Any, loc: Loc, errors: list[FieldError]) -> Any:
        try:
            return convert(value)
        except Refusal as refused:
            errors.append(FieldError(loc, refused.msg, kind=refused.kind, input=value))
            return _BAD

    return scalar


def _any(value: Any, loc: Loc, errors: list[FieldError]) -> Any:
    return value


def _nullable(inner: Converter) -> Converter:
    def convert(value: Any, loc: Loc, errors: list[FieldError]) -> Any:
        return None if value is None else inner(value, loc, errors)

    return convert


def _union(options: list[Converter]) -> Converter:
    def convert(value: Any, loc: Loc, errors: list[FieldError]) -> Any:
        first: list[FieldError] = []
        for option in options:
            found: list[FieldError] = []
            converted = option(value, loc, found)
            if converted is not _BAD:
                return converted
            first = first or found
        errors.extend(first)
        return _BAD

    return convert


def _checked(inner: Converter, check: Callable[[Any], Any]) -> Converter:
    def convert(value: Any, loc: Loc, errors: list[FieldError]) -> Any:
        value = inner(value, loc, errors)
        if value is _BAD:
            return _BAD
        try:
            return check(value)
        except ValueError as exc:
            errors.append(FieldError(loc, f"Value error, {exc}", kind="value_error", input=value))
            return _BAD

    return convert


def _literal(allowed: tuple[Any, ...]) -> Converter:
    words = [repr(a) for a in allowed]
    said = words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"

    def convert(value: Any, loc: Loc, errors: list[FieldError]) -> Any:
        for option in allowed:  # equal and both strings or both not (pydantic: ``True`` is the literal 1)
            if isinstance(option, str) == isinstance(value, str) and option == value:
                return option
        errors.append(FieldError(loc, f"Input should be {said}", kind="literal_error", input=value))
        return _BAD

    return convert


def _dict(item: Converter, strict: bool) -> Converter:
    def convert(value: Any, loc: Loc, errors: list[FieldError]) -> Any:
        if not isinstance(value, dict) and (strict or not isinstance(value, Mapping)):
            errors.append(FieldError(loc, "Input should be a valid dictionary", kind="dict_type", input=value))
            return _BAD
        out = {}
        ok = True
        for key, entry in value.items():
            if not isinstance(key, str):
                errors.append(
                    FieldError((*loc, str(key)), "Input should be a valid string", kind="string_type", input=key)
                )
                ok = False
                continue
            converted = item(entry, (*loc, key), errors) if item is not _any else entry
            if converted is _BAD:
                ok = False
            out[key] = converted
        return out if ok else _BAD

    return convert


def _items(value: Any, item: Converter, loc: Loc, errors: list[FieldError]) -> list[Any] | None:
    if item is _any:
        return list(value)
    out = []
    ok = True
    for index, entry in enumerate(value):
        converted = item(entry, (*loc, index), errors)
        ok = ok and converted is not _BAD
        out.append(converted)
    return out if ok else None


def _sequence(item: Converter, strict: bool, kind: type[list[Any]] | type[tuple[Any, ...]]) -> Converter:
    """A list or a tuple of `item`s (`kind`); strict accepts only that kind, lax either, as pydantic did."""
    accepted = (kind,) if strict else (list, tuple)
    name = kind.__name__

    def convert(value: Any, loc: Loc, errors: list[FieldError]) -> Any:
        if not isinstance(value, accepted):
            errors.append(FieldError(loc, f"Input should be a valid {name}", kind=f"{name}_type", input=value))
            return _BAD
        out = _items(value, item, loc, errors)
        return _BAD if out is None else kind(out)

    return convert


def _model(cls: type[Any]) -> Converter:
    def convert(value: Any, loc: Loc, errors: list[FieldError]) -> Any:
        if isinstance(value, cls):
            return value
        if isinstance(value, dict):
            return _from_mapping(cls, value, loc, errors, None)
        message = f"Input should be a valid dictionary or instance of {cls.__name__}"
        errors.append(FieldError(loc, message, kind="model_type", input=value))
        return _BAD

    return convert


def _constrained(inner: Converter, bounds: dict[str, Any]) -> Converter:
    def convert(value: Any, loc: Loc, errors: list[FieldError]) -> Any:
        converted = inner(value, loc, errors)
        if converted is _BAD:
            return _BAD
        problem = _violation(converted, bounds)
        if problem is None:
            return converted
        errors.append(FieldError(loc, problem[1], kind=problem[0], input=value))  # the input as given: 0, not 0.0
        return _BAD

    return convert


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _violation(value: Any, bounds: dict[str, Any]) -> tuple[str, str] | None:
    """The first constraint `value` breaks, as (kind, message), in the order pydantic checks them."""
    if isinstance(value, (str, list, tuple)):
        size = len(value)
        low, high = bounds.get("min_length"), bounds.get("max_length")
        if isinstance(value, str):
            if low is not None and size < low:
                return "string_too_short", f"String should have at least {_plural(low, 'character')}"
            if high is not None and size > high:
                return "string_too_long", f"String should have at most {_plural(high, 'character')}"
            pattern = bounds.get("pattern")
            if pattern is not None and not _matches(pattern, value):
                return "string_pattern_mismatch", f"String should match pattern '{pattern}'"
            return None
        kind = "List" if isinstance(value, list) else "Tuple"
        if low is not None and size < low:
            return "too_short", f"{kind} should have at least {_plural(low, 'item')} after validation, not {size}"
        if high is not None and size > high:
            return "too_long", f"{kind} should have at most {_plural(high, 'item')} after validation, not {size}"
        return None
    if "le" in bounds and not value <= bounds["le"]:
        return "less_than_equal", f"Input should be less than or equal to {bounds['le']}"
    if "lt" in bounds and not value < bounds["lt"]:
        return "less_than", f"Input should be less than {bounds['lt']}"
    if "ge" in bounds and not value >= bounds["ge"]:
        return "greater_than_equal", f"Input should be greater than or equal to {bounds['ge']}"
    if "gt" in bounds and not value > bounds["gt"]:
        return "greater_than", f"Input should be greater than {bounds['gt']}"
    return None


_PATTERNS: dict[str, re.Pattern[str]] = {}


def _matches(pattern: str, value: str) -> bool:
    """pydantic's search semantics, where ``$`` is the end of the text (Python's also matches before a final
    newline, so "x\\n" would pass ``^x$``)."""
    compiled = _PATTERNS.get(pattern)
    if compiled is None:
        compiled = _PATTERNS[pattern] = re.compile(pattern)
    found = compiled.search(value)
    return found is not None and (not pattern.endswith("$") or found.end() == len(value))
