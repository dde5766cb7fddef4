"""Write plugin manifests for tests, so each test states only the parts it is about.

`manifest_text` renders the sections in the order a reader expects — ``[plugin]``, ``[facilities]``,
``[start]``, then `extra` (raw TOML: ``[stages]``, ``[[tools]]``, or a stray key a test wants rejected), then
``[config]`` — and writes values as JSON, which is valid TOML for strings, numbers, booleans and lists;
tables become inline tables (``run = { command = [...], env = { K = "v" } }``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def toml_value(value: Any) -> str:
    """`value` as a TOML value: JSON for scalars and lists, an inline table for a mapping."""
    if isinstance(value, Mapping):
        items = ", ".join(f"{_key(k)} = {toml_value(v)}" for k, v in value.items())
        return "{ " + items + " }" if items else "{}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


def _key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else json.dumps(key, ensure_ascii=False)


def module_run(name: str) -> dict[str, Any]:
    """The default ``run``: a module named after the plugin under the (unimported) `tests_plugins` package."""
    return {"module": f"tests_plugins.{name.replace('-', '_')}"}


def manifest_text(
    name: str,
    *,
    run: Mapping[str, Any] | None = None,
    version: str = "0.1.0",
    description: str | None = "a test plugin",
    provides: Iterable[str] = (),
    requires: Iterable[str] = (),
    after_if_present: Iterable[str] = (),
    start: Mapping[str, Any] | None = None,
    config: Mapping[str, Any] | None = None,
    extra: str = "",
) -> str:
    """A manifest for plugin `name`; ``description=None`` leaves the key out, `start` and `config` are
    written as sections only when given."""
    plugin = f"[plugin]\nname = {toml_value(name)}\nversion = {toml_value(version)}\n"
    if description is not None:
        plugin += f"description = {toml_value(description)}\n"
    plugin += f"run = {toml_value(run if run is not None else module_run(name))}\n"
    facilities = (
        f"[facilities]\nprovides = {toml_value(list(provides))}\nrequires = {toml_value(list(requires))}\n"
        f"after_if_present = {toml_value(list(after_if_present))}\n"
    )
    parts = [plugin, facilities]
    if start is not None:
        parts.append("[start]\n" + "".join(f"{_key(k)} = {toml_value(v)}\n" for k, v in start.items()))
    text = "\n".join(parts) + extra
    if config is not None:
        text += "\n[config]\n" + "".join(f"{_key(k)} = {toml_value(v)}\n" for k, v in config.items())
    return text


def write_manifest(directory: Path, name: str, **fields: Any) -> Path:
    """Write ``directory/<name>.toml`` (see `manifest_text` for `fields`) and return its path."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.toml"
    path.write_text(manifest_text(name, **fields), encoding="utf-8")
    return path


def copy_shipped(name: str, into: Path) -> Path:
    """Copy the shipped manifest ``manifests/NAME.toml`` into `into`, with the config schema file it names
    (``NAME.config.schema.json``: a manifest's ``config_schema`` is relative to the manifest, and
    `hologram build` refuses one whose file is missing)."""
    source = Path(__file__).resolve().parents[2] / "manifests"
    into.mkdir(parents=True, exist_ok=True)
    target = into / f"{name}.toml"
    target.write_bytes((source / f"{name}.toml").read_bytes())
    schema = source / f"{name}.config.schema.json"
    if schema.exists():
        (into / schema.name).write_bytes(schema.read_bytes())
    return target
