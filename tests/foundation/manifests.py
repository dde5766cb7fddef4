"""Write small manifests for tests, so each test states only the parts it is about."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path


def toml_list(values: Sequence[str]) -> str:
    return json.dumps(list(values), ensure_ascii=False)


def manifest_text(
    name: str,
    *,
    provides: Sequence[str] = (),
    requires: Sequence[str] = (),
    after_if_present: Sequence[str] = (),
    description: str = "a test plugin",
    extra: str = "",
) -> str:
    return (
        f'[plugin]\nname = "{name}"\nversion = "0.1.0"\ndescription = "{description}"\n'
        f'run = {{ module = "tests_plugins.{name.replace("-", "_")}" }}\n\n'
        f"[facilities]\nprovides = {toml_list(provides)}\nrequires = {toml_list(requires)}\n"
        f"after_if_present = {toml_list(after_if_present)}\n{extra}"
    )


def write_manifest(directory: Path, name: str, **kwargs: object) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.toml"
    path.write_text(manifest_text(name, **kwargs), encoding="utf-8")  # type: ignore[arg-type]
    return path
