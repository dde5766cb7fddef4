"""The OpenAI chat-completions wire format, and the generic adapter every kind falls back to.

`GenericAdapter` answers the parse and classify hooks for any kind (registered ``trylast``), so a vendor
adapter only overrides what differs. `build_body` is the single place a request body is made: it runs the
history normaliser, strips the fields the vendor rejects, and lets adapters edit messages and the body.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterator
from typing import Any

import pluggy

from hologram.base import _fastjson as _json
from hologram.llm.content import openai_content
from hologram.llm.errors import (
    ContextOverflowError,
    ProviderAuthError,
    ProviderError,
    RequestRejectedError,
    TransientProviderError,
)
from hologram.llm.hookspecs import hookimpl
from hologram.llm.normalise import normalise_history
from hologram.llm.settings import ProviderSettings
from hologram.llm.shapes import ChatRequest, ChatResult, Delta, Message, ToolCall, Usage
from hologram.llm.stream import StreamAccumulator

STANDARD_MESSAGE_FIELDS = frozenset({"role", "content", "name", "tool_calls", "tool_call_id"})
RETRY_STATUSES = frozenset({408, 409, 429})
AUTH_STATUSES = frozenset({401, 402, 403})
_OVERFLOW = re.compile(r"maximum context length|context_length_exceeded|context length", re.IGNORECASE)


def message_to_wire(message: Message) -> dict[str, Any]:
    """Every field we know; the adapter's accepted-field list decides what is actually sent."""
    wire: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.images:  # a provider that takes no images never gets here (`ProviderChain.complete`)
        wire["content"] = openai_content(message.content, message.images)
    if message.tool_calls:
        wire["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in message.tool_calls
        ]
    if message.tool_call_id is not None:
        wire["tool_call_id"] = message.tool_call_id
    if message.name is not None and message.role in ("user", "system", "tool"):
        wire["name"] = message.name
    if message.role == "assistant" and message.reasoning_content is not None:
        wire["reasoning_content"] = message.reasoning_content
    return wire


def wire_messages(
    pm: pluggy.PluginManager, settings: ProviderSettings, request: ChatRequest
) -> Iterator[dict[str, Any]]:
    """The request's messages as the vendor takes them, one at a time: normalised, its fields only, each edited
    by the adapters (``llm_transform_message``)."""
    kind = settings.kind
    has_tools = bool(request.tools)
    accepted: Collection[str] = pm.hook.llm_message_fields(kind=kind) or STANDARD_MESSAGE_FIELDS
    for message in normalise_history(request.messages):
        wire = {k: v for k, v in message_to_wire(message).items() if k in accepted}
        pm.hook.llm_transform_message(kind=kind, settings=settings, message=message, wire=wire, has_tools=has_tools)
        yield wire


#: Messages encoded together by `encode_body`: one orjson call and one buffer (orjson's is 4 KiB at least) a piece,
#: and no more than this many messages' dicts alive at once.
ENCODE_BATCH = 64


class _Unencoded(list[dict[str, Any]]):
    """The ``messages`` an `encode_body`'s body holds while Hologram's own adapters edit its top level (they
    read no messages): empty, as their JSON is made apart. One that set its own ``messages`` would replace it."""


def encode_body(pm: pluggy.PluginManager, settings: ProviderSettings, request: ChatRequest) -> bytes:
    """`build_body`'s JSON, the same bytes, without every message's dict alive at once: the messages are encoded
    as they are made, `ENCODE_BATCH` at a time, their dicts dropped, and the body joined from the pieces. A long
    turn's request is ~440 messages, ~1,300 small dicts and lists: built at once, they were alive at the turn's
    peak of small objects with the session's own (issue 41, docs/memory.md "Sixth round"). The adapters'
    request hook is a public contract that sees the whole body, messages included (docs/providers.md): when a
    plugin other than Hologram's own adapters implements it, the body is built whole and encoded at once."""
    if _third_party_request_hooks(pm):
        return _json.dumps_bytes(build_body(pm, settings, request))
    pieces: list[memoryview] = []  # the messages' JSON, ENCODE_BATCH messages a piece, without the brackets
    batch: list[dict[str, Any]] = []
    for wire in wire_messages(pm, settings, request):
        batch.append(wire)
        if len(batch) == ENCODE_BATCH:
            pieces.append(memoryview(_json.dumps_bytes(batch))[1:-1])
            batch = []
    if batch:
        pieces.append(memoryview(_json.dumps_bytes(batch))[1:-1])
    del batch
    pending = _Unencoded()
    out: list[bytes | memoryview] = [b"{"]
    for key, value in _top_level(pm, settings, request, pending).items():
        out.append(_json.dumps_bytes(key) + b":" if len(out) == 1 else b"," + _json.dumps_bytes(key) + b":")
        out.extend((b"[", b",".join(pieces), b"]") if value is pending else (_json.dumps_bytes(value),))
    out.append(b"}")
    return b"".join(out)


def _third_party_request_hooks(pm: pluggy.PluginManager) -> bool:
    """Whether an ``llm_transform_request`` of a plugin outside this package is registered: it may read the
    messages, which the streamed encoding does not hand it."""
    return any(
        not getattr(impl.function, "__module__", "").startswith("hologram.")
        for impl in pm.hook.llm_transform_request.get_hookimpls()
    )


def build_body(pm: pluggy.PluginManager, settings: ProviderSettings, request: ChatRequest) -> dict[str, Any]:
    """The request's JSON body as a dict (`encode_body` makes its bytes)."""
    return _top_level(pm, settings, request, list(wire_messages(pm, settings, request)))


def _top_level(
    pm: pluggy.PluginManager, settings: ProviderSettings, request: ChatRequest, messages: list[dict[str, Any]]
) -> dict[str, Any]:
    kind = settings.kind
    body: dict[str, Any] = {"model": settings.model, "messages": messages, "stream": request.stream}
    if request.stream:
        body["stream_options"] = {"include_usage": True}
    if request.tools:
        body["tools"] = [dict(t) for t in request.tools]
    if request.tool_choice is not None:
        body["tool_choice"] = request.tool_choice
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if request.max_tokens is not None:
        body["max_tokens"] = request.max_tokens
    extra = dict(request.extra)
    nested = extra.pop("extra_body", None)  # SDK habit: it is merged into the body, never sent as a key
    body.update(nested if isinstance(nested, dict) else {})
    body.update(extra)
    pm.hook.llm_transform_request(kind=kind, settings=settings, request=request, body=body)
    return body


def usage_from_wire(usage: dict[str, Any], cached_tokens: Any = None) -> Usage:
    """OpenAI's usage object; `cached_tokens` overrides where the vendor reports cache hits (DeepSeek)."""
    prompt_details = usage.get("prompt_tokens_details") or {}
    completion_details = usage.get("completion_tokens_details") or {}
    prompt = int(usage.get("prompt_tokens") or 0)
    completion = int(usage.get("completion_tokens") or 0)
    return Usage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=int(usage.get("total_tokens") or prompt + completion),
        cached_tokens=int(cached_tokens or prompt_details.get("cached_tokens") or 0),
        reasoning_tokens=int(completion_details.get("reasoning_tokens") or 0),
    )


def error_message(text: str) -> str:
    """The vendor's own message from an OpenAI-shaped error body, else the raw text (shortened)."""
    try:
        data = json.loads(text)
    except ValueError:
        return text.strip()[:500] or "(empty body)"
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
        if isinstance(err, str):
            return err
    return text.strip()[:500]


class GenericAdapter:
    """OpenAI-compatible behaviour for every kind, consulted last."""

    @hookimpl(trylast=True)
    def llm_message_fields(self, kind: str) -> Collection[str]:
        return STANDARD_MESSAGE_FIELDS

    @hookimpl(trylast=True)
    def llm_parse_usage(self, kind: str, settings: ProviderSettings, usage: dict[str, Any]) -> Usage:
        return usage_from_wire(usage)

    @hookimpl(trylast=True)
    def llm_parse_response(self, kind: str, settings: ProviderSettings, data: dict[str, Any]) -> ChatResult:
        # usage is left to the client, which reads it through `llm_parse_usage` (vendors differ there)
        choice = (data.get("choices") or [{}])[0]
        msg = choice.get("message") or {}
        reasoning = msg.get("reasoning_content")
        return ChatResult(
            content=msg.get("content") or "",
            reasoning=reasoning if isinstance(reasoning, str) else None,
            tool_calls=tuple(ToolCall.from_dict(c) for c in msg.get("tool_calls") or ()),
            usage=None,
            finish_reason=choice.get("finish_reason"),
            provider=settings.name,
            model=str(data.get("model") or settings.model),
        )

    @hookimpl(trylast=True)
    def llm_parse_chunk(
        self, kind: str, settings: ProviderSettings, chunk: dict[str, Any], acc: StreamAccumulator
    ) -> list[Delta]:
        out: list[Delta] = []
        if chunk.get("model"):
            acc.model = str(chunk["model"])
        for choice in chunk.get("choices") or ():
            delta = choice.get("delta") or {}
            reasoning = delta.get("reasoning_content")
            if isinstance(reasoning, str):  # even "": the response did carry a reasoning field
                acc.add_reasoning(reasoning)
                if reasoning:
                    out.append(Delta("reasoning", reasoning))
            content = delta.get("content")
            if isinstance(content, str) and content:
                acc.add_content(content)
                out.append(Delta("content", content))
            for call in delta.get("tool_calls") or ():
                fn = call.get("function") or {}
                acc.add_tool_delta(int(call.get("index") or 0), call.get("id"), fn.get("name"), fn.get("arguments"))
            if choice.get("finish_reason"):
                acc.finish_reason = str(choice["finish_reason"])
        return out

    @hookimpl(trylast=True)
    def llm_classify_error(
        self, kind: str, settings: ProviderSettings, status: int, message: str, retry_after: float | None
    ) -> ProviderError:
        name = settings.name
        if status in (400, 422):
            if _OVERFLOW.search(message):
                return ContextOverflowError(name, message, status=status)
            return RequestRejectedError(name, message, status=status)
        if status in AUTH_STATUSES:
            return ProviderAuthError(name, message, status=status)
        if status in RETRY_STATUSES or status >= 500:
            return TransientProviderError(name, message, status=status, retry_after=retry_after)
        return ProviderError(name, message, status=status)
