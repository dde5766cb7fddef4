"""notes: Markdown notes on disk for the model, and the `notes.store` facility for other plugins.

Tools and facility methods share one `NoteStore`, so a note another plugin `put`s is what the model reads.
Files live in `config.folder` (relative to the plugin's data dir; default `notes`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from hologram.sdk import Plugin, StartContext, tool_error
from hologram_plugins.notes.store import Note, NoteError, NoteStore

FACILITY = "notes.store"


class NotesConfig(BaseModel):
    """settings.toml's ``[plugins.notes]``, checked at start (its JSON Schema: manifests/notes.config.schema.json)."""

    model_config = ConfigDict(extra="forbid")  # a misspelt key fails the start, naming it

    folder: str = Field("notes", min_length=1, description="Folder of the notes, relative to the plugin's data dir.")


def _store(ctx: StartContext[NotesConfig]) -> NoteStore:
    return NoteStore(Path(ctx.data_dir) / ctx.config.folder)


plugin = Plugin("notes", state=_store, config=NotesConfig)


def _tags(tags: list[str] | None) -> list[str] | None:
    return None if tags is None else [str(t).strip() for t in tags if str(t).strip()]


def _show(note: Note) -> str:
    tags = f"tags: {', '.join(note.tags)}\n" if note.tags else ""
    return f"# {note.title}\n{tags}updated: {note.updated}\n\n{note.body}"


# -- tools ----------------------------------------------------------------------------------------------


@plugin.tool("notes_create")
def notes_create(title: str, body: str, tags: list[str] | None = None) -> dict[str, Any] | str:
    try:
        note = plugin.state.create(title, body, _tags(tags))
    except NoteError as exc:
        return tool_error(str(exc))
    return f"created note {note.title!r}"


@plugin.tool("notes_read")
def notes_read(title: str) -> dict[str, Any] | str:
    try:
        note = plugin.state.get(title)
    except NoteError as exc:
        return tool_error(str(exc))
    if note is None:
        return tool_error(f"no note titled {title!r}{plugin.state.suggest(title)}")
    return _show(note)


@plugin.tool("notes_update")
def notes_update(
    title: str, body: str | None = None, append: str | None = None, tags: list[str] | None = None
) -> dict[str, Any] | str:
    if body is None and append is None and tags is None:
        return tool_error("give body (to replace the text), append (to add to it) or tags")
    try:
        note = plugin.state.update(title, body, append, _tags(tags))
    except NoteError as exc:
        return tool_error(str(exc))
    return f"updated note {note.title!r} ({len(note.body)} characters)"


@plugin.tool("notes_list")
def notes_list(tag: str | None = None, limit: int = 100) -> str:
    notes = plugin.state.listing(tag)
    if not notes:
        return "no notes" + (f" tagged {tag!r}" if tag else "")
    lines = [f"- {n.title}" + (f"  [{', '.join(n.tags)}]" if n.tags else "") + f"  ({n.updated})" for n in notes]
    more = len(lines) - limit
    return "\n".join(lines[:limit] + ([f"… and {more} more"] if more > 0 else []))


@plugin.tool("notes_search")
def notes_search(query: str, limit: int = 10) -> str:
    hits = plugin.state.search(query, limit)
    if not hits:
        return f"no notes contain {query!r}"
    return "\n".join(f"- {note.title}: {text}" for note, _, text in hits)


# -- the notes.store facility (called by other plugins through the kernel) -------------------------------


@plugin.method(FACILITY, "get")
def get(title: str) -> dict[str, Any] | None:
    note = plugin.state.get(title)
    return note.as_dict() if note else None


@plugin.method(FACILITY, "put")
def put(title: str, body: str, tags: list[str] | None = None) -> dict[str, Any]:
    return plugin.state.put(title, body, _tags(tags)).as_dict()


@plugin.method(FACILITY, "search")
def search(query: str, limit: int = 10) -> list[dict[str, Any]]:
    return [{"title": n.title, "snippet": s, "score": score} for n, score, s in plugin.state.search(query, limit)]


@plugin.method(FACILITY, "list")
def list_notes(tag: str | None = None) -> list[dict[str, Any]]:
    return [{"title": n.title, "tags": n.tags, "updated": n.updated} for n in plugin.state.listing(tag)]
