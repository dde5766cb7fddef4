"""A local HTTP server on 127.0.0.1 for the web and rss tests: fixed routes, every request recorded."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

Route = tuple[int, dict[str, str], bytes]


@dataclass
class LocalServer:
    port: int
    routes: dict[str, Route | Callable[[], Route]] = field(default_factory=dict)
    requests: list[tuple[str, str]] = field(default_factory=list)  # (path, Host header)

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"


@pytest.fixture
def http_server() -> Iterator[LocalServer]:
    state = LocalServer(0)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            state.requests.append((self.path, self.headers.get("Host", "")))
            route = state.routes.get(self.path)
            if callable(route):
                route = route()
            status, headers, body = route or (404, {"Content-Type": "text/plain"}, b"not found")
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client stopped reading (size cap)
                self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def slow(seconds: float, route: Route) -> Callable[[], Route]:
    def answer() -> Route:
        time.sleep(seconds)
        return route

    return answer
