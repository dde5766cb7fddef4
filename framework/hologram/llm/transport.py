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
"""

from __future__ import annotations

import ssl

import httpx


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

    def _for(self, request: httpx.Request) -> httpx.AsyncHTTPTransport:
        if request.url.scheme == "http":
            if self._plain is None:
                self._plain = httpx.AsyncHTTPTransport(verify=_fail_closed_context())
            return self._plain
        if self._tls is None:
            self._tls = httpx.AsyncHTTPTransport()
        return self._tls

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return await self._for(request).handle_async_request(request)

    async def aclose(self) -> None:
        for transport in (self._plain, self._tls):
            if transport is not None:
                await transport.aclose()
