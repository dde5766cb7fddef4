"""Hook specifications of the provider adapters (pluggy project ``hologram.llm``).

An adapter is a plugin object with hookimpls. Every hook receives the provider's ``kind`` and must do
nothing (return None) for a kind that is not its own; that is how several adapters share one plugin
manager. A vendor only implements what differs from plain OpenAI chat completions: the generic
implementations in ``wire.py`` are registered ``trylast`` and answer for every kind.

Adding a vendor (say ``kind = "acme"``)::

    from hologram.llm import hookimpl, make_adapter_manager

    class AcmeAdapter:
        @hookimpl
        def llm_adapter_kinds(self): return ["acme"]

        @hookimpl
        def llm_transform_request(self, kind, settings, request, body):
            if kind == "acme":
                body["acme_mode"] = "fast"

    chain = ProviderChain(providers, plugin_manager=make_adapter_manager(AcmeAdapter()))

or publish it under the ``hologram.llm`` entry-point group and pass ``entry_points=True``.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from hologram.llm.errors import ProviderError
    from hologram.llm.settings import ProviderSettings
    from hologram.llm.shapes import ChatRequest, ChatResult, Delta, Message, Usage
    from hologram.llm.stream import StreamAccumulator

PROJECT = "hologram.llm"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def llm_adapter_kinds() -> Sequence[str]:  # type: ignore[empty-body]
    """The provider kinds this plugin adapts; a settings entry with an unknown kind is a config error."""


@hookspec(firstresult=True)
def llm_message_fields(kind: str) -> Collection[str] | None:
    """Message fields the vendor accepts. Every other field is stripped before sending: vendors reject
    unknown fields with a 400 (OpenAI rejects ``reasoning_content``)."""


@hookspec
def llm_transform_message(
    kind: str, settings: ProviderSettings, message: Message, wire: dict[str, Any], has_tools: bool
) -> None:
    """Edit ``wire``, the JSON form of ``message`` (already stripped to the accepted fields), in place."""


@hookspec
def llm_transform_request(kind: str, settings: ProviderSettings, request: ChatRequest, body: dict[str, Any]) -> None:
    """Edit the top level of the JSON body in place (vendor parameters such as DeepSeek's ``thinking``). The body
    is whole here, ``messages`` included; a list set in their place is sent instead."""


@hookspec(firstresult=True)
def llm_parse_response(kind: str, settings: ProviderSettings, data: dict[str, Any]) -> ChatResult | None:
    """Turn a non-streamed completion into a result."""


@hookspec(firstresult=True)
def llm_parse_chunk(
    kind: str, settings: ProviderSettings, chunk: dict[str, Any], acc: StreamAccumulator
) -> list[Delta] | None:
    """Fold one SSE chunk into ``acc``; return the deltas to show the caller (possibly empty)."""


@hookspec(firstresult=True)
def llm_parse_usage(kind: str, settings: ProviderSettings, usage: dict[str, Any]) -> Usage | None:
    """Read the vendor's usage block (cached and reasoning tokens are reported differently by vendors)."""


@hookspec(firstresult=True)
def llm_classify_error(
    kind: str, settings: ProviderSettings, status: int, message: str, retry_after: float | None
) -> ProviderError | None:
    """Map an HTTP error to the `ProviderError` subclass that sets the chain's policy."""
