"""Read manifests from disk into validated models, turning every failure into located problems."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import tomli
from pydantic import ValidationError

from hologram.base.errors import HologramError, Problem
from hologram.manifest.locate import locate
from hologram.manifest.model import Manifest, relevant_content

_TOML_POSITION = re.compile(r"\(at line (\d+), column (\d+)\)")


@dataclass(frozen=True)
class LoadedManifest:  # cached_property needs a __dict__, so no slots
    """A validated manifest and where it came from."""

    manifest: Manifest
    path: Path
    source: str  # "builtin", "path" or "entry-point:<distribution>"

    @property
    def name(self) -> str:
        return self.manifest.plugin.name

    @cached_property
    def relevant_hash(self) -> str:
        content = relevant_content(self.manifest)
        if self.manifest.plugin.config_schema is not None:  # a changed schema makes the lock stale
            content["config_schema"] = self.config_schema
        return content_hash(content)

    @property
    def config_schema_path(self) -> Path | None:
        """The file ``plugin.config_schema`` names, beside the manifest; None if it names none."""
        relative = self.manifest.plugin.config_schema
        return None if relative is None else self.path.parent / relative

    @cached_property
    def config_schema(self) -> dict[str, Any] | None:
        """The JSON Schema of the plugin's configuration, read from `config_schema_path` (None without one).

        Read from the file `hologram check --write` wrote, never by importing the plugin: building a lock
        runs no plugin code. A missing or broken file is a problem naming the manifest's key."""
        path = self.config_schema_path
        if path is None:
            return None
        fix = "run `hologram check --write` in the plugin's repository to write it from Plugin(config=...)"
        try:
            schema = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            problem = f"{path.name}: cannot read: {exc.strerror or exc}"
            raise HologramError(Problem(problem, file=str(self.path), key="plugin.config_schema", hint=fix)) from None
        except ValueError as exc:
            problem = f"{path.name}: not JSON: {exc}"
            raise HologramError(Problem(problem, file=str(self.path), key="plugin.config_schema", hint=fix)) from None
        if not isinstance(schema, dict):
            problem = f"{path.name}: not a JSON Schema object"
            raise HologramError(Problem(problem, file=str(self.path), key="plugin.config_schema", hint=fix))
        return schema


def content_hash(data: Any) -> str:
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def format_key(loc: tuple[str | int, ...]) -> str:
    """`("tools", 1, "name")` → `tools[1].name`, the way a TOML author thinks of it."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _describe_input(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _problems_from_validation(exc: ValidationError, text: str, file: str) -> list[Problem]:
    problems = []
    for error in exc.errors(include_url=False):
        loc = tuple(error["loc"])
        key = format_key(loc) or None
        kind = error["type"]
        if kind == "extra_forbidden":
            message = "unknown key"
            hint = "remove it or check its spelling; see docs/manifest.md for the keys a manifest may have"
        elif kind == "missing":
            message = "required key is missing"
            hint = None
        else:
            message = str(error["msg"]).removeprefix("Value error, ")
            if kind not in ("value_error", "assertion_error") and "input" in error:
                message += f" (got {_describe_input(error['input'])})"
            hint = None
        line = locate(text, loc) if loc else None
        if kind == "missing" and line is None and len(loc) > 1:
            line = locate(text, loc[:-1])
        problems.append(Problem(message, file=file, line=line, key=key, hint=hint))
    return problems


def parse_manifest(text: str, file: str) -> Manifest:
    """Parse and validate manifest text; raise `HologramError` with every problem found."""
    try:
        data = tomli.loads(text)
    except tomli.TOMLDecodeError as exc:
        message = str(exc)
        position = _TOML_POSITION.search(message)
        line = int(position.group(1)) if position else None
        message = _TOML_POSITION.sub("", message).strip()
        raise HologramError(
            Problem(f"invalid TOML: {message}", file=file, line=line, hint="fix the TOML syntax")
        ) from None
    try:
        return Manifest.model_validate(data)
    except ValidationError as exc:
        raise HologramError(_problems_from_validation(exc, text, file)) from None


def load_manifest(path: Path, source: str = "path") -> LoadedManifest:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise HologramError(Problem("not UTF-8 text", file=str(path), hint="save the manifest as UTF-8")) from None
    except OSError as exc:
        raise HologramError(Problem(f"cannot read: {exc.strerror}", file=str(path))) from None
    return LoadedManifest(parse_manifest(text, str(path)), path, source)
