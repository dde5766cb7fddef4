"""Provider settings, as written in `<data>/settings.toml` under `[[providers]]`.

The key is a `SecretStr` so that it never shows up in a repr, a log line or a validation error; it is
unwrapped only when the Authorization header is built. `api_key_env` is resolved at request time, not at
load time, so rotating a key in the environment needs no reload.

Plain frozen dataclasses validated by `hologram._fields` (not pydantic: the kernel and `hologram ask` load
these, and importing pydantic cost the kernel ~10 MB and ~50-80 ms of CPU before its first answer).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from hologram._fields import meta
from hologram._model import Model
from hologram._secret import SecretStr
from hologram.llm.errors import LLMConfigError


def _key_not_empty(value: SecretStr | None) -> SecretStr | None:
    if value is not None and not value.get_secret_value().strip():
        raise ValueError("api_key is empty: write the key, use api_key_env, or remove the line for no auth")
    return value


def _env_name_not_empty(value: str | None) -> str | None:
    if value is not None and not value.strip():
        raise ValueError("api_key_env is empty: name the environment variable that holds the key")
    return value


def _strip_slash(value: str) -> str:
    if not value.startswith(("http://", "https://")):
        raise ValueError("base_url must start with http:// or https://")
    return value.rstrip("/")


@dataclass(frozen=True, slots=True, kw_only=True)
class ProviderSettings(Model):
    """One provider of the fallback chain."""

    name: str = field(metadata=meta(min_length=1))
    kind: str = field(
        default="openai", metadata=meta(min_length=1, description="adapter kind: openai | deepseek | plugin's")
    )
    base_url: str = field(metadata=meta(min_length=1, check=_strip_slash))
    api_key: SecretStr | None = field(default=None, metadata=meta(check=_key_not_empty))
    api_key_env: str | None = field(default=None, metadata=meta(check=_env_name_not_empty))
    model: str = field(metadata=meta(min_length=1))
    thinking: bool | None = field(default=None, metadata=meta(description="DeepSeek only: thinking mode on/off"))
    context_window: int | None = field(default=None, metadata=meta(gt=0))
    timeout_s: float = field(default=60.0, metadata=meta(gt=0))
    max_retries: int = field(default=3, metadata=meta(ge=0, le=10))

    def _check_model(self) -> None:
        if self.api_key is not None and self.api_key_env is not None:
            raise ValueError("set api_key or api_key_env, not both")
        if self.thinking is not None and self.kind == "openai":
            raise ValueError("thinking is a deepseek option; kind 'openai' does not accept it")

    def resolve_api_key(self, env: Mapping[str, str] | None = None) -> str | None:
        """The key to send, or None for endpoints without auth (a local Ollama, vLLM)."""
        if self.api_key is not None:
            return self.api_key.get_secret_value()
        if self.api_key_env is not None:
            value = (os.environ if env is None else env).get(self.api_key_env)
            if not value:
                raise LLMConfigError(f"{self.name}: environment variable {self.api_key_env} is not set")
            return value
        return None


@dataclass(frozen=True, slots=True, kw_only=True)
class ProvidersConfig(Model):
    """The `[[providers]]` array of settings.toml; order is the fallback order."""

    _extra = "ignore"

    providers: list[ProviderSettings] = field(default_factory=list)

    def _check_model(self) -> None:
        seen: set[str] = set()
        for p in self.providers:
            if p.name in seen:
                raise ValueError(f"duplicate provider name {p.name!r}")
            seen.add(p.name)
