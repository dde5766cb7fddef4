"""The todo list: a Markdown task list a person reads and edits in any editor, the plugin's only storage.

    # Todos

    - [ ] Buy milk due:2026-03-02 #shopping id:3f2a
    - [ ] Call the plumber due:2026-03-02T17:00 remind:1a2b3c4d id:77c1
    - [x] File taxes #admin id:9c1b done:2026-03-01

A task is a list item with a checkbox; after its text come ``key:value`` fields (``due``, ``id``, ``done``,
``remind``) and ``#tags``, in any order. Everything else in the file — headings, notes, blank lines — is the
person's and is kept as it is. The file is read afresh on every call, so an edit by hand counts at once; the
plugin rewrites only the lines it changes (atomically: a reader never sees half a file). A task written by
hand without an ``id`` gets one derived from its text (stable while the text is), written into the line the
first time the plugin changes the line. A line that looks like a task but does not read — an unknown checkbox mark,
a due date that is not a date, an id used twice — is reported with its line number and left untouched.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import threading
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from pathlib import Path

from hologram_plugins.files.workspace import atomic_write

TASK = re.compile(r"^(?P<indent>\s*)(?P<bullet>[-*+]) \[(?P<mark>[^\]]?)\](?:\s+(?P<rest>.*))?$")
FIELD = re.compile(r"^(?P<key>due|id|done|remind):(?P<value>\S+)$")
TAG = re.compile(r"^#(?P<tag>[^\s#]+)$")
HEADER = "# Todos\n\n"


class TodoError(ValueError):
    """A request the list cannot serve; the message says what to do instead."""


@dataclass
class Todo:
    id: str
    text: str
    done: bool = False
    due: date | datetime | None = None  # a datetime is naive: wall-clock time in the configured zone
    tags: list[str] = field(default_factory=list)
    remind: str | None = None  # the id of its reminder (reminders.schedule)
    done_on: date | None = None
    line: int = 0  # 1-based, in the file as read
    explicit_id: bool = True

    def render(self, indent: str = "", bullet: str = "-") -> str:
        parts = [f"{indent}{bullet} [{'x' if self.done else ' '}] {self.text}"]
        if self.due is not None:
            parts.append(f"due:{show_due(self.due)}")
        parts += [f"#{t}" for t in self.tags]
        if self.remind:
            parts.append(f"remind:{self.remind}")
        parts.append(f"id:{self.id}")
        if self.done and self.done_on:
            parts.append(f"done:{self.done_on.isoformat()}")
        return " ".join(parts)


@dataclass
class Damaged:
    line: int
    text: str
    why: str

    def report(self, name: str) -> str:
        return f"{name} line {self.line}: {self.why}; the line is left as it is ({self.text.strip()[:80]!r})"


@dataclass
class Parsed:
    lines: list[str]
    todos: list[Todo]
    damaged: list[Damaged]
    shape: dict[str, tuple[str, str]]  # todo id → (indent, bullet) of its line


def show_due(value: date | datetime) -> str:
    return value.isoformat(timespec="minutes") if isinstance(value, datetime) else value.isoformat()


def parse_due(text: str) -> date | datetime:
    """``YYYY-MM-DD`` or ``YYYY-MM-DDTHH:MM`` (wall-clock time in the configured zone)."""
    value = text.strip()
    try:
        if len(value) == 10:
            return date.fromisoformat(value)
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise TodoError(f"due:{value} is not a date; write YYYY-MM-DD or YYYY-MM-DDTHH:MM") from None
    if moment.tzinfo is not None:
        raise TodoError(f"due:{value} has an offset; write the local time, YYYY-MM-DDTHH:MM")
    return moment.replace(second=0, microsecond=0)


def derived_id(text: str) -> str:
    return hashlib.sha1(text.strip().encode()).hexdigest()[:4]


def parse(content: str) -> Parsed:
    lines = content.splitlines()
    todos: list[Todo] = []
    damaged: list[Damaged] = []
    shape: dict[str, tuple[str, str]] = {}
    for number, raw in enumerate(lines, 1):
        found = TASK.match(raw)
        if not found:
            continue
        mark = found.group("mark")
        if mark not in (" ", "x", "X", ""):
            damaged.append(Damaged(number, raw, f"unknown checkbox mark [{mark}]; write [ ] (open) or [x] (done)"))
            continue
        try:
            todo = _todo(found.group("rest") or "", mark in ("x", "X"), number)
        except TodoError as exc:
            damaged.append(Damaged(number, raw, str(exc)))
            continue
        if todo.id in shape:
            if todo.explicit_id:
                damaged.append(Damaged(number, raw, f"id:{todo.id} is used by an earlier line too; change one"))
                continue
            todo.id = f"{todo.id}-{number}"  # the same text twice, by hand: told apart by its line
        todos.append(todo)
        shape[todo.id] = (found.group("indent"), found.group("bullet"))
    return Parsed(lines, todos, damaged, shape)


def _todo(rest: str, done: bool, number: int) -> Todo:
    words, tags, fields = [], [], {}
    for word in rest.split():
        field_match, tag_match = FIELD.match(word), TAG.match(word)
        if field_match:
            fields[field_match.group("key")] = field_match.group("value")
        elif tag_match:
            tags.append(tag_match.group("tag"))
        else:
            words.append(word)
    text = " ".join(words)
    if not text:
        raise TodoError("a task with no text")
    due = parse_due(fields["due"]) if "due" in fields else None
    done_on = None
    if "done" in fields:
        try:
            done_on = date.fromisoformat(fields["done"])
        except ValueError:
            raise TodoError(f"done:{fields['done']} is not a date; write YYYY-MM-DD") from None
    explicit = "id" in fields
    return Todo(
        id=fields.get("id") or derived_id(text), text=text, done=done, due=due, tags=tags,
        remind=fields.get("remind"), done_on=done_on, line=number, explicit_id=explicit,
    )  # fmt: skip


class TodoFile:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock = threading.Lock()  # tools run in threads: one read-change-write at a time

    def read(self) -> Parsed:
        try:
            content = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            content = ""
        except UnicodeDecodeError as exc:
            raise TodoError(f"{self.path} is not UTF-8 text ({exc.reason} at byte {exc.start}); fix it") from None
        return parse(content)

    def _write(self, lines: list[str]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(self.path, ("\n".join(lines) + "\n").encode())

    def find(self, parsed: Parsed, todo_id: str) -> Todo:
        wanted = todo_id.strip().removeprefix("id:")
        for todo in parsed.todos:
            if todo.id == wanted:
                return todo
        damaged = [d for d in parsed.damaged if f"id:{wanted}" in d.text.split()]
        if damaged:
            raise TodoError(damaged[0].report(self.path.name) + ": fix the line first")
        raise TodoError(f"no todo with id {wanted!r}; todo_list shows the ids")

    def new_id(self, parsed: Parsed) -> str:
        taken = {t.id for t in parsed.todos}
        taken |= {w[3:] for d in parsed.damaged for w in d.text.split() if w.startswith("id:")}
        while True:
            candidate = secrets.token_hex(2)
            if candidate not in taken:
                return candidate

    def add(self, todo: Todo) -> Todo:
        """Appended at the end of the file (a new file starts with a heading); ``todo.id`` is given a new one."""
        with self.lock:
            parsed = self.read()
            todo = replace(todo, id=self.new_id(parsed))
            lines = parsed.lines or HEADER.splitlines()
            self._write([*lines, todo.render()])
            return todo

    def change(self, todo: Todo) -> None:
        """Rewrite ``todo``'s line (found again by id: a person may have moved it meanwhile). The line always
        gets its ``id:`` written, so a hand-written task keeps the id it was listed with when its text changes."""
        with self.lock:
            parsed = self.read()
            current = self.find(parsed, todo.id)
            indent, bullet = parsed.shape[current.id]
            parsed.lines[current.line - 1] = todo.render(indent, bullet)
            self._write(parsed.lines)

    def delete(self, todo_id: str) -> Todo:
        with self.lock:
            parsed = self.read()
            current = self.find(parsed, todo_id)
            del parsed.lines[current.line - 1]
            self._write(parsed.lines)
            return current
