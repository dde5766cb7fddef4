"""files: list, read, write, edit and search files — confined to one workspace directory.

Every path goes through `Workspace.resolve` (no absolute paths, no `..`, no symlink out); writes are atomic.
Refusals are tool errors whose text names the path, so the model can correct the call.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from hologram.sdk import Plugin, StartContext, tool_error
from hologram_plugins.files.search import TEXT_SNIFF_BYTES, glob_regex, looks_binary, walk_files
from hologram_plugins.files.workspace import OutsideWorkspace, Workspace, atomic_write, workspace_root

WORKSPACE_DESCRIPTION = (
    "The workspace folder, relative to the plugin's data dir (<data>/plugins/NAME); the default is the one "
    "folder the files, shell and code plugins share."
)


class FilesConfig(BaseModel):
    """settings.toml's ``[plugins.files]``, checked at start (its JSON Schema: manifests/files.config.schema.json)."""

    model_config = ConfigDict(extra="forbid")  # a misspelt key fails the start, naming it

    workspace: str = Field("../../workspace", min_length=1, description=WORKSPACE_DESCRIPTION)
    max_inline_bytes: int = Field(
        256 * 1024, gt=0, description="Larger reads return the head inline and the whole file as a blob."
    )
    max_read_bytes: int = Field(
        16 * 1024 * 1024, gt=0, description="Larger files are refused (the arena is not a file server)."
    )
    max_search_file_bytes: int = Field(2 * 1024 * 1024, gt=0, description="Text search skips files larger than this.")


@dataclass(frozen=True)
class FilesState:
    workspace: Workspace
    config: FilesConfig

    @classmethod
    def start(cls, ctx: StartContext[FilesConfig]) -> FilesState:
        return cls(Workspace(workspace_root(ctx.config.workspace, ctx.data_dir)), ctx.config)


plugin = Plugin("files", state=FilesState.start, config=FilesConfig)


def _guarded(path: str | None) -> Path:
    return plugin.state.workspace.resolve(path)


@plugin.tool("files_list")
def files_list(path: str = ".", recursive: bool = False, max_entries: int = 500) -> dict[str, Any] | str:
    try:
        real = _guarded(path)
    except OutsideWorkspace as exc:
        return tool_error(str(exc))
    ws = plugin.state.workspace
    if not real.exists():
        return tool_error(f"{path!r} does not exist")
    if not real.is_dir():
        return tool_error(f"{path!r} is a file, not a directory; use files_read to read it")
    lines: list[str] = []
    entries = _walk_all(real) if recursive else list(real.iterdir())
    for entry in sorted(entries, key=lambda p: p.as_posix()):
        if len(lines) >= max_entries:
            lines.append(f"… more entries not shown (limit {max_entries})")
            break
        lines.append(_describe(entry, ws))
    return "\n".join(lines) if lines else f"{ws.relative(real)} is empty"


def _walk_all(top: Path) -> list[Path]:
    found: list[Path] = []
    for directory, dirs, files in os.walk(top, followlinks=False):
        dirs[:] = [d for d in dirs if d not in {".git", "__pycache__"}]
        found.extend(Path(directory) / d for d in dirs)
        found.extend(Path(directory) / f for f in files)
    return found


def _describe(entry: Path, ws: Workspace) -> str:
    shown = entry.relative_to(ws.root).as_posix()
    if entry.is_symlink():
        target = entry.resolve()
        where = ws.relative(target) if ws.contains(target) else "outside the workspace (not accessible)"
        return f"{shown} -> {where}"
    if entry.is_dir():
        return f"{shown}/"
    try:
        return f"{shown}  ({entry.stat().st_size} bytes)"
    except OSError:
        return shown


@plugin.tool("files_read")
def files_read(path: str, start_line: int | None = None, end_line: int | None = None) -> dict[str, Any] | str:
    try:
        real = _guarded(path)
    except OutsideWorkspace as exc:
        return tool_error(str(exc))
    if not real.is_file():
        return tool_error(f"{path!r} is a directory; use files_list" if real.is_dir() else f"{path!r} does not exist")
    size = real.stat().st_size
    if size > plugin.state.config.max_read_bytes:
        return tool_error(f"{path!r} is {size} bytes, over the {plugin.state.config.max_read_bytes}-byte read limit")
    data = real.read_bytes()
    if looks_binary(data[:TEXT_SNIFF_BYTES]):
        return tool_error(f"{path!r} is a binary file ({size} bytes); files_read returns text only")
    text = data.decode("utf-8", errors="replace")
    if start_line is not None or end_line is not None:
        return _line_range(text, path, start_line, end_line)
    limit = plugin.state.config.max_inline_bytes
    if size <= limit:
        return text
    head = data[:limit].decode("utf-8", errors="ignore")
    head = head[: head.rfind("\n") + 1] or head
    total = text.count("\n") + (not text.endswith("\n"))
    shown = head.count("\n")
    note = (
        f"\n[… {path} is {size} bytes / {total} lines; lines 1-{shown} are shown above, the whole file is "
        f"attached as a blob. Read more with start_line={shown + 1}.]"
    )
    return {"content": head + note, "blob": plugin.blob(data)}


def _line_range(text: str, path: str, start_line: int | None, end_line: int | None) -> dict[str, Any] | str:
    lines = text.splitlines(keepends=True)
    first = max(1, start_line or 1)
    last = min(len(lines), end_line or len(lines))
    if first > len(lines):
        return tool_error(f"{path!r} has {len(lines)} lines; start_line {first} is past the end")
    if last < first:
        return tool_error(f"end_line {end_line} is before start_line {first}")
    return f"[lines {first}-{last} of {len(lines)} in {path}]\n" + "".join(lines[first - 1 : last])


@plugin.tool("files_write")
def files_write(path: str, content: str, create_dirs: bool = True) -> dict[str, Any] | str:
    try:
        real = _guarded(path)
    except OutsideWorkspace as exc:
        return tool_error(str(exc))
    if real == plugin.state.workspace.root or real.is_dir():
        return tool_error(f"{path!r} is a directory")
    if not real.parent.exists():
        if not create_dirs:
            return tool_error(f"the directory of {path!r} does not exist (pass create_dirs=true to create it)")
        real.parent.mkdir(parents=True, exist_ok=True)
    existed = real.exists()
    data = content.encode("utf-8")
    atomic_write(real, data)
    return f"{'overwrote' if existed else 'created'} {plugin.state.workspace.relative(real)} ({len(data)} bytes)"


@plugin.tool("files_edit")
def files_edit(path: str, old_text: str, new_text: str) -> dict[str, Any] | str:
    try:
        real = _guarded(path)
    except OutsideWorkspace as exc:
        return tool_error(str(exc))
    if not real.is_file():
        return tool_error(f"{path!r} does not exist or is not a file")
    if old_text == "":
        return tool_error("old_text is empty; give the exact text to replace")
    data = real.read_bytes()
    if looks_binary(data[:TEXT_SNIFF_BYTES]):
        return tool_error(f"{path!r} is a binary file; files_edit edits text only")
    text = data.decode("utf-8")
    count = text.count(old_text)
    if count == 0:
        return tool_error(f"old_text was not found in {path!r}; read the file and copy the text exactly")
    if count > 1:
        return tool_error(f"old_text occurs {count} times in {path!r}; include more surrounding text to make it unique")
    atomic_write(real, text.replace(old_text, new_text, 1).encode("utf-8"))
    line = text[: text.index(old_text)].count("\n") + 1
    return f"edited {plugin.state.workspace.relative(real)} at line {line}"


@plugin.tool("files_search")
def files_search(
    pattern: str = "*", query: str | None = None, path: str = ".", regex: bool = False, max_results: int = 100
) -> dict[str, Any] | str:
    try:
        start = _guarded(path)
    except OutsideWorkspace as exc:
        return tool_error(str(exc))
    if not start.is_dir():
        return tool_error(f"{path!r} is not a directory")
    matcher = glob_regex(pattern)
    finder: re.Pattern[str] | None = None
    if query:
        try:
            finder = re.compile(query if regex else re.escape(query), re.IGNORECASE)
        except re.error as exc:
            return tool_error(f"bad regular expression {query!r}: {exc}")
    ws = plugin.state.workspace
    results: list[str] = []
    for file in walk_files(ws, start, lambda f: matcher.fullmatch(f.relative_to(start).as_posix()) is not None):
        shown = file.relative_to(ws.root).as_posix()
        if finder is None:
            results.append(shown)
        else:
            results.extend(_grep(file, shown, finder, max_results - len(results)))
        if len(results) >= max_results:
            results.append(f"… stopped at {max_results} results")
            break
    if not results:
        return f"no {'matches for ' + repr(query) if query else 'files'} matching {pattern!r} under {path!r}"
    return "\n".join(results)


def _grep(file: Path, shown: str, finder: re.Pattern[str], room: int) -> list[str]:
    try:
        if file.stat().st_size > plugin.state.config.max_search_file_bytes:
            return []
        data = file.read_bytes()  # one read: the sniff and the text (splitlines handles \r\n and \r)
    except OSError:
        return []
    if looks_binary(data[:TEXT_SNIFF_BYTES]):
        return []
    text = data.decode("utf-8", errors="replace")
    hits: list[str] = []
    for number, line in enumerate(text.splitlines(), 1):
        if finder.search(line):
            hits.append(f"{shown}:{number}: {line.strip()[:300]}")
            if len(hits) >= room:
                break
    return hits
