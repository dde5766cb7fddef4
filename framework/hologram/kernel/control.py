"""The running kernel's control socket: `hologram status`, `hologram plugin …` and later clients talk here.

A Unix socket in the data directory (mode 0600) speaking the same line-delimited JSON-RPC as plugins, so
there is one protocol implementation to trust. Only the user who owns the data directory can connect.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from hologram.base.errors import HologramError, Problem
from hologram.rpc import UNKNOWN_NAME, Connection, RpcError

SOCKET_NAME = "hologram.sock"
UNIX_PATH_MAX = 107
Method = Callable[[dict[str, Any]], Awaitable[Any]]
# The client connection whose request is being handled: methods that stream (a turn's deltas) or ask back
# (approvals) talk to it. Request handlers run in tasks created by the connection, which copy this context.
current_connection: ContextVar[Connection | None] = ContextVar("current_connection", default=None)


def socket_path(data_dir: Path) -> Path:
    return data_dir / SOCKET_NAME


def check_socket_path(path: Path) -> str:
    """The address to bind or connect to: the path itself, or — when the absolute path is longer than Unix
    sockets allow — the same path relative to the working directory, if that is short enough (the data
    directory is absolute from `hologram up` on, and a deep working directory must not break the default)."""
    if len(os.fsencode(path)) <= UNIX_PATH_MAX:
        return str(path)
    relative = os.path.relpath(path)
    if len(os.fsencode(relative)) <= UNIX_PATH_MAX:
        return relative
    raise HologramError(
        Problem(
            f"the control socket path is {len(os.fsencode(path))} bytes; Unix sockets allow {UNIX_PATH_MAX}",
            file=str(path),
            hint="use a shorter --data directory",
        )
    )


class ControlServer:
    def __init__(self, path: Path, methods: dict[str, Method]) -> None:
        self.path = path
        self.methods = methods
        self._server: asyncio.AbstractServer | None = None
        self._connections: set[Connection] = set()
        self._disconnect_listeners: list[Callable[[Connection], None]] = []

    def on_disconnect(self, listener: Callable[[Connection], None]) -> None:
        """Call ``listener(connection)`` when a client's connection closes (the turn API detaches its watcher)."""
        self._disconnect_listeners.append(listener)

    def add(self, name: str, method: Method) -> None:
        """Serve ``name`` on every connection from now on; refuses a name already served."""
        if name in self.methods:
            raise ValueError(f"the control socket already serves {name!r}; register each method once")
        self.methods[name] = method

    async def start(self) -> None:
        address = check_socket_path(self.path)
        if self.path.exists():
            if await _answers(address):
                raise HologramError(
                    Problem(
                        "a kernel is already running with this data directory",
                        file=str(self.path),
                        hint="stop it first (Ctrl-C in its terminal), or use another --data directory",
                    )
                )
            self.path.unlink()  # left over from a kernel that was killed
        old_umask = os.umask(0o177)
        try:
            self._server = await asyncio.start_unix_server(self._serve, path=address)
        finally:
            os.umask(old_umask)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connection = Connection(reader, writer, name="control")
        for name, method in self.methods.items():
            connection.register(name, _wrap(method))
        self._connections.add(connection)
        current_connection.set(connection)
        try:
            await connection.serve()
        finally:
            self._connections.discard(connection)
            connection.close()
            for listener in self._disconnect_listeners:
                listener(connection)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            for connection in list(self._connections):
                connection.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2)
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()


def _wrap(method: Method) -> Callable[[Any], Awaitable[Any]]:
    async def handler(params: Any) -> Any:
        try:
            return await method(params if isinstance(params, dict) else {})
        except KeyError as exc:
            raise RpcError(UNKNOWN_NAME, str(exc.args[0]) if exc.args else str(exc)) from None

    return handler


async def _answers(address: str) -> bool:
    try:
        _, writer = await asyncio.wait_for(asyncio.open_unix_connection(address), 1)
    except (OSError, asyncio.TimeoutError):
        return False
    writer.close()
    return True


def _no_kernel(path: Path) -> HologramError:
    return HologramError(
        Problem(
            "no kernel is running with this data directory",
            file=str(path),
            hint="start one with `hologram up` (or pass the --data directory it uses)",
        )
    )


async def connect(data_dir: Path, *, name: str = "cli") -> Connection:
    """An async client connection, for commands that stream (a turn's deltas, approvals)."""
    path = socket_path(data_dir)
    address = check_socket_path(path)
    try:
        reader, writer = await asyncio.open_unix_connection(address)
    except (FileNotFoundError, ConnectionRefusedError):
        raise _no_kernel(path) from None
    return Connection(reader, writer, name=name)


def call(data_dir: Path, method: str, params: dict[str, Any] | None = None, timeout: float = 60.0) -> Any:
    """Blocking client for CLI commands: one request over the control socket; its result, or the kernel's
    error as a `HologramError`."""
    answer = request(data_dir, method, params, timeout)
    if "error" in answer:
        raise HologramError(Problem(str(answer["error"].get("message", answer["error"]))))
    return answer.get("result")


def request(data_dir: Path, method: str, params: dict[str, Any] | None = None, timeout: float = 60.0) -> dict[str, Any]:
    """One request over the control socket, blocking; the whole JSON-RPC answer (``result``, or ``error`` with
    its code, for callers that tell errors apart)."""
    path = socket_path(data_dir)
    address = check_socket_path(path)
    request = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout)
            sock.connect(address)
            sock.sendall(json.dumps(request).encode() + b"\n")
            buffer = b""
            while not buffer.endswith(b"\n"):
                chunk = sock.recv(65536)
                if not chunk:
                    break
                buffer += chunk
    except (FileNotFoundError, ConnectionRefusedError):
        raise _no_kernel(path) from None
    except TimeoutError:
        raise HologramError(Problem(f"the kernel did not answer {method!r} within {timeout:g} s")) from None
    answer: dict[str, Any] = json.loads(buffer or b"{}")
    return answer
