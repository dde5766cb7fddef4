"""The provider chain's transport: no CA bundle for a plain-http provider, and https verified as httpx does by
default (a self-signed server refused; accepted once ``SSL_CERT_FILE`` names its certificate)."""

from __future__ import annotations

import http.server
import os
import shutil
import ssl
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from hologram.llm import ChatRequest, Message
from hologram.llm.transport import LazyTLSTransport, _fail_closed_context
from mock_llm import MockLLM
from tests.kit.loop import run
from tests.kit.providers import provider
from tests.kit.tls import self_signed
from tests.llm.helpers import chain


class _Ok(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """An https server on 127.0.0.1 with a self-signed certificate (made with the system's openssl)."""
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command")
    root = tmp_path_factory.mktemp("lazy-tls")
    cert, key = self_signed(root)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Ok)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"https://127.0.0.1:{server.server_address[1]}/", cert
    server.shutdown()
    server.server_close()


async def _get(transport: httpx.AsyncBaseTransport, url: str) -> int:
    async with httpx.AsyncClient(transport=transport, timeout=10) as client:
        return (await client.get(url)).status_code


def test_an_http_provider_loads_no_ca_bundle(mock_llm: MockLLM, monkeypatch: pytest.MonkeyPatch) -> None:
    """The chain answers over http:// without ever building a verifying context (certifi's bundle is what
    cost ~0.1 s at attach). Mutation check: routing http:// to the verifying transport in `_for` turned this
    red (``create_default_context`` was called)."""
    calls: list[object] = []
    real = ssl.create_default_context

    def spy(*args: Any, **kw: Any) -> ssl.SSLContext:
        calls.append(args or kw)
        return real(*args, **kw)

    monkeypatch.setattr(ssl, "create_default_context", spy)
    mock_llm.script([{"content": "plain"}])
    c = chain(provider(mock_llm))
    transport = c._http._transport
    assert isinstance(transport, LazyTLSTransport)

    async def go() -> str:
        try:
            return (await c.complete(ChatRequest([Message.user("hi")]))).content
        finally:
            await c.aclose()

    assert run(go()) == "plain"
    assert len(mock_llm.requests) == 1  # the request reached the mock through the lazy transport
    assert not transport.tls_built
    assert calls == []


def test_https_is_verified_with_httpx_defaults(tls_server: tuple[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """A self-signed server is refused; with ``SSL_CERT_FILE`` naming its certificate (httpx's default context
    reads it) it is accepted — so https goes through httpx's own `verify=True` context. Mutation checks: the
    verifying transport built with ``verify=False`` made the first request succeed (red); https routed to the
    plain transport turned it red (the verifying transport was never built)."""
    url, cert = tls_server
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    refused = LazyTLSTransport()
    with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        run(_get(refused, url))
    assert refused.tls_built
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    assert run(_get(LazyTLSTransport(), url)) == 200


def test_the_plain_context_fails_closed(tls_server: tuple[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """The http-only transport's context, were it ever used for a handshake, verifies against no CA: refused
    even where httpx's default would accept (``SSL_CERT_FILE`` set)."""
    url, cert = tls_server
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    context = _fail_closed_context()
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        run(_get(httpx.AsyncHTTPTransport(verify=context), url))


WARMED = """
import asyncio, ssl, sys
import httpx
from hologram.llm import transport
before = set(sys.modules)
transport.warm(tls=False)
first_request = ["httpcore", "anyio._backends._asyncio", "anyio.streams.tls", "sniffio", "h11"]
missing = [m for m in first_request if m not in sys.modules]
assert not missing, missing
assert transport._default_context is None  # no CA bundle unless a provider is https
transport.warm(tls=True)
context = transport._default_context
assert context is not None and context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
lazy = transport.LazyTLSTransport()
async def get():
    async with httpx.AsyncClient(transport=lazy, timeout=10) as client:
        return (await client.get(sys.argv[1])).status_code
print(asyncio.run(get()))
print(lazy._tls._pool._ssl_context is context)
print(len(set(sys.modules) - before))
"""


def test_warm_does_the_first_requests_work_beforehand(tls_server: tuple[str, Path]) -> None:
    """`warm` (run by hologram up's start-up thread) imports what the first request imported on the event loop
    (~110 ms of anyio's asyncio backend on the loaded 2-core host: issue 39 item 9) and, for an https provider,
    builds httpx's default verifying context once, which the verifying transport then uses: a server whose
    certificate ``SSL_CERT_FILE`` names is accepted through it, as with httpx's own ``verify=True``. In a fresh
    interpreter, so that the imports are really its. Mutation checks: anyio's asyncio backend dropped from
    `_REQUEST_IMPORTS` (red: missing); the transport built with ``verify=True`` instead of the warmed context
    (red: not the same context)."""
    url, cert = tls_server
    done = subprocess.run(
        [sys.executable, "-c", WARMED, url], capture_output=True, text=True, timeout=120,
        env={**os.environ, "SSL_CERT_FILE": str(cert)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    status, same, _ = done.stdout.split()
    assert (status, same) == ("200", "True")
