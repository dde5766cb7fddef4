"""The reminders on disk: one JSON file in the plugin's data directory, replaced atomically on every change.

Written before a reminder's turn is reported fired, so a kernel stopped at any moment loses no reminder: one
that was due while the kernel was down is still due when it starts again (and fires once, late). An entry
that does not read (a hand edit gone wrong) is kept in the file as it was and reported; the others work.
A file that is not JSON at all stops the plugin's start with the file and the fix, and is not overwritten.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from hologram_plugins.files.workspace import atomic_write
from hologram_plugins.reminders.schedule import Kind

State = Literal["active", "done", "cancelled"]
KEEP_FINISHED = 50  # fired one-shot and cancelled reminders kept for reminder_list's "recent", newest first
VERSION = 1


class StoreError(ValueError):
    """The file cannot be used as it is; the message names it and the fix."""


@dataclass
class Reminder:
    id: str
    text: str
    session: str | None
    timezone: str
    kind: Kind
    rule: str
    start: str  # ISO, local: what a rule counts from
    due: str | None  # ISO, UTC: the next time it fires; None once finished
    created: str  # ISO, UTC
    state: State = "active"
    fired: int = 0
    last_fired: str | None = None
    last_turn: str | None = None
    source: str = "reminder_set"  # or the plugin that set it through reminders.schedule
    finished: str | None = None

    def due_at(self) -> datetime | None:
        return datetime.fromisoformat(self.due) if self.due else None

    def public(self) -> dict[str, Any]:
        return asdict(self)


class ReminderFile:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.reminders: dict[str, Reminder] = {}
        self.damaged: list[tuple[int, Any, str]] = []  # (index, the raw entry, why it does not read)

    def load(self) -> None:
        if not self.path.exists():
            return
        try:
            document = json.loads(self.path.read_bytes())
        except (OSError, ValueError) as exc:
            raise StoreError(
                f"{self.path} is not a reminders file ({exc}); fix it or move it away, then "
                "`hologram plugin restart reminders` (nothing was changed)"
            ) from None
        entries = document.get("reminders") if isinstance(document, dict) else None
        if not isinstance(entries, list):
            raise StoreError(f'{self.path}: no "reminders" list; fix it or move it away (nothing was changed)')
        for index, raw in enumerate(entries):
            try:
                reminder = Reminder(**raw)
                reminder.due_at()
            except (TypeError, ValueError) as exc:
                self.damaged.append((index, raw, str(exc)))
                continue
            self.reminders[reminder.id] = reminder

    def save(self) -> None:
        finished = sorted(
            (r for r in self.reminders.values() if r.state != "active"), key=lambda r: r.finished or "", reverse=True
        )
        for old in finished[KEEP_FINISHED:]:
            del self.reminders[old.id]
        entries: list[Any] = [r.public() for r in self.reminders.values()]
        entries += [raw for _, raw, _ in self.damaged]  # kept as they were, for a person to mend
        data = json.dumps({"version": VERSION, "reminders": entries}, ensure_ascii=False, indent=1)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(self.path, data.encode() + b"\n")

    def new_id(self) -> str:
        while True:
            candidate = secrets.token_hex(4)
            if candidate not in self.reminders:
                return candidate

    def active(self) -> list[Reminder]:
        active = [r for r in self.reminders.values() if r.state == "active" and r.due]
        return sorted(active, key=lambda r: datetime.fromisoformat(r.due or ""))

    def problems(self) -> list[str]:
        return [f"entry {i + 1} of {self.path.name} was skipped: {why}" for i, _, why in self.damaged]
