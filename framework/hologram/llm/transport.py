"""The provider chain's HTTP transport: a TLS context only once an https request needs one.

`httpx.AsyncClient()` builds its transport with `verify=True`, which loads certifi's CA bundle into a new
`ssl.SSLContext` (40-150 ms of GIL-bound CPU on a loaded machine) when the agent attaches, on `hologram up`'s
path to its first answer, even when every provider is plain `http://` (a loopback Ollama or vLLM, the strict
mock). `LazyTLSTransport` sends `http://` requests through a transport whose context holds no CA at all and
builds the default, verifying `httpx.AsyncHTTPTransport()` the first time an `https://` request comes:
https keeps exactly httpx's defaults (certifi, or `SSL_CERT_FILE` / `SSL_CERT_DIR`, hostname checking).

The plain transport's context is never used for a handshake (only `http://` URLs are routed to it; proxies
from the environment are the client's own mounts, not this transport), and if it ever were, it would fail
closed: `PROTOCOL_TLS_CLIENT` requires a certificate and checks the hostname, and with no CA loaded nothing
verifies.

What the first request would still build on the event loop, :func:`warm` builds beforehand in `hologram up`'s
start-up thread (hologram/kernel/preload.py; issue 39 item 9, the first answer after "ready" as fast as a warm
turn): httpcore and the ~70 modules httpx imports only when its first transport is made and its first request
sent (anyio, h11, sniffio...), and — only when a provider is ``https://`` — httpx's default verifying context,
which the verifying transport then takes as it is (``verify=`` that context is what ``verify=True`` builds).
"""

from __future__ import annotations

import contextlib
import importlib
import ssl
import threading
import urllib.request

import httpx

_context_lock = threading.Lock()
_default_context: ssl.SSLContext | None = None
_REQUEST_IMPORTS = (
    "httpcore._backends.anyio",
    "sniffio",
    "anyio.lowlevel",
    "anyio._backends._asyncio",  # ~110 ms of the first turn's imports on the loaded 2-core host (cProfile)
    "anyio.streams.tls",
    "anyio.streams.memory",
)
"""What httpcore imports at its first connection (its auto backend, anyio's asyncio backend and streams),
after the transport's own imports."""


def warm(*, tls: bool) -> None:
    """Import what the first request imports and, with `tls`, build httpx's default verifying context once
    (module docstring). Blocking, GIL-bound for the imports: call it from a worker thread."""
    global _default_context
    httpx.AsyncHTTPTransport(verify=_fail_closed_context())  # imports httpcore and its connection pool
    for name in _REQUEST_IMPORTS:
        with contextlib.suppress(ImportError):  # another httpcore version: its first request imports them
            importlib.import_module(name)
    # httpx reads a response's cookies through a urllib Request, whose URL parsing compiles urllib.parse's
    # regular expressions the first time (~0.5 ms of the first answer's loop): compiled here instead
    urllib.request.Request("http://127.0.0.1/")
    if tls:
        with _context_lock:
            if _default_context is None:
                _default_context = httpx.create_ssl_context()


def _verifying() -> ssl.SSLContext | bool:
    """httpx's default verification: the context :func:`warm` built, or ``True`` (httpx builds the same)."""
    return _default_context if _default_context is not None else True


def _fail_closed_context() -> ssl.SSLContext:
    """A client context that verifies against no CA: cheap to build, and refuses every peer if used."""
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


class LazyTLSTransport(httpx.AsyncBaseTransport):
    """`http://` through a transport without a CA bundle; `https://` through httpx's default, built on first use."""

    def __init__(self) -> None:
        self._plain: httpx.AsyncHTTPTransport | None = None
        self._tls: httpx.AsyncHTTPTransport | None = None

    @property
    def tls_built(self) -> bool:
        """Whether the verifying transport (and its CA bundle) has been built: tests read it."""
        return self._tls is not None

    def prepare(self, scheme: str) -> None:
        """Build the transport for `scheme` now (``http``; ``https`` only once :func:`warm` built the verifying
        context, else it stays lazy): what a first request does otherwise on the event loop — the transport,
        its fail-closed context, the environment's proxy parsing (~1 ms, issue 39 item 9)."""
        if scheme == "http" and self._plain is None:
            self._plain = httpx.AsyncHTTPTransport(verify=_fail_closed_context())
        elif scheme == "https" and self._tls is None and _default_context is not None:
            self._tls = httpx.AsyncHTTPTransport(verify=_default_context)

    def _for(self, request: httpx.Request) -> httpx.AsyncHTTPTransport:
        if request.url.scheme == "http":
            if self._plain is None:
                self._plain = httpx.AsyncHTTPTransport(verify=_fail_closed_context())
            return self._plain
        if self._tls is None:
            self._tls = httpx.AsyncHTTPTransport(verify=_verifying())
        return self._tls

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return await self._for(request).handle_async_request(request)

    async def aclose(self) -> None:
        for transport in (self._plain, self._tls):
            if transport is not None:
                await transport.aclose()
