"""The built-in adapters (OpenAI, DeepSeek) and the plugin manager that holds every adapter.

OpenAI: plain chat completions. Its message schema has no ``reasoning_content``, and the API rejects
unknown fields, so the accepted-field list leaves it out and a history that came from DeepSeek (or from a
reasoning-capable gateway) is sent without it. ``kind = "openai"`` also covers any compatible endpoint
(Ollama, vLLM, gateways).

DeepSeek:

- ``thinking = {"type": "enabled"|"disabled"}`` goes at the top level of the JSON body. The OpenAI SDK's
  ``extra_body`` is a client-side argument merged into the body; sending a key named ``extra_body`` is a 400.
- ``reasoning_content`` is replayed on every assistant turn that carried reasoning, tool calls or not,
  exactly as streamed. In thinking mode the API rejects an assistant tool-call turn without the field, so on
  a request with tools a turn stored without reasoning (older sessions, another provider) is sent with
  ``""``; a real value is never replaced. Outside that case a turn without reasoning gets no field.
- Cache hits are reported as ``prompt_cache_hit_tokens``, not ``prompt_tokens_details.cached_tokens``.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

import pluggy

from hologram.llm import hookspecs
from hologram.llm.hookspecs import hookimpl
from hologram.llm.settings import ProviderSettings
from hologram.llm.shapes import ChatRequest, Message, Usage
from hologram.llm.wire import STANDARD_MESSAGE_FIELDS, GenericAdapter, usage_from_wire


class OpenAIAdapter:
    @hookimpl
    def llm_adapter_kinds(self) -> Sequence[str]:
        return ["openai"]

    @hookimpl
    def llm_message_fields(self, kind: str) -> Collection[str] | None:
        return STANDARD_MESSAGE_FIELDS if kind == "openai" else None


class DeepSeekAdapter:
    @hookimpl
    def llm_adapter_kinds(self) -> Sequence[str]:
        return ["deepseek"]

    @hookimpl
    def llm_message_fields(self, kind: str) -> Collection[str] | None:
        return STANDARD_MESSAGE_FIELDS | {"reasoning_content"} if kind == "deepseek" else None

    @hookimpl
    def llm_transform_message(
        self, kind: str, settings: ProviderSettings, message: Message, wire: dict[str, Any], has_tools: bool
    ) -> None:
        # A stored value is already in `wire` (the field is accepted above) and is never replaced.
        if kind == "deepseek" and message.role == "assistant" and has_tools and "reasoning_content" not in wire:
            wire["reasoning_content"] = ""

    @hookimpl
    def llm_transform_request(
        self, kind: str, settings: ProviderSettings, request: ChatRequest, body: dict[str, Any]
    ) -> None:
        if kind != "deepseek":
            return
        if settings.thinking is not None:
            body["thinking"] = {"type": "enabled" if settings.thinking else "disabled"}

    @hookimpl
    def llm_parse_usage(self, kind: str, settings: ProviderSettings, usage: dict[str, Any]) -> Usage | None:
        if kind != "deepseek":
            return None
        return usage_from_wire(usage, cached_tokens=usage.get("prompt_cache_hit_tokens"))


def make_adapter_manager(*plugins: object, entry_points: bool = False) -> pluggy.PluginManager:
    """A plugin manager with the hookspecs, the generic fallbacks, the built-in adapters and ``plugins``."""
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    pm.register(GenericAdapter(), name="generic")
    pm.register(OpenAIAdapter(), name="openai")
    pm.register(DeepSeekAdapter(), name="deepseek")
    for plugin in plugins:
        pm.register(plugin)
    if entry_points:
        pm.load_setuptools_entrypoints(hookspecs.PROJECT)
    return pm


def known_kinds(pm: pluggy.PluginManager) -> set[str]:
    return {kind for kinds in pm.hook.llm_adapter_kinds() for kind in kinds}
