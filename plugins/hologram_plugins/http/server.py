"""uvicorn inside the plugin's event loop, on a socket bound here so a busy port is a clear error and port 0
(tests) gives a real port to announce; ``<data>/http.json`` says where it listens (no token in it)."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import logging
import os
import socket
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hologram_plugins.http import uvicorn_core
from hologram_plugins.http.config import HttpConfig

log = logging.getLogger("hologram_plugins.http")

INFO_FILE = "http.json"

if TYPE_CHECKING:
    from uvicorn.config import Config
    from uvicorn.server import Server
else:
    Config, Server = uvicorn_core.load()  # without uvicorn's CLI (click, watchfiles): see uvicorn_core


class PortInUse(OSError):
    pass


class _Server(Server):
    """uvicorn without its signal handlers: the plugin's runtime owns SIGINT/SIGTERM, and stops us."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def bind(config: HttpConfig) -> socket.socket:
    family = socket.AF_INET6 if ":" in config.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((config.host.strip("[]"), config.port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise PortInUse(
                f"port {config.port} is in use: hologram up --port N, or [plugins.http] port in settings.toml"
            ) from None
        raise OSError(
            f"cannot listen on {config.host}:{config.port}: {exc.strerror}; check [plugins.http] host"
        ) from None
    sock.listen(512)
    sock.setblocking(False)
    return sock


class HttpServer:
    def __init__(self, app: Any, config: HttpConfig, data_dir: Path) -> None:
        self.config = config
        self.data_dir = data_dir
        self.sock = bind(config)
        self.port: int = self.sock.getsockname()[1]
        scheme = "https" if config.tls else "http"
        shown = f"[{config.host}]" if ":" in config.host else config.host
        self.url = f"{scheme}://{shown}:{self.port}"
        uv = Config(
            app,
            lifespan="off",
            access_log=False,  # the login link carries the token in its query: never log request lines
            log_config=None,
            ssl_certfile=config.tls_certfile or None,
            ssl_keyfile=config.tls_keyfile or None,
            ssl_version=ssl.PROTOCOL_TLS_SERVER,
            timeout_graceful_shutdown=2,
            ws="none",
        )
        self.server = _Server(uv)
        self.task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self.task = asyncio.get_running_loop().create_task(self.server.serve(sockets=[self.sock]))
        while not self.server.started:
            if self.task.done():
                self.task.result()  # raises what stopped it
                raise OSError("the HTTP server stopped while starting")
            await asyncio.sleep(0.01)
        self._write_info()

    def _write_info(self) -> None:
        info = {
            "url": self.url,
            "host": self.config.host,
            "port": self.port,
            "pid": os.getpid(),
            "tls": self.config.tls,
        }
        path = self.data_dir / INFO_FILE
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(info) + "\n", encoding="utf-8")
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)

    async def stop(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            (self.data_dir / INFO_FILE).unlink()
        self.server.should_exit = True
        if self.task is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.task, 5)
