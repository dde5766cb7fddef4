"""Provider settings, as written in `<data>/settings.toml` under `[[providers]]`.

The key is a `SecretStr` so that it never shows up in a repr, a log line or a validation error; it is
unwrapped only when the Authorization header is built. `api_key_env` is resolved at request time, not at
load time, so rotating a key in the environment needs no reload.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from hologram.llm.errors import LLMConfigError

TEXT_ONLY_KINDS = frozenset({"deepseek"})  # kinds whose chat API takes no images unless accepts_images says so


class ProviderSettings(BaseModel):
    """One provider of the fallback chain."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    kind: str = Field(default="openai", min_length=1, description="adapter kind: openai | deepseek | plugin's")
    base_url: str = Field(min_length=1)
    api_key: SecretStr | None = None
    api_key_env: str | None = None
    model: str = Field(min_length=1)
    thinking: bool | None = Field(default=None, description="DeepSeek only: thinking mode on/off")
    context_window: int | None = Field(default=None, gt=0)
    timeout_s: float = Field(default=60.0, gt=0)
    max_retries: int = Field(default=3, ge=0, le=10)
    accepts_images: bool | None = Field(
        default=None, description="the model takes images in a turn's input (default: true, false for deepseek)"
    )

    @field_validator("api_key")
    @classmethod
    def _key_not_empty(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and not value.get_secret_value().strip():
            raise ValueError("api_key is empty: write the key, use api_key_env, or remove the line for no auth")
        return value

    @field_validator("api_key_env")
    @classmethod
    def _env_name_not_empty(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("api_key_env is empty: name the environment variable that holds the key")
        return value

    @field_validator("base_url")
    @classmethod
    def _strip_slash(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("base_url must start with http:// or https://")
        return value.rstrip("/")

    @model_validator(mode="after")
    def _check(self) -> ProviderSettings:
        if self.api_key is not None and self.api_key_env is not None:
            raise ValueError("set api_key or api_key_env, not both")
        if self.thinking is not None and self.kind == "openai":
            raise ValueError("thinking is a deepseek option; kind 'openai' does not accept it")
        return self

    @property
    def takes_images(self) -> bool:
        """``accepts_images``, or the kind's default: DeepSeek's chat API is text only (a content array with an
        image is a 400 there), OpenAI-compatible endpoints are taken to be vision-capable."""
        if self.accepts_images is not None:
            return self.accepts_images
        return self.kind not in TEXT_ONLY_KINDS

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


class ProvidersConfig(BaseModel):
    """The `[[providers]]` array of settings.toml; order is the fallback order."""

    model_config = ConfigDict(extra="ignore")

    providers: list[ProviderSettings] = Field(default_factory=list)

    @model_validator(mode="after")
    def _unique(self) -> ProvidersConfig:
        seen: set[str] = set()
        for p in self.providers:
            if p.name in seen:
                raise ValueError(f"duplicate provider name {p.name!r}")
            seen.add(p.name)
        return self
