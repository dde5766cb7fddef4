"""Confinement to one directory: every path a model gives is checked here before any file is touched.

Shared by files, shell and code, so "the workspace" means the same thing to all three. The rules: a path is
relative, has no `..` component, and — after every symlink in it is followed — still lies inside the
workspace. Each refusal names the path, so the model can correct itself instead of retrying blindly.
"""

from __future__ import annotations

import contextlib
import functools
import os
import tempfile
from pathlib import Path, PurePosixPath


class OutsideWorkspace(ValueError):
    """A path that would leave the workspace; the message names it and says which rule it broke."""


def workspace_root(configured: str | None, data_dir: str) -> Path:
    """`config.workspace` (relative paths are relative to the plugin's data dir), default `<data_dir>/workspace`.

    Created if missing and returned fully resolved, so later containment checks compare real paths.
    """
    root = Path(data_dir) / "workspace" if not configured else Path(data_dir) / str(configured)
    root = root.expanduser()
    root.mkdir(parents=True, exist_ok=True)
    return root.resolve(strict=True)


class Workspace:
    def __init__(self, root: Path) -> None:
        self.root = root.resolve(strict=True)

    def resolve(self, path: str | None) -> Path:
        """The real path for a model-given relative `path`, or OutsideWorkspace naming why it is refused."""
        text = (path or ".").strip() or "."
        if "\x00" in text:
            raise OutsideWorkspace(f"path {text!r} contains a NUL byte")
        pure = PurePosixPath(text)
        if pure.is_absolute() or text.startswith("~"):
            raise OutsideWorkspace(
                f"path {text!r} is absolute; give a path relative to the workspace (e.g. 'notes/todo.md')"
            )
        if ".." in pure.parts:
            raise OutsideWorkspace(f"path {text!r} contains '..'; paths must stay inside the workspace")
        real = (self.root / pure).resolve(strict=False)
        if not self.contains(real):
            raise OutsideWorkspace(f"path {text!r} leads outside the workspace through a symlink; refused")
        return real

    def contains(self, real: Path) -> bool:
        return real == self.root or real.is_relative_to(self.root)

    def relative(self, real: Path) -> str:
        """How to show a real path to the model: relative to the workspace, POSIX style."""
        if real == self.root:
            return "."
        return real.relative_to(self.root).as_posix()


@functools.cache
def new_file_mode() -> int:
    """The mode ``open()`` gives a new file under this process's umask (mkstemp always makes 0600, which a
    user with umask 022 would not expect; under Hologram's 077 it is 0600 anyway). Read once from /proc: the
    umask is set before the plugin starts and ``os.umask`` can only read it by changing it."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o600


def atomic_write(target: Path, data: bytes) -> None:
    """Write to a temp file in the same directory, fsync, then rename over `target`.

    A reader sees the old or the new content, never half a file; a crash leaves at most a stray temp file
    (named `.NAME.*.tmp`), never a truncated target. The target's permission bits are kept.
    """
    mode = target.stat().st_mode & 0o7777 if target.exists() else None
    fd, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, mode if mode is not None else new_file_mode())  # as open() would have made it
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise
