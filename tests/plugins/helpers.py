"""Shared helpers for the built-in plugin tests: every test runs its plugin as a real subprocess."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from hologram.sdk.testing import PluginHarness

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "manifests"


def harness(
    name: str,
    *,
    config: dict[str, Any] | None = None,
    data_dir: Path | None = None,
    provide: dict[str, dict[str, Callable[..., Any]]] | None = None,
) -> PluginHarness:
    return PluginHarness.from_manifest(MANIFESTS / f"{name}.toml", config=config, data_dir=data_dir, provide=provide)


def ok(result: dict[str, Any]) -> str:
    """The content of a successful tool result (fails the test with the error text otherwise)."""
    assert not result.get("is_error"), result.get("content")
    return str(result["content"])


def err(result: dict[str, Any]) -> str:
    """The content of a tool error (fails the test if the call succeeded)."""
    assert result.get("is_error") is True, f"expected an error, got: {result.get('content')!r}"
    return str(result["content"])
