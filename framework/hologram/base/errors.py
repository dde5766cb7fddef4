"""User-facing errors.

Every error a user can cause (a bad manifest, a missing facility, a stale lock) is a `Problem`: where it is
(file, line, key), what is wrong, and how to fix it. The CLI prints problems and exits 1; it never shows a
traceback for them. Several independent problems travel together in one `HologramError`, so a user sees
all of them in one run instead of fixing them one at a time.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One thing that is wrong, located as precisely as we can."""

    message: str
    file: str | None = None
    line: int | None = None
    key: str | None = None
    hint: str | None = None

    def render(self) -> str:
        where = ""
        if self.file:
            where = self.file + (f":{self.line}" if self.line else "") + ": "
        key = f"{self.key}: " if self.key else ""
        text = f"{where}error: {key}{self.message}"
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text


class HologramError(Exception):
    """One or more problems a user can act on; never shown as a traceback."""

    def __init__(self, problems: Problem | Iterable[Problem]) -> None:
        self.problems: tuple[Problem, ...] = (problems,) if isinstance(problems, Problem) else tuple(problems)
        super().__init__(self.render())

    def render(self) -> str:
        lines = [p.render() for p in self.problems]
        if len(self.problems) > 1:
            lines.append(f"{len(self.problems)} errors")
        return "\n".join(lines)


def fail(message: str, *, file: str | None = None, hint: str | None = None) -> HologramError:
    """Build a single-problem error; `raise fail(...)` reads well at call sites."""
    return HologramError(Problem(message, file=file, hint=hint))
