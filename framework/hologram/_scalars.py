"""One scalar as a validated model field takes it, the way pydantic took it: strict (the turn API, the
manifest: JSON's and TOML's own types, an int is a valid float, a bool is not an int) or lax (settings, the
lock: ``"16"`` and ``16.0`` are 16, ``"yes"`` and ``1`` are true, ``" 2.5 "`` is 2.5, a string is a path).

Each function returns the value to store or raises `Refusal` with pydantic's error type and message;
`hologram._fields` adds where the value was. The rules and messages were checked against pydantic 2
(tests/foundation/test_fields.py holds them).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hologram._secret import SecretStr

Scalar = Callable[[Any], Any]
I64 = 2**63  # lax mode parses integers into 64 bits
TRUE = frozenset({"true", "yes", "on", "1", "t", "y"})
FALSE = frozenset({"false", "no", "off", "0", "f", "n"})
INTEGRAL = re.compile(r"^[+-]?\d+(?:_\d+)*\.0*$")  # "3.0": an int in lax mode
NOT_A_STRING = ("string_type", "Input should be a valid string")
NOT_A_BOOL = ("bool_type", "Input should be a valid boolean")
NOT_A_NUMBER = ("float_type", "Input should be a valid number")
UNPARSED_NUMBER = ("float_parsing", "Input should be a valid number, unable to parse string as a number")


class Refusal(ValueError):
    """The value is not one this field takes: ``kind`` and ``msg`` as pydantic named and worded it."""

    def __init__(self, kind: str, msg: str) -> None:
        super().__init__(msg)
        self.kind = kind
        self.msg = msg


def as_str(value: Any) -> Any:
    if isinstance(value, str):
        return value
    raise Refusal(*NOT_A_STRING)


def strict_bool(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    raise Refusal(*NOT_A_BOOL)


def lax_bool(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        word = value.lower()
        if word in TRUE or word in FALSE:
            return word in TRUE
    elif isinstance(value, float) and not (math.isfinite(value) and value.is_integer() and abs(value) < I64):
        raise Refusal(*NOT_A_BOOL)
    elif isinstance(value, (int, float)):
        if abs(value) >= I64:
            raise Refusal(*NOT_A_BOOL)
        if value in (0, 1):
            return bool(value)
    else:
        raise Refusal(*NOT_A_BOOL)
    raise Refusal("bool_parsing", "Input should be a valid boolean, unable to interpret input")


def strict_int(value: Any) -> Any:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise Refusal("int_type", "Input should be a valid integer")


def lax_int(value: Any) -> Any:
    if isinstance(value, int):
        return int(value)  # a bool is 0 or 1
    if isinstance(value, float):
        if not math.isfinite(value):
            raise Refusal("finite_number", "Input should be a finite number")
        if not value.is_integer():
            raise Refusal("int_from_float", "Input should be a valid integer, got a number with a fractional part")
        if abs(value) >= I64:
            raise Refusal("int_parsing_size", "Unable to parse input string as an integer, exceeded maximum size")
        return int(value)
    if isinstance(value, str):
        text = value.strip()
        try:
            return int(text)
        except ValueError:
            if INTEGRAL.match(text):
                return int(text.split(".")[0])
        raise Refusal("int_parsing", "Input should be a valid integer, unable to parse string as an integer")
    raise Refusal("int_type", "Input should be a valid integer")


def _float(value: int | float) -> float:
    try:
        return float(value)
    except OverflowError:  # an int beyond a float's range
        raise Refusal(*UNPARSED_NUMBER) from None


def strict_float(value: Any) -> Any:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return _float(value)
    raise Refusal(*NOT_A_NUMBER)


def lax_float(value: Any) -> Any:
    if isinstance(value, (int, float)):
        return _float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            raise Refusal(*UNPARSED_NUMBER) from None
    raise Refusal(*NOT_A_NUMBER)


def strict_path(value: Any) -> Any:
    if isinstance(value, Path):
        return value
    raise Refusal("is_instance_of", "Input should be an instance of Path")


def lax_path(value: Any) -> Any:
    if isinstance(value, (Path, str)):
        return Path(value)
    raise Refusal("path_type", "Input is not a valid path for <class 'pathlib.Path'>")


def secret(value: Any) -> Any:
    if isinstance(value, SecretStr):
        return value
    if isinstance(value, str):
        return SecretStr(value)
    raise Refusal(*NOT_A_STRING)


SCALARS: dict[Any, tuple[Scalar, Scalar]] = {  # type → (lax, strict)
    str: (as_str, as_str),
    bool: (lax_bool, strict_bool),
    int: (lax_int, strict_int),
    float: (lax_float, strict_float),
    Path: (lax_path, strict_path),
    SecretStr: (secret, secret),
}
