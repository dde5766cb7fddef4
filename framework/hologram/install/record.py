"""What `hologram plugin add` did, kept in `<data>/plugins-added.json`, so `remove` undoes exactly that.

One entry per add: the plugins it brought, how (editable project, manifest directory, package), the
distributions pip installed *new* for it (only those are uninstalled again: a dependency that was already
there stays), the lock it went into and the interpreter it went into. The file is the user's (0600),
written whole and replaced at once; a damaged one is named and left as it is, never overwritten.

`exclusive(data_dir)` serialises adds and removes on one data directory (the CLI and the kernel serving the
web page may both try): an flock on `<data>/plugins-added.lock`, released when the process ends, however.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from hologram.base.errors import HologramError, Problem

FILE = "plugins-added.json"
LOCK_FILE = "plugins-added.lock"
VERSION = 1


@dataclass(frozen=True)
class Entry:
    plugins: tuple[str, ...]
    kind: str
    """editable | path | package"""
    target: str
    """The directory (absolute) or the requirement."""
    distributions: tuple[tuple[str, str], ...] = ()
    """(canonical name, version) that pip installed new for this add; `remove` uninstalls them."""
    lock: str = ""
    python: str = ""
    added_at: str = field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["plugins"] = list(self.plugins)
        data["distributions"] = [{"name": n, "version": v} for n, v in self.distributions]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Entry:
        return cls(
            plugins=tuple(str(p) for p in data["plugins"]),
            kind=str(data["kind"]),
            target=str(data["target"]),
            distributions=tuple((str(d["name"]), str(d["version"])) for d in data.get("distributions", [])),
            lock=str(data.get("lock", "")),
            python=str(data.get("python", "")),
            added_at=str(data.get("added_at", "")),
        )


def path(data_dir: Path) -> Path:
    return data_dir / FILE


def read(data_dir: Path) -> list[Entry]:
    file = path(data_dir)
    if not file.is_file():
        return []
    fix = "fix or delete the file; it only records what `hologram plugin add` installed"
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or data.get("version") != VERSION:
            raise ValueError(f"not a version {VERSION} record")
        return [Entry.from_json(e) for e in data.get("added", [])]
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
        problem = Problem(f"cannot read the record of added plugins: {exc}", file=str(file), hint=fix)
        raise HologramError(problem) from None


def write(data_dir: Path, entries: list[Entry]) -> None:
    data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)  # added before the first `hologram up`
    file = path(data_dir)
    temporary = file.with_name(file.name + ".tmp")
    text = json.dumps({"version": VERSION, "added": [e.to_json() for e in entries]}, indent=2, ensure_ascii=False)
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text + "\n")
    os.replace(temporary, file)


def find(entries: list[Entry], plugin: str) -> Entry | None:
    return next((e for e in entries if plugin in e.plugins), None)


@contextlib.contextmanager
def exclusive(data_dir: Path) -> Iterator[None]:
    """Hold the data directory's add/remove lock, or refuse at once naming who holds it."""
    data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    lock = data_dir / LOCK_FILE
    fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            other = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
            raise HologramError(
                Problem(
                    f"another plugin add or remove is running on this data directory (pid {other})",
                    file=str(lock),
                    hint="wait for it to finish, then try again",
                )
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)
