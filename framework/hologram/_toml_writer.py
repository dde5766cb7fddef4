"""A small TOML emitter for the lock file.

Why not `tomli_w`: at 1,000 plugins it was ~30% of `hologram build`, and it cannot emit inline tables, which
make the lock shorter and easier to review (`run = { module = "x" }`). The lock's shape is fixed and simple,
so this emitter covers exactly what it needs: strings, booleans, numbers, lists of those, and tables.
Every lock it writes is parsed back by the tests with `tomli` to prove it is valid TOML.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_PLAIN_STRING = re.compile(r'[^"\\\x00-\x1f\x7f]*')
_INLINE_LIMIT = 3  # tables with more keys than this, or nested tables, get their own [section]


def _key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else _string(key)


def _string(value: str) -> str:
    if _PLAIN_STRING.fullmatch(value):  # the common case, and the hot path of `hologram build`
        return f'"{value}"'
    # JSON string escapes are a subset of TOML basic-string escapes; DEL must be escaped in TOML too.
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        if not value:
            return "{}"
        return "{ " + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


def _is_section(value: Any) -> bool:
    return isinstance(value, Mapping) and (
        len(value) > _INLINE_LIMIT or any(isinstance(v, Mapping) for v in value.values())
    )


def _is_table_array(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, Mapping) for v in value)


def _emit_table(lines: list[str], path: list[str], table: Mapping[str, Any]) -> None:
    deferred: list[tuple[str, Any]] = []
    for key, value in table.items():
        if _is_section(value) or _is_table_array(value):
            deferred.append((key, value))
        else:
            lines.append(f"{_key(key)} = {_value(value)}")
    for key, value in deferred:
        sub_path = [*path, _key(key)]
        if _is_table_array(value):
            for item in value:
                lines.extend(["", f"[[{'.'.join(sub_path)}]]"])
                _emit_table(lines, sub_path, item)
        else:
            lines.extend(["", f"[{'.'.join(sub_path)}]"])
            _emit_table(lines, sub_path, value)


def dumps(document: Mapping[str, Any]) -> str:
    """Keys are written in the mapping's order: callers sort them where determinism needs it."""
    lines: list[str] = []
    _emit_table(lines, [], document)
    return "\n".join(lines).lstrip("\n") + "\n"
