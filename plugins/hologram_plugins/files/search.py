"""Walking the workspace: glob matching and text search that never follow a symlink out of it.

`pathlib.Path.glob` follows directory symlinks on the Python versions we support, so a link to `/` inside the
workspace would let `**/*` enumerate the whole disk; this walker uses `os.walk(followlinks=False)` and checks
every file's real path before opening it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from functools import lru_cache
from pathlib import Path

from hologram_plugins.files.workspace import Workspace

SKIP_DIRS = frozenset({".git", ".hg", ".svn", "__pycache__", "node_modules", ".venv", ".mypy_cache"})
TEXT_SNIFF_BYTES = 8192


@lru_cache(maxsize=128)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """Translate a glob (`*`, `?`, `[abc]`, `**` for any number of directories) into a full-match regex.

    A pattern without `/` matches the file name in any directory (`*.py` finds `src/a.py`), which is what
    people mean when they type it.
    """
    if "/" not in pattern:
        pattern = "**/" + pattern
    out: list[str] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = pattern.find("]", i + 1)
            if end == -1:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1 : end].replace("\\", "\\\\")
                out.append(f"[^{body[1:]}]" if body.startswith("!") else f"[{body}]")
                i = end
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out), re.DOTALL)


def walk_files(workspace: Workspace, start: Path, wanted: Callable[[Path], bool] | None = None) -> Iterator[Path]:
    """Regular files under `start`, sorted per directory, skipping VCS/cache dirs and escaping symlinks.
    ``wanted``: a cheap filter (a glob) applied before the per-file resolve and stat."""
    for directory, dirs, files in os.walk(start, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        for name in sorted(files):
            path = Path(directory) / name
            if wanted is not None and not wanted(path):
                continue
            real = path.resolve()
            if workspace.contains(real) and real.is_file():
                yield path


def looks_binary(head: bytes) -> bool:
    """NUL bytes or undecodable UTF-8 in the first block: the heuristic git and grep use."""
    if b"\x00" in head:
        return True
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start < len(head) - 4  # a multi-byte character cut at the block's end is fine
    return False
