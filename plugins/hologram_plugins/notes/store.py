"""Markdown notes on disk: one `.md` file per note, with a small front matter block.

    ---
    title: "会议记录 2025-03"
    tags: ["work"]
    created: "2025-03-30T09:00:00+00:00"
    updated: "2025-03-30T09:05:00+00:00"
    ---

    body…

Front matter values are JSON (which is also valid YAML), so the files stay readable and editable by people
and other tools, and parsing needs no YAML library. The title in the front matter is authoritative; the
file name is only a readable, filesystem-safe rendering of it (two titles may share one; `-2` is appended).
"""

from __future__ import annotations

import json
import re
import threading
import unicodedata
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from hologram_plugins.files.workspace import atomic_write

MAX_TITLE = 200
MAX_SLUG = 80
_UNSAFE = re.compile(r"[^\w\-. ]+", re.UNICODE)  # \w covers CJK and other scripts' letters and digits
_DASHES = re.compile(r"[\s\-]+")


class NoteError(ValueError):
    """A refusal the model can act on (missing note, duplicate title, bad title)."""


@dataclass
class Note:
    title: str
    body: str
    tags: list[str] = field(default_factory=list)
    created: str = ""
    updated: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "body": self.body,
            "tags": self.tags,
            "created": self.created,
            "updated": self.updated,
        }

    def render(self) -> str:
        meta = {"title": self.title, "tags": self.tags, "created": self.created, "updated": self.updated}
        head = "\n".join(f"{k}: {json.dumps(v, ensure_ascii=False)}" for k, v in meta.items())
        return f"---\n{head}\n---\n\n{self.body}"


def slugify(title: str) -> str:
    """A file name stem for `title`: letters of any script, digits, `-`, `_`, `.`; never empty or hidden."""
    text = unicodedata.normalize("NFC", title)
    text = _UNSAFE.sub("-", text)
    text = _DASHES.sub("-", text).strip("-.")
    while len(text.encode("utf-8")) > MAX_SLUG * 2 or len(text) > MAX_SLUG:  # stay far below NAME_MAX (255 bytes)
        text = text[:-1]
    return text.rstrip("-.") or "note"


def parse(text: str) -> Note | None:
    """A note from file text, or None if the file is not one of ours (no front matter with a title)."""
    if not text.startswith("---\n"):
        return None
    end = text.find("\n---\n", 4)
    if end == -1:
        return None
    meta: dict[str, Any] = {}
    for line in text[4:end].splitlines():
        key, sep, value = line.partition(":")
        if sep:
            try:
                meta[key.strip()] = json.loads(value.strip())
            except ValueError:
                meta[key.strip()] = value.strip()
    if not isinstance(meta.get("title"), str):
        return None
    body = text[end + 5 :]
    body = body[1:] if body.startswith("\n") else body
    tags = meta.get("tags")
    return Note(
        meta["title"],
        body,
        [str(t) for t in tags] if isinstance(tags, list) else [],
        str(meta.get("created", "")),
        str(meta.get("updated", "")),
    )


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def check_title(title: str) -> str:
    title = unicodedata.normalize("NFC", title.strip())
    if not title:
        raise NoteError("the title is empty")
    if len(title) > MAX_TITLE or "\n" in title:
        raise NoteError(f"a title is one line of at most {MAX_TITLE} characters")
    return title


class NoteStore:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()  # tools run in worker threads; one writer at a time

    def _find(self, title: str) -> tuple[Note | None, Path]:
        """(the note titled `title`, its file) or (None, the file a new note with this title would use).
        Each candidate file is read and parsed once, here."""
        stem = slugify(title)
        n = 1
        while True:
            path = self.folder / (f"{stem}.md" if n == 1 else f"{stem}-{n}.md")
            if not path.exists():
                return None, path
            note = parse(path.read_text(encoding="utf-8"))
            if note is not None and note.title == title:
                return note, path
            n += 1

    def get(self, title: str) -> Note | None:
        note, _ = self._find(check_title(title))
        return note

    def create(self, title: str, body: str, tags: list[str] | None = None) -> Note:
        title = check_title(title)
        with self._lock:
            existing, path = self._find(title)
            if existing is not None:
                raise NoteError(f"a note titled {title!r} already exists; use notes_update to change it")
            now = _now()
            note = Note(title, body, list(tags or []), now, now)
            atomic_write(path, note.render().encode("utf-8"))
            return note

    def put(self, title: str, body: str, tags: list[str] | None = None) -> Note:
        """Create or overwrite (the facility's write: consumers need not care whether it exists)."""
        title = check_title(title)
        with self._lock:
            old, path = self._find(title)
            now = _now()
            note = Note(title, body, list(tags if tags is not None else (old.tags if old else [])), now, now)
            if old is not None:
                note.created = old.created
            atomic_write(path, note.render().encode("utf-8"))
            return note

    def update(self, title: str, body: str | None, append: str | None, tags: list[str] | None) -> Note:
        title = check_title(title)
        with self._lock:
            note, path = self._find(title)
            if note is None:
                raise NoteError(f"no note titled {title!r}{self.suggest(title)}")
            if body is not None:
                note.body = body
            if append:
                note.body = note.body + ("" if not note.body or note.body.endswith("\n") else "\n") + append
            if tags is not None:
                note.tags = list(tags)
            note.updated = _now()
            atomic_write(path, note.render().encode("utf-8"))
            return note

    def all(self) -> list[Note]:
        notes = []
        for path in sorted(self.folder.glob("*.md")):
            try:
                note = parse(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError):
                continue
            if note is not None:
                notes.append(note)
        return notes

    def listing(self, tag: str | None = None) -> list[Note]:
        notes = [n for n in self.all() if tag is None or tag in n.tags]
        return sorted(notes, key=lambda n: n.updated, reverse=True)

    def search(self, query: str, limit: int = 10) -> list[tuple[Note, int, str]]:
        """Notes containing every word of `query` (case-insensitive substring, so Chinese works unsegmented).

        Ranked by title hits (weighted 3) plus body occurrences; each with a snippet around the first hit.
        """
        terms = [t.casefold() for t in query.split()]
        if not terms:
            return []
        found = []
        for note in self.all():
            title, body = note.title.casefold(), note.body.casefold()
            if not all(t in title or t in body for t in terms):
                continue
            score = sum(3 * title.count(t) + body.count(t) for t in terms)
            found.append((note, score, snippet(note.body, terms)))
        found.sort(key=lambda item: (-item[1], item[0].title))
        return found[:limit]

    def suggest(self, title: str) -> str:
        import difflib

        close = difflib.get_close_matches(title, [n.title for n in self.all()], n=3, cutoff=0.5)
        return f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""


def snippet(body: str, terms: list[str], width: int = 60) -> str:
    folded = body.casefold()
    at = min((i for i in (folded.find(t) for t in terms) if i >= 0), default=0)
    start, end = max(0, at - width), min(len(body), at + width)
    text = " ".join(body[start:end].split())
    return ("…" if start else "") + text + ("…" if end < len(body) else "")
