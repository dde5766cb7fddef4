"""LLM providers: OpenAI-compatible chat completions, vendor adapters, history normaliser, fallback chain.

Typical use::

    chain = ProviderChain([ProviderSettings(name="deepseek", kind="deepseek", base_url=..., model=...)])
    result = await chain.complete(ChatRequest(messages=history, tools=tools), on_delta=show)
    history.append(result.to_message())   # reasoning of *this* response, verbatim

See docs/providers.md for settings, the retry/fallback policy and how to add a vendor adapter.
"""

from hologram.llm.adapters import DeepSeekAdapter, OpenAIAdapter, make_adapter_manager
from hologram.llm.chain import ProviderChain
from hologram.llm.client import OnDelta, ProviderClient, parse_retry_after
from hologram.llm.errors import (
    AllProvidersFailed,
    ContextOverflowError,
    LLMConfigError,
    LLMError,
    ProviderAuthError,
    ProviderError,
    RequestRejectedError,
    StreamInterruptedError,
    TransientProviderError,
)
from hologram.llm.hookspecs import hookimpl, hookspec
from hologram.llm.normalise import MISSING_RESULT, normalise_history
from hologram.llm.settings import ProvidersConfig, ProviderSettings
from hologram.llm.shapes import (
    ChatRequest,
    ChatResult,
    Delta,
    Done,
    Message,
    StreamEvent,
    ToolCall,
    Usage,
)
from hologram.llm.wire import build_body

__all__ = [
    "MISSING_RESULT",
    "AllProvidersFailed",
    "ChatRequest",
    "ChatResult",
    "ContextOverflowError",
    "DeepSeekAdapter",
    "Delta",
    "Done",
    "LLMConfigError",
    "LLMError",
    "Message",
    "OnDelta",
    "OpenAIAdapter",
    "ProviderAuthError",
    "ProviderChain",
    "ProviderClient",
    "ProviderError",
    "ProviderSettings",
    "ProvidersConfig",
    "RequestRejectedError",
    "StreamEvent",
    "StreamInterruptedError",
    "ToolCall",
    "TransientProviderError",
    "Usage",
    "build_body",
    "hookimpl",
    "hookspec",
    "make_adapter_manager",
    "normalise_history",
    "parse_retry_after",
]
