"""The provider chain: retry, back off, fall back, cool down, and say what happened.

Policy, by error class (see `errors.py`):

- transient (timeouts, connection errors, 408/409/429/5xx, a stream cut before output): retry the same
  provider up to ``max_retries`` times, sleeping 1 s, 2 s, 3 s (the last value repeats), or the server's
  Retry-After when it sent one, capped at ``retry_after_cap``; then fall back to the next provider and cool
  this one down (``health.py``: 30 s, doubling to a cap; a half-open probe brings it back);
- 401/402/403: fall back at once and cool the provider down for ``auth_cooldown_s``;
- 400/422: raise at once with the vendor's message: the request is wrong and would be wrong everywhere;
  a context-length 400 is a `ContextOverflowError` so the memory layer can prune and call again;
- anything after output reached the caller: `StreamInterruptedError`, no retry, no fallback.

A cooling provider is skipped only while another can be asked; a chain of one provider never skips it.
``sleep`` and ``clock`` are injectable so tests assert the waits without waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any

import httpx
import pluggy

from hologram.llm.adapters import known_kinds, make_adapter_manager
from hologram.llm.client import OnDelta, ProviderClient
from hologram.llm.errors import (
    AllProvidersFailed,
    ImagesNotAcceptedError,
    LLMConfigError,
    LLMError,
    ProviderAuthError,
    ProviderError,
    RequestRejectedError,
    StreamInterruptedError,
    TransientProviderError,
)
from hologram.llm.health import (
    DEFAULT_AUTH_COOLDOWN_S,
    DEFAULT_COOLDOWN_S,
    DEFAULT_MAX_COOLDOWN_S,
    HealthBook,
)
from hologram.llm.settings import ProviderSettings
from hologram.llm.shapes import ChatRequest, ChatResult, Delta, Done, StreamEvent
from hologram.llm.transport import LazyTLSTransport

DEFAULT_BACKOFF = (1.0, 2.0, 3.0)


class ProviderChain:
    """Providers tried in order. Safe to share between concurrent turns (no per-call state is kept)."""

    def __init__(
        self,
        providers: Sequence[ProviderSettings],
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        plugin_manager: pluggy.PluginManager | None = None,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
        clock: Callable[[], float] = time.monotonic,
        backoff: Sequence[float] = DEFAULT_BACKOFF,
        retry_after_cap: float = 30.0,
        cooldown_s: float = DEFAULT_COOLDOWN_S,
        max_cooldown_s: float = DEFAULT_MAX_COOLDOWN_S,
        auth_cooldown_s: float = DEFAULT_AUTH_COOLDOWN_S,
        env: Mapping[str, str] | None = None,
    ) -> None:
        if not providers:
            raise LLMConfigError("no LLM provider configured")
        names = [p.name for p in providers]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise LLMConfigError(f"duplicate provider names: {', '.join(duplicates)}")
        self._pm = plugin_manager or make_adapter_manager()
        kinds = known_kinds(self._pm)
        for p in providers:
            if p.kind not in kinds:
                raise LLMConfigError(f"{p.name}: unknown provider kind {p.kind!r} (known: {', '.join(sorted(kinds))})")
        if not backoff:
            raise LLMConfigError("backoff needs at least one value")
        # No CA bundle loaded for plain-http providers (a loopback model, the mock): see `transport.py`.
        self._transport = transport if transport is not None else LazyTLSTransport()
        self._http = httpx.AsyncClient(transport=self._transport)
        self._clients = [ProviderClient(p, self._pm, self._http, env) for p in providers]
        self._sleep = sleep
        self._clock = clock
        self._backoff = tuple(backoff)
        self._retry_after_cap = retry_after_cap
        self.health = HealthBook(
            names, clock=clock, cooldown_s=cooldown_s, max_cooldown_s=max_cooldown_s, auth_cooldown_s=auth_cooldown_s
        )
        self._by_name = {c.settings.name: c for c in self._clients}

    def prepare(self) -> None:
        """Build the transports the providers' URLs use (`LazyTLSTransport.prepare`), before a first request."""
        transport = self._transport
        if isinstance(transport, LazyTLSTransport):
            for client in self._clients:
                transport.prepare(client.settings.base_url.partition("://")[0])

    @property
    def providers(self) -> list[ProviderSettings]:
        return [c.settings for c in self._clients]

    def cooling_down(self) -> dict[str, float]:
        """Seconds left of each provider's cooldown."""
        return self.health.cooling_down()

    def status(self) -> list[dict[str, Any]]:
        """Each provider's state, cooldown and last error, for `hologram status` (no secrets in it)."""
        return self.health.status()

    def _delay(self, attempt: int, err: TransientProviderError) -> float:
        if err.retry_after is not None:
            return min(err.retry_after, self._retry_after_cap)
        return self._backoff[min(attempt, len(self._backoff) - 1)]

    async def _try_provider(
        self, client: ProviderClient, request: ChatRequest, on_delta: OnDelta | None, *, probe: bool
    ) -> ChatResult:
        attempt = 0
        retries = 0 if probe else client.settings.max_retries
        while True:
            try:
                return await client.complete(request, on_delta)
            except TransientProviderError as err:
                if attempt >= retries:
                    raise
                await self._sleep(self._delay(attempt, err))
                attempt += 1

    async def complete(self, request: ChatRequest, on_delta: OnDelta | None = None) -> ChatResult:
        """One chat completion; ``on_delta`` receives content and reasoning pieces as they stream."""
        attempts: list[tuple[str, LLMError]] = []
        planned = self._able(request, self.health.plan())
        tried = {name for name, _ in planned}
        for name, left in self.health.cooling_down().items():
            if name not in tried:
                attempts.append((name, LLMError(f"skipped, cooling down for {left:.0f} s more")))
        for name, probe in planned:
            client = self._by_name[name]
            if probe:
                self.health.begin_probe(name)
            try:
                result = await self._try_provider(client, request, on_delta, probe=probe)
            except (RequestRejectedError, StreamInterruptedError):
                self.health.released(name)
                raise
            except ProviderAuthError as err:
                self.health.failed(name, err, auth=True)
                attempts.append((name, err))
            except (ProviderError, LLMConfigError) as err:
                self.health.failed(name, err)
                attempts.append((name, err))
            except BaseException:  # cancelled: no verdict on the provider
                self.health.released(name)
                raise
            else:
                self.health.succeeded(name)
                return result
        raise AllProvidersFailed(attempts, len(self._clients))

    def _able(self, request: ChatRequest, planned: list[tuple[str, bool]]) -> list[tuple[str, bool]]:
        """The plan without the providers that cannot take the request: with images, those that take none
        (`ProviderSettings.takes_images`). None can: `ImagesNotAcceptedError` before any request is sent."""
        if not any(m.images for m in request.messages):
            return planned
        able = [p for p in planned if self._by_name[p[0]].settings.takes_images]
        if not any(c.settings.takes_images for c in self._clients):
            raise ImagesNotAcceptedError([(c.settings.name, c.settings.model) for c in self._clients])
        return able

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        """`complete` as an async iterator: `Delta` events, then one `Done` with the result."""
        queue: asyncio.Queue[Delta | None] = asyncio.Queue()

        async def run() -> ChatResult:
            try:
                return await self.complete(request, queue.put)
            finally:
                queue.put_nowait(None)

        task = asyncio.ensure_future(run())
        try:
            while (delta := await queue.get()) is not None:
                yield delta
            yield Done(await task)
        finally:
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> ProviderChain:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
