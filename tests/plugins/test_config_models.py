"""Each built-in plugin declares a pydantic config model (issue 34 §3): its manifest's ``[config]`` defaults
validate against it, agree with the model's own defaults, the published schema file is the model's JSON
Schema, and `hologram build` carries that schema into the lock for the web UI.

Mutation checks (done): a manifest default changed to a wrong type (notes ``folder = 3``) turns the first
test red; a model default changed (web ``max_chars`` 20000 → 10000) turns the second red; a field added to a
model without `hologram check --write` turns the third red; `plugin_entry` without ``config-schema`` turns
the fourth red.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hologram.manifest import load_manifest
from hologram.manifest.discovery import builtin_manifest_dir
from hologram.plan.check import schema_text
from hologram.plan.lock import read_lock
from hologram.plan.signatures import python_module
from hologram.sdk._describe import find_plugin

BUILTINS = [
    "notes",
    "files",
    "shell",
    "code",
    "calendar",
    "rss",
    "web",
    "http",
    "reminders",
    "todos",
    "skills",
    "terminal",
    "agents",
    "browser",
]


def model_of(name: str) -> tuple[Any, Any]:
    loaded = load_manifest(builtin_manifest_dir() / f"{name}.toml", "builtin")
    module = python_module(loaded.manifest)
    assert module is not None
    importlib.import_module(module)
    plugin = find_plugin(module)
    assert plugin.config_model is not None, f"{name} declares no Plugin(config=...)"
    return loaded, plugin.config_model


@pytest.mark.parametrize("name", BUILTINS)
def test_manifest_defaults_validate_against_the_model(name: str) -> None:
    loaded, model = model_of(name)
    model.model_validate(dict(loaded.manifest.config))


@pytest.mark.parametrize("name", BUILTINS)
def test_manifest_defaults_are_the_models_defaults(name: str) -> None:
    """A user who deletes the manifest's [config] (or runs the plugin in a test) gets the same plugin."""
    loaded, model = model_of(name)
    assert model().model_dump() == model.model_validate(dict(loaded.manifest.config)).model_dump()


@pytest.mark.parametrize("name", BUILTINS)
def test_a_misspelt_key_is_refused_not_ignored(name: str) -> None:
    """A key the model does not know fails the start naming it (``plugins.rss.max_items: Extra inputs are not
    permitted``) instead of being ignored: a user who misspells a setting learns it at once. Mutation check
    (done): the built-ins' ``extra="forbid"`` removed turns this red for each."""
    from pydantic import ValidationError

    loaded, model = model_of(name)
    with pytest.raises(ValidationError) as caught:
        model.model_validate({**dict(loaded.manifest.config), "colour_scheme": "dark"})
    assert [e["loc"] for e in caught.value.errors()] == [("colour_scheme",)]


@pytest.mark.parametrize("name", BUILTINS)
def test_published_schema_is_the_models(name: str) -> None:
    loaded, model = model_of(name)
    assert loaded.config_schema_path is not None
    assert loaded.config_schema_path.read_text() == schema_text(model.model_json_schema()), (
        f"run `hologram check --write manifests/{name}.toml`"
    )


def test_build_puts_each_schema_into_the_lock(tmp_path: Path) -> None:
    lock_path = tmp_path / "hologram.lock"
    subprocess.run(
        [sys.executable, "-m", "hologram", "build", "-m", str(builtin_manifest_dir()), "--no-discover", "-o", str(lock_path)],
        check=True, capture_output=True, text=True, cwd=tmp_path,
    )  # fmt: skip
    lock = read_lock(lock_path)
    for name in BUILTINS:
        entry = next(p for p in lock.plugins if p.name == name)
        assert entry.config_schema == json.loads((builtin_manifest_dir() / f"{name}.config.schema.json").read_text()), (
            name
        )
