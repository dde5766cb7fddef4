"""Provider settings pointing at a strict mock: as a `ProviderSettings` for in-process tests, and as the
``[[providers]]`` block of a settings.toml for tests that start a real kernel.

The defaults are what every suite wanted (the mock's vendor and its model, a short timeout), so a test
names only the field it is about.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hologram.llm import ProviderSettings
from mock_llm import MockLLM


def model_of(mock: MockLLM) -> str:
    return "deepseek-chat" if mock.state.vendor == "deepseek" else "gpt-4o-mini"


def provider(mock: MockLLM, name: str = "p1", **fields: Any) -> ProviderSettings:
    """Settings for `mock`; `fields` override (``timeout_s``, ``max_retries``, ``kind``, ...)."""
    fields.setdefault("kind", mock.state.vendor)
    fields.setdefault("model", model_of(mock))
    fields.setdefault("timeout_s", 5.0)
    return ProviderSettings(name=name, base_url=mock.base_url, **fields)


def provider_toml(mock: MockLLM, name: str = "mock", **fields: Any) -> str:
    """The ``[[providers]]`` block for `mock` as a kernel reads it: thinking on, no retries, 10 s timeout.

    The keys come in a fixed order (name, kind, base_url, model, thinking, max_retries, timeout_s, then
    `fields` not among them), so a test may still edit the text around a known line."""
    values: dict[str, Any] = {
        "name": name,
        "kind": mock.state.vendor,
        "base_url": mock.base_url,
        "model": model_of(mock),
        "thinking": True,
        "max_retries": 0,
        "timeout_s": 10,
    }
    values.update(fields)
    lines = [f"{key} = {json.dumps(value)}" for key, value in values.items()]
    return "[[providers]]\n" + "\n".join(lines) + "\n"


def write_settings(path: Path, text: str) -> Path:
    """Write a settings.toml the way the kernel insists on it: private to the user (0600)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    path.chmod(0o600)
    return path
