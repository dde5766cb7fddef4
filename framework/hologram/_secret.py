"""`SecretStr`: a string that never shows itself — an API key held in settings.

Why a class and not a plain ``str``: a key in a dataclass field would be printed by its repr, by a log line
that formats the settings, by a validation error or a traceback's locals. Wrapped, it prints as
``**********`` everywhere, and only `get_secret_value` — called where the key is used (the Authorization
header, the settings file) — unwraps it. The name and the method are pydantic's, whose ``SecretStr`` held
the key before, so code written against it keeps working.
"""

from __future__ import annotations

MASK = "**********"


class SecretStr:
    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def get_secret_value(self) -> str:
        return self._value

    def __str__(self) -> str:
        return MASK if self._value else ""

    def __repr__(self) -> str:
        return f"SecretStr({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SecretStr) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)

    def __len__(self) -> int:
        return len(self._value)
