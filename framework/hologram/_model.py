"""`Model`: the base of the validated configuration models — settings, provider settings, the lock, the
manifest — as frozen, slotted dataclasses checked by `hologram._fields`.

A model is valid however it is made: from data (`model_validate`, every problem reported with its location)
or by its constructor and `model_copy` (``__post_init__`` runs the same checks and conversions, so
``ProviderSettings(api_key="sk-…")`` holds a `SecretStr` and ``SceneSettings(floor=1)`` a float).

The method names are those the models had under pydantic (`model_validate`, `model_dump`, `model_copy`):
they are the models' public API — plugin tests and tools call them, docs/providers.md shows them — and only
the part of pydantic's behaviour these models use is kept. A subclass sets ``_strict = True`` for strict
types (the manifest) and ``_extra = "ignore"`` to drop unknown keys instead of reporting them; it overrides
``_check_model`` for checks across fields (raise ValueError; run only once every field is valid).
"""

from __future__ import annotations

import dataclasses
import datetime
import math
from collections.abc import Collection
from pathlib import Path
from typing import Any, ClassVar, Literal, TypeVar, cast

from hologram import _fields
from hologram._secret import SecretStr

M = TypeVar("M", bound="Model")


class Model:
    __slots__ = ()
    _strict: ClassVar[bool] = False
    _extra: ClassVar[str] = "forbid"

    def __post_init__(self) -> None:
        _fields.check_instance(self)

    def _check_model(self) -> None:
        """Checks across fields (none here)."""

    @classmethod
    def model_validate(cls: type[M], data: Any) -> M:
        """A model from parsed data (a TOML table, a JSON object); raises `hologram._fields.FieldError` with
        every problem in ``errors``. An instance of the class is returned as it is."""
        if isinstance(data, cls):
            return data
        if not isinstance(data, dict):
            message = f"Input should be a valid dictionary or instance of {cls.__name__}"
            raise _fields.FieldError((), message, kind="model_type", input=data)
        built: M = _fields.build(cls, data)
        return built

    def model_copy(self: M, *, update: dict[str, Any] | None = None) -> M:
        """A copy with `update`'s fields replaced — validated, unlike pydantic's."""
        values = {f.name: getattr(self, f.name) for f in dataclasses.fields(cast(Any, self))}
        return type(self)(**{**values, **(update or {})})

    def model_dump(
        self,
        *,
        mode: Literal["python", "json"] = "python",
        exclude: Collection[str] = (),
        exclude_none: bool = False,
        exclude_defaults: bool = False,
    ) -> dict[str, Any]:
        """The fields as a dict, nested models as dicts. ``json`` mode gives what JSON can hold (lists for
        tuples, strings for paths and dates, a masked key, null for inf and nan inside containers), as
        pydantic did: manifest hashes in existing locks were computed from it. Fields whose metadata says
        ``exclude`` are left out."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(cast(Any, self)):
            if f.name in exclude or f.metadata.get("exclude"):
                continue
            value = getattr(self, f.name)
            if exclude_none and value is None:
                continue
            if exclude_defaults and _is_default(f, value):
                continue
            out[f.name] = dump(value, json=mode == "json", exclude_none=exclude_none, exclude_defaults=exclude_defaults)
        return out


def _item(value: Any, json: bool, exclude_none: bool, exclude_defaults: bool) -> Any:
    """A value inside a dict or a list: in ``json`` mode inf and nan become None there (what a manifest's
    ``[config]`` holds), while a float field keeps them — pydantic's dump did both, and manifest hashes in
    existing locks were computed from it."""
    if json and isinstance(value, float) and not math.isfinite(value):
        return None
    return dump(value, json=json, exclude_none=exclude_none, exclude_defaults=exclude_defaults)


def _is_default(f: dataclasses.Field[Any], value: Any) -> bool:
    if f.default is not dataclasses.MISSING:
        return bool(value == f.default)
    if f.default_factory is not dataclasses.MISSING:
        return bool(value == f.default_factory())
    return False


def dump(value: Any, *, json: bool = False, exclude_none: bool = False, exclude_defaults: bool = False) -> Any:
    """`value` with models turned into dicts, recursively (see `Model.model_dump`)."""
    if isinstance(value, Model):
        mode: Literal["python", "json"] = "json" if json else "python"
        return value.model_dump(mode=mode, exclude_none=exclude_none, exclude_defaults=exclude_defaults)
    if isinstance(value, dict):
        return {k: _item(v, json, exclude_none, exclude_defaults) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        items = [_item(v, json, exclude_none, exclude_defaults) for v in value]
        return items if json or isinstance(value, list) else tuple(items)
    if not json:
        return value
    if isinstance(value, SecretStr):
        return str(value)
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, (datetime.datetime, datetime.time)):
        text = value.isoformat()
        return text[:-6] + "Z" if text.endswith("+00:00") else text
    if isinstance(value, datetime.date):
        return value.isoformat()
    return value
