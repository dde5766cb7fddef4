"""One request to one provider: build the body, send it, stream or parse the answer, classify failures.

No retry or fallback here (that is `chain.py`); this module only decides *what* went wrong. It tracks
whether any output reached the caller, because after that a failure is no longer retryable: the user
has seen part of an answer, and a second answer would not continue it.
"""

from __future__ import annotations

import inspect
import json
import time
from collections.abc import Awaitable, Callable, Mapping
from email.utils import parsedate_to_datetime
from typing import Any

import httpx
import pluggy

from hologram.base import _fastjson as _json
from hologram.base.sse import sse_events
from hologram.llm.errors import ProviderError, StreamInterruptedError, TransientProviderError
from hologram.llm.settings import ProviderSettings
from hologram.llm.shapes import ChatRequest, ChatResult, Delta
from hologram.llm.stream import StreamAccumulator
from hologram.llm.wire import encode_body, error_message

OnDelta = Callable[[Delta], Awaitable[None] | None]


def parse_retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds to wait, from ``retry-after-ms`` (OpenAI) or ``Retry-After`` (seconds or an HTTP date)."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError):
        return None
    return max(0.0, when - (time.time() if now is None else now))


async def _emit(on_delta: OnDelta | None, delta: Delta) -> None:
    if on_delta is None:
        return
    result = on_delta(delta)
    if inspect.isawaitable(result):
        await result


class ProviderClient:
    """Speaks chat completions to one provider through a shared `httpx.AsyncClient`."""

    def __init__(
        self,
        settings: ProviderSettings,
        pm: pluggy.PluginManager,
        http: httpx.AsyncClient,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.settings = settings
        self._pm = pm
        self._http = http
        self._env = env

    @property
    def url(self) -> str:
        return f"{self.settings.base_url}/chat/completions"

    def _headers(self, stream: bool) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if stream:
            headers["Accept"] = "text/event-stream"
        key = self.settings.resolve_api_key(self._env)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def _http_error(self, status: int, text: str, headers: Mapping[str, str]) -> ProviderError:
        s = self.settings
        message = error_message(text)
        retry_after = parse_retry_after(headers)
        err: ProviderError | None = self._pm.hook.llm_classify_error(
            kind=s.kind, settings=s, status=status, message=message, retry_after=retry_after
        )
        return err if err is not None else ProviderError(s.name, message, status=status)

    def _transport_error(self, exc: BaseException) -> TransientProviderError:
        if isinstance(exc, httpx.TimeoutException):
            text = f"timed out after {self.settings.timeout_s:g}s ({type(exc).__name__})"
        else:
            text = f"connection failed: {type(exc).__name__}: {exc}"
        return TransientProviderError(self.settings.name, text)

    async def complete(self, request: ChatRequest, on_delta: OnDelta | None = None) -> ChatResult:
        # Encoded to one bytes object (orjson), a message at a time (`encode_body`): a long turn's request is
        # ~1,000 small dicts and lists (400 tool results), which httpx's json= kept alive, with its own copy as a
        # str, for the whole streamed answer, between the answer's short-lived objects (issue 41: the kernel's
        # heap after long turns). Same JSON, without the stdlib's spaces and \u escapes.
        body = encode_body(self._pm, self.settings, request)
        if request.stream:
            return await self._stream(body, on_delta)
        return await self._once(body, on_delta)

    async def _once(self, body: bytes, on_delta: OnDelta | None) -> ChatResult:
        s = self.settings
        try:
            resp = await self._http.post(
                self.url, content=body, headers=self._headers(False), timeout=httpx.Timeout(s.timeout_s)
            )
        except httpx.RequestError as exc:
            raise self._transport_error(exc) from exc
        if resp.status_code >= 400:
            raise self._http_error(resp.status_code, resp.text, resp.headers)
        try:
            data = resp.json()
        except ValueError as exc:
            raise TransientProviderError(s.name, f"response is not JSON: {resp.text[:200]!r}") from exc
        result: ChatResult = self._pm.hook.llm_parse_response(kind=s.kind, settings=s, data=data)
        if result.usage is None and isinstance(data.get("usage"), dict):
            usage = self._pm.hook.llm_parse_usage(kind=s.kind, settings=s, usage=data["usage"])
            result = ChatResult(
                result.content,
                result.reasoning,
                result.tool_calls,
                usage,
                result.finish_reason,
                result.provider,
                result.model,
            )
        if result.reasoning:
            await _emit(on_delta, Delta("reasoning", result.reasoning))
        if result.content:
            await _emit(on_delta, Delta("content", result.content))
        return result

    async def _stream(self, body: bytes, on_delta: OnDelta | None) -> ChatResult:
        s = self.settings
        acc = StreamAccumulator()
        delivered = False
        try:
            async with self._http.stream(
                "POST", self.url, content=body, headers=self._headers(True), timeout=httpx.Timeout(s.timeout_s)
            ) as resp:
                if resp.status_code >= 400:
                    text = (await resp.aread()).decode("utf-8", "replace")
                    raise self._http_error(resp.status_code, text, resp.headers)
                async for event in sse_events(resp.aiter_lines(), dispatch_incomplete=True):
                    data = event.data
                    if data.strip() == "[DONE]":
                        acc.done = True
                        break
                    chunk = self._decode(data)
                    if isinstance(chunk.get("usage"), dict):
                        acc.usage = self._pm.hook.llm_parse_usage(kind=s.kind, settings=s, usage=chunk["usage"])
                    deltas: list[Delta] = (
                        self._pm.hook.llm_parse_chunk(kind=s.kind, settings=s, chunk=chunk, acc=acc) or []
                    )
                    for delta in deltas:
                        delivered = True
                        await _emit(on_delta, delta)
        except (httpx.RequestError, TransientProviderError) as exc:
            if acc.finish_reason is None:
                err = exc if isinstance(exc, TransientProviderError) else self._transport_error(exc)
                if delivered:
                    raise StreamInterruptedError(s.name, err, acc.text(), acc.reasoning_text() or "") from exc
                if err is exc:
                    raise
                raise err from exc
            # The answer was complete (finish_reason seen); only the trailing usage chunk got lost.
        if not acc.done and acc.finish_reason is None:
            err = TransientProviderError(s.name, "stream ended before the response was complete")
            if delivered:
                raise StreamInterruptedError(s.name, err, acc.text(), acc.reasoning_text() or "")
            raise err
        return ChatResult(
            content=acc.text(),
            reasoning=acc.reasoning_text(),
            tool_calls=acc.tool_calls(),
            usage=acc.usage,
            finish_reason=acc.finish_reason,
            provider=s.name,
            model=acc.model or s.model,
        )

    def _decode(self, data: str) -> dict[str, Any]:
        try:
            chunk = _json.loads(data)
        except ValueError as exc:
            raise TransientProviderError(self.settings.name, f"malformed stream chunk: {data[:200]!r}") from exc
        if not isinstance(chunk, dict):
            raise TransientProviderError(self.settings.name, f"malformed stream chunk: {data[:200]!r}")
        if isinstance(chunk.get("error"), dict):  # some gateways report errors inside the stream
            raise TransientProviderError(self.settings.name, error_message(json.dumps(chunk)))
        return chunk
