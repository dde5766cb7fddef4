"""Images that tool results carry (a browser screenshot), kept once each under ``<data>/media`` by content hash.

Why a store of its own: a PNG inline in the session log or in the turn API's replay buffers (bounded in bytes,
issue 41) would push everything else out of them. So the log and the ``tool.result`` event hold a reference —
``{"id": sha256, "mime", "bytes", "width"?, "height"?}`` — and a client fetches the bytes with ``media/read``.

On disk, per image: ``<id>`` (the bytes) and ``<id>.json`` (mime, size, dimensions, the sessions that hold it),
both 0600 in a 0700 folder. The same bytes twice are one file; a session referencing them again only adds its
name. Bounds (``[media]`` in settings.toml): an image over ``max_image_bytes`` is not kept (the tool's text says
so, the model sees it too); past ``max_bytes`` in all, the least recently used images go first (a read or a put
counts as a use; the image just put is never the one pruned). Deleting a session drops its name from its images
and deletes those no other session holds.

An id is checked as 64 lowercase hex characters before it is joined to a path: nothing a client sends can name
a file outside the folder. ``read`` answers only for a session the image's record names, so a client that may
read one session cannot fetch another session's images by guessing (or having seen) their hashes.

The index (id → size, in LRU order, and the sessions) is read from the ``.json`` files on first use, not at
start: a kernel whose turns never carry an image reads nothing.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import struct
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger("hologram.sessions.media")

MEDIA_DIR = "media"
ID_PATTERN = re.compile(r"[0-9a-f]{64}")
MAGIC = {  # the first bytes each mime must start with: a mislabelled file is not served as an image
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
    "image/webp": (b"RIFF",),
}


def valid_id(media_id: Any) -> bool:
    """A media id as the store makes them: sha256 in lowercase hex (the only shape joined to a path)."""
    return isinstance(media_id, str) and ID_PATTERN.fullmatch(media_id) is not None


def looks_like(mime: str, data: bytes) -> bool:
    """Whether ``data`` starts as a ``mime`` image does (and, for WebP, says WEBP at byte 8)."""
    starts = MAGIC.get(mime)
    if starts is None or not any(data.startswith(s) for s in starts):
        return False
    return mime != "image/webp" or data[8:12] == b"WEBP"


def dimensions(mime: str, data: bytes) -> tuple[int, int] | None:
    """(width, height) where the header says it cheaply (PNG's IHDR, GIF's screen); None otherwise."""
    if mime == "image/png" and len(data) >= 24 and data[12:16] == b"IHDR":
        width, height = struct.unpack(">II", data[16:24])
        return int(width), int(height)
    if mime == "image/gif" and len(data) >= 10:
        width, height = struct.unpack("<HH", data[6:10])
        return int(width), int(height)
    return None


@dataclass(slots=True)
class _Entry:
    size: int
    sessions: set[str] = field(default_factory=set)


class MediaStore:
    """The images of every session of one data directory (module docstring)."""

    def __init__(self, root: Path, *, max_bytes: int, max_image_bytes: int) -> None:
        self.root = root
        self.max_bytes = max_bytes
        self.max_image_bytes = max_image_bytes
        self._index: OrderedDict[str, _Entry] | None = None  # least recently used first; read on first use
        self.total_bytes = 0
        self.pruned = 0  # images removed for the byte bound since start (hologram status)

    @classmethod
    def in_data_dir(cls, data_dir: Path, *, max_bytes: int, max_image_bytes: int) -> MediaStore:
        return cls(data_dir / MEDIA_DIR, max_bytes=max_bytes, max_image_bytes=max_image_bytes)

    # -- the index ------------------------------------------------------------------------------------------

    def _entries(self) -> OrderedDict[str, _Entry]:
        if self._index is not None:
            return self._index
        found: list[tuple[float, str, _Entry]] = []
        if self.root.is_dir():
            for meta in self.root.glob("*.json"):
                media_id = meta.stem
                data = self.root / media_id
                if not valid_id(media_id):
                    continue
                try:
                    record = json.loads(meta.read_text(encoding="utf-8"))
                    stat = data.stat()
                except (OSError, ValueError):  # half written, or damaged: not served, its files removed
                    self._unlink(media_id)
                    continue
                sessions = record.get("sessions") if isinstance(record, dict) else None
                entry = _Entry(stat.st_size, {s for s in sessions or [] if isinstance(s, str)})
                found.append((stat.st_mtime, media_id, entry))
            kept = {media_id for _, media_id, _ in found}
            for stray in self.root.iterdir():  # bytes whose record never got written (a crash between), temporaries
                name = stray.name
                if (valid_id(name) and name not in kept) or (name.startswith(".") and name.endswith(".tmp")):
                    with contextlib.suppress(OSError):
                        stray.unlink()
        found.sort()
        self._index = OrderedDict((media_id, entry) for _, media_id, entry in found)
        self.total_bytes = sum(entry.size for entry in self._index.values())
        return self._index

    def _meta(self, media_id: str) -> dict[str, Any] | None:
        try:
            record = json.loads((self.root / f"{media_id}.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return record if isinstance(record, dict) else None

    def _write(self, path: Path, data: bytes) -> None:
        """``data`` at ``path`` whole or not at all (a temporary file renamed), mode 0600."""
        temporary = path.with_name(f".{path.name}.tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.replace(temporary, path)
        except BaseException:
            with contextlib.suppress(OSError):
                temporary.unlink()
            raise

    def _unlink(self, media_id: str) -> None:
        for path in (self.root / media_id, self.root / f"{media_id}.json"):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()

    def _touch(self, media_id: str) -> None:
        with contextlib.suppress(OSError):
            os.utime(self.root / media_id)

    # -- what the kernel does -------------------------------------------------------------------------------

    def put(self, session: str, mime: str, data: bytes) -> dict[str, Any] | str:
        """Keep ``data`` for ``session``: its reference, or why it was not kept (a sentence for the tool's
        text: too big, not the image its mime says, the disk refused)."""
        if len(data) > self.max_image_bytes:
            return (
                f"the {mime} image ({len(data):,} bytes) was not kept: over the limit of {self.max_image_bytes:,} "
                "bytes ([media] max_image_bytes in settings.toml)"
            )
        if not looks_like(mime, data):
            return f"the image was not kept: its bytes are not {mime}"
        media_id = hashlib.sha256(data).hexdigest()
        entries = self._entries()
        entry = entries.get(media_id)
        size = dimensions(mime, data)
        record: dict[str, Any] = {"mime": mime, "bytes": len(data)}
        if size is not None:
            record["width"], record["height"] = size
        try:
            self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
            if entry is None:
                self._write(self.root / media_id, data)
                entry = entries[media_id] = _Entry(len(data))
                self.total_bytes += len(data)
            else:
                entries.move_to_end(media_id)
                self._touch(media_id)
            if session not in entry.sessions:
                entry.sessions.add(session)
                meta = {**record, "sessions": sorted(entry.sessions)}
                self._write(self.root / f"{media_id}.json", json.dumps(meta).encode())
        except OSError as exc:
            log.warning("media: %s not kept: %s", media_id[:12], exc)
            return f"the image was not kept: {exc.strerror or exc}"
        self._prune(keep=media_id)
        return {"id": media_id, **record}

    def read(self, session: str, media_id: str) -> tuple[dict[str, Any], bytes] | None:
        """The image's reference and bytes, if ``session`` holds it; None otherwise (unknown, another
        session's, a malformed id, a file gone)."""
        if not valid_id(media_id):
            return None
        entry = self._entries().get(media_id)
        if entry is None or session not in entry.sessions:
            return None
        record = self._meta(media_id)
        try:
            data = (self.root / media_id).read_bytes()
        except OSError:
            return None
        if record is None or hashlib.sha256(data).hexdigest() != media_id:  # changed on disk: not served
            return None
        self._entries().move_to_end(media_id)
        self._touch(media_id)
        ref: dict[str, Any] = {"id": media_id}
        ref.update((k, record[k]) for k in ("mime", "bytes", "width", "height") if k in record)
        return ref, data

    def forget_session(self, session: str) -> int:
        """A deleted session: its name leaves its images; those no other session holds are deleted (how many)."""
        entries = self._entries()
        removed = 0
        for media_id, entry in list(entries.items()):
            if session not in entry.sessions:
                continue
            entry.sessions.discard(session)
            if entry.sessions:
                record = self._meta(media_id) or {}
                with contextlib.suppress(OSError):
                    meta = {**record, "sessions": sorted(entry.sessions)}
                    self._write(self.root / f"{media_id}.json", json.dumps(meta).encode())
                continue
            self._unlink(media_id)
            del entries[media_id]
            self.total_bytes -= entry.size
            removed += 1
        return removed

    def _prune(self, keep: str) -> None:
        entries = self._entries()
        while self.total_bytes > self.max_bytes and len(entries) > 1:
            media_id = next(iter(entries))
            if media_id == keep:
                entries.move_to_end(media_id)
                media_id = next(iter(entries))
            entry = entries.pop(media_id)
            self._unlink(media_id)
            self.total_bytes -= entry.size
            self.pruned += 1

    def status(self) -> dict[str, Any]:
        """For ``hologram status``: what is kept, without reading the folder if nothing was asked yet."""
        if self._index is None:
            return {"images": None, "bytes": None, "max_bytes": self.max_bytes, "pruned": 0}
        kept = {"images": len(self._index), "bytes": self.total_bytes}
        return {**kept, "max_bytes": self.max_bytes, "pruned": self.pruned}
