"""Rewriting the ``[[providers]]`` of ``<data>/settings.toml`` while keeping everything else the user wrote.

The file is the user's, with their comments and layout, so it is edited with `tomlkit`, which parses TOML
into a document that keeps every comment, blank line and quote style, and writes it back unchanged where
nothing changed. Each provider the caller passes updates the table of the same ``name`` in place (its
comments, quoting and key order kept; keys it no longer has removed, new ones appended); other providers
get new tables, the dropped ones go with their comments. tomlkit files what stands between two tables under
the table above; this module reads it as a person does (`_tail`): the comment lines right above a header
belong to that header, so a kept provider moves with the comment above it, and what stood above the table
after the providers stays above it. The result is parsed back with tomli and compared with what was
meant (every other table unchanged, the providers as given); when a layout defeats the in-place edit (an
inline ``providers = [...]`` array, ``[[providers]]`` split by other tables), the providers are removed and
appended as new tables instead, and if even that does not parse back right, the whole document is emitted
(correct, comments lost, a warning naming the file). Line endings follow the file's: CRLF stays CRLF.

tomlkit is imported when a write happens, never at import: the kernel imports this module at start-up
(the provider admin facility) and edits settings rarely.

The file holds keys: it is written to a temporary file created 0600 beside it and renamed over it, so it is
never readable by others, never half-written, and a failed write leaves the old file as it was. Nothing here
logs a value; parse errors are tomli's, which name a line and column, never the text.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import tomli

from hologram.config.settings import TEMPLATE, read_text
from hologram.llm import ProviderSettings

if TYPE_CHECKING:
    from tomlkit.items import Comment, Table, Whitespace

_ALWAYS = ("name", "kind", "base_url", "model")  # written even when equal to a default: the file reads well
_log = logging.getLogger(__name__)


def provider_table(provider: ProviderSettings) -> dict[str, Any]:
    """The ``[[providers]]`` entry as it is written: set fields only, the key unwrapped (it goes to the file)."""
    data = provider.model_dump(exclude_none=True)
    defaults = {name: f.default for name, f in ProviderSettings.model_fields.items()}
    table: dict[str, Any] = {}
    for key, value in data.items():
        if key not in _ALWAYS and key != "api_key" and defaults[key] == value:
            continue
        table[key] = value
    if provider.api_key is not None:
        table["api_key"] = provider.api_key.get_secret_value()
    return table


class _Layout(Exception):
    """The document's providers are not one array of tables that can be edited in place."""


_Decor = list["Comment | Whitespace"]


def _tail(table: Table) -> tuple[_Decor, _Decor, _Decor]:
    """Cut what follows the table's last key — which tomlkit files under the table — and split it the way a
    reader sees it: (comments at the end of this table, the blank lines after them, the comment lines right
    above whatever header comes next)."""
    from tomlkit.items import Comment, Whitespace

    body = table.value.body
    tail: _Decor = []
    while body and body[-1][0] is None and isinstance(body[-1][1], (Comment, Whitespace)):
        tail.insert(0, body.pop()[1])  # type: ignore[arg-type]  # narrowed by the isinstance above
    blank = [i for i, item in enumerate(tail) if isinstance(item, Whitespace)]
    if not blank:
        return tail, [], []
    first = last = blank[-1]
    while first > 0 and isinstance(tail[first - 1], Whitespace):
        first -= 1
    return tail[:first], tail[first : last + 1], tail[last + 1 :]


def _fill(table: Table, values: dict[str, Any]) -> Table:
    """`table` holding exactly `values`, edited in place: keys it no longer has removed, new ones appended,
    the others set (tomlkit keeps the line's comment and the string's quoting of a key it sets)."""
    for key in [k for k in table if k not in values]:
        del table[key]
    for key, value in values.items():
        table[key] = value
    return table


def _in_place(text: str, tables: list[dict[str, Any]]) -> str:
    """The providers edited where they are: a kept provider (same name) keeps its comments — those above its
    header, at the end of its table and on its keys' lines — a dropped one loses them; the blank lines and
    comments that stood above the table after the providers stay above it."""
    import tomlkit
    from tomlkit.items import AoT, Table, Whitespace

    document = tomlkit.parse(text)
    old = document.get("providers")
    if not isinstance(old, AoT) or not old or not all(isinstance(t, Table) for t in old):
        raise _Layout  # absent (appended), inline or split: `_appended`
    olds: list[Table] = list(old)
    at = next(i for i, (key, _) in enumerate(document.body) if key is not None and key.key == "providers")
    previous = document.body[at - 1][1] if at else None
    before: Table | None = previous if isinstance(previous, Table) else None
    own: dict[str, _Decor] = {}
    above: dict[str, _Decor] = {}
    pending: _Decor = []  # comments above the next header, as they are cut
    if before is not None:
        ending, blank, pending = _tail(before)
        for item in ending + blank:
            before.add(item)
    end_blank: _Decor = []
    for table in olds:
        name = str(table.get("name"))
        above[name], (own[name], end_blank, pending) = pending, _tail(table)
    end_above = pending  # what stood above the table after the providers
    by_name: dict[str, Table | None] = {str(t.get("name")): t for t in olds}
    new = [_fill(by_name.pop(str(want["name"]), None) or tomlkit.table(), want) for want in tables]
    names = [str(want["name"]) for want in tables]
    if before is not None and new:
        for item in above.get(names[0], []):
            before.add(item)
    for slot, table in enumerate(new):
        gap = own.get(names[slot], []) + (
            [tomlkit.nl(), *above.get(names[slot + 1], [])] if slot + 1 < len(new) else end_blank + end_above
        )
        for item in gap:
            table.add(item)
    if new:
        first_indent = olds[0].trivia.indent
        document["providers"] = AoT(new)
        for slot, table in enumerate(new):  # the blank lines are the gaps' (tomlkit adds one before new tables)
            table.trivia.indent = first_indent if slot == 0 else ""
        return tomlkit.dumps(document)
    document.remove("providers")
    if before is not None:  # no provider left: what stood above the next table goes under the one before
        ends_blank = bool(before.value.body) and isinstance(before.value.body[-1][1], Whitespace)
        for item in ([] if ends_blank else end_blank) + end_above:
            before.add(item)
    return tomlkit.dumps(document)


def _appended(text: str, tables: list[dict[str, Any]]) -> str:
    import tomlkit

    document = tomlkit.parse(text)
    if "providers" in document:
        document.remove("providers")
    body = tomlkit.dumps(document)
    if not tables:
        return body
    block = tomlkit.dumps({"providers": tables})
    return body.rstrip("\r\n") + "\n\n" + block if body.strip() else block


def _whole(text: str, tables: list[dict[str, Any]]) -> str:
    import tomlkit

    others = {k: v for k, v in tomli.loads(text).items() if k != "providers"}
    return tomlkit.dumps({**others, "providers": tables} if tables else others)


def _same_line_endings(text: str, out: str) -> str:
    """`out` with CRLF line endings if `text` has only those (tomlkit writes the lines it adds with LF)."""
    if "\r\n" in text and text.count("\r\n") == text.count("\n"):
        return out.replace("\r\n", "\n").replace("\n", "\r\n")
    return out


def _render(text: str, tables: list[dict[str, Any]], path: Path) -> str:
    """The new text; raises `tomli.TOMLDecodeError` when `text` is not TOML."""
    from tomlkit.exceptions import TOMLKitError

    original = tomli.loads(text)
    others = {k: v for k, v in original.items() if k != "providers"}
    wanted = {**others, "providers": tables} if tables else others
    edits: tuple[Callable[[str, list[dict[str, Any]]], str], ...] = (_in_place, _appended)
    for edit in edits:
        try:
            candidate = _same_line_endings(text, edit(text, tables))
            if tomli.loads(candidate) == wanted:
                return candidate
        except (_Layout, TOMLKitError, tomli.TOMLDecodeError):
            continue
    _log.warning("%s: its layout could not be edited in place; written whole, its comments are lost", path)
    return _same_line_endings(text, _whole(text, tables))


def write_private(path: Path, text: str) -> None:
    """Replace ``path`` with ``text``: a 0600 temporary file beside it, synced, renamed over it."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.fchmod(fd, 0o600)  # whatever the umask
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:  # newline="": the text's endings as they are
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def replace_providers(path: Path, providers: Sequence[ProviderSettings]) -> None:
    """Write ``providers`` (in order) as the file's ``[[providers]]``; every other table stays as it was.

    Raises `HologramError` (naming the file, never a value) when the current file cannot be read or parsed."""
    text = read_text(path) if path.exists() else TEMPLATE
    try:
        rendered = _render(text, [provider_table(p) for p in providers], path)
    except tomli.TOMLDecodeError as exc:
        from hologram.base.errors import HologramError, Problem

        raise HologramError(
            Problem(f"not valid TOML: {exc}", file=str(path), hint="correct the file, then save the providers again")
        ) from None
    write_private(path, rendered)
