"""Rewriting the ``[[providers]]`` of ``<data>/settings.toml`` while keeping everything else the user wrote.

Why text surgery and not "parse, change, dump": the file is the user's, with their comments and layout; a
round trip through a TOML emitter would drop every comment. So the provider tables are cut out of the text
and the new ones appended; the result is parsed back and compared with what was meant (every other table
unchanged, the providers as given). When the comparison fails (a layout the cut does not understand, such as
an inline ``providers = [...]`` array), the whole document is emitted instead: correct, if less pretty.

The file holds keys: it is written to a temporary file created 0600 beside it and renamed over it, so it is
never readable by others, never half-written, and a failed write leaves the old file as it was.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import tomli

from hologram import _toml_writer
from hologram.llm import ProviderSettings
from hologram.settings import TEMPLATE, read_text

_HEADER = re.compile(r"^\s*\[\[?\s*([^\]\s]+)\s*\]\]?\s*(?:#.*)?$")
_ALWAYS = ("name", "kind", "base_url", "model")  # written even when equal to a default: the file reads well


def provider_table(provider: ProviderSettings) -> dict[str, Any]:
    """The ``[[providers]]`` entry as it is written: set fields only, the key unwrapped (it goes to the file)."""
    data = provider.model_dump(exclude_none=True)
    defaults = ProviderSettings.model_fields
    table: dict[str, Any] = {}
    for key, value in data.items():
        if key not in _ALWAYS and key != "api_key" and defaults[key].default == value:
            continue
        table[key] = value
    if provider.api_key is not None:
        table["api_key"] = provider.api_key.get_secret_value()
    return table


def _without_provider_tables(text: str) -> str:
    kept: list[str] = []
    skipping = False
    for line in text.splitlines():
        header = _HEADER.match(line)
        if header is not None:
            key = header.group(1).strip("\"'")
            skipping = key == "providers" or key.startswith("providers.")
        if not skipping:
            kept.append(line)
    return "\n".join(kept).rstrip("\n") + "\n"


def _render(text: str, tables: list[dict[str, Any]]) -> str:
    original = tomli.loads(text)
    others = {k: v for k, v in original.items() if k != "providers"}
    wanted = {**others, "providers": tables} if tables else others
    body = _without_provider_tables(text)
    blocks = [_toml_writer.dumps({"providers": [t]}) for t in tables]
    candidate = body + "".join("\n" + block for block in blocks)
    try:
        if tomli.loads(candidate) == wanted:
            return candidate
    except tomli.TOMLDecodeError:
        pass
    return _toml_writer.dumps(wanted)


def write_private(path: Path, text: str) -> None:
    """Replace ``path`` with ``text``: a 0600 temporary file beside it, synced, renamed over it."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.fchmod(fd, 0o600)  # whatever the umask
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
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
        rendered = _render(text, [provider_table(p) for p in providers])
    except tomli.TOMLDecodeError as exc:
        from hologram.errors import HologramError, Problem

        raise HologramError(
            Problem(f"not valid TOML: {exc}", file=str(path), hint="correct the file, then save the providers again")
        ) from None
    write_private(path, rendered)
