"""The plugin's HTTP server (`http11`, h11 underneath) inside its event loop, on a socket bound here so a busy
port is a clear error and port 0 (tests) gives a real port to announce; ``<data>/http.json`` says where it
listens (no token in it)."""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import socket
import ssl
from pathlib import Path
from typing import Any

from hologram.sdk import StartRefused
from hologram_plugins.http.config import HttpConfig
from hologram_plugins.http.http11 import BACKLOG, Limits, Server

log = logging.getLogger("hologram_plugins.http")

INFO_FILE = "http.json"
GRACE_S = 2.0  # what a response in flight gets to finish when the plugin stops


class PortInUse(StartRefused):
    """The port is taken: the plugin does not start (no restart loop: the port stays taken until a person
    acts); the kernel logs the message as one line, and `hologram up` shows it."""


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
                f"port {config.port} is in use: hologram up --port N, or [plugins.http] port in settings.toml; "
                "or free it and run `hologram plugin restart http`"
            ) from None
        raise StartRefused(
            f"cannot listen on {config.host}:{config.port}: {exc.strerror}; check [plugins.http] host"
        ) from None
    sock.listen(BACKLOG)  # asyncio sets it again when it starts serving: `Server` passes it on
    sock.setblocking(False)
    return sock


def tls_context(config: HttpConfig) -> ssl.SSLContext | None:
    """A server context with the configured certificate and key, or None without TLS."""
    if not config.tls:
        return None
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(config.tls_certfile, config.tls_keyfile or None)
    except (OSError, ssl.SSLError) as exc:  # the same files would fail again: say so once, no restart loop
        raise StartRefused(
            f"settings.toml [plugins.http] tls_certfile/tls_keyfile: cannot be loaded ({exc}); give a PEM "
            "certificate and its private key"
        ) from None
    return context


class HttpServer:
    def __init__(self, app: Any, config: HttpConfig, data_dir: Path) -> None:
        self.config = config
        self.data_dir = data_dir
        context = tls_context(config)  # before binding: a bad certificate leaves no socket behind
        self.sock = bind(config)
        self.port: int = self.sock.getsockname()[1]
        scheme = "https" if config.tls else "http"
        shown = f"[{config.host}]" if ":" in config.host else config.host
        self.url = f"{scheme}://{shown}:{self.port}"
        limits = Limits(
            max_body_bytes=config.max_body_bytes,
            header_timeout=config.header_timeout_s,
            keep_alive=config.keep_alive_s,
            min_body_rate=config.min_body_rate,
            body_timeout=config.body_timeout_s,
            max_connections_per_client=config.max_connections_per_client,
        )
        self.server = Server(app, self.sock, context, limits)

    async def start(self) -> None:
        await self.server.start()
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
        await self.server.stop(GRACE_S)
