"""Who may use the HTTP channel: a token, the ``Host`` header, and ``Origin`` on state-changing requests.

Like Jupyter: a random token made on first start (``<data>/http-token``, 0600) is handed out as a link; the
page exchanges it for an HttpOnly, SameSite=Strict cookie, API clients send it as a Bearer token. Every
request is checked, in this order:

1. ``Host`` must be a name this server was bound as (127.0.0.1, localhost, [::1], the configured host, with
   the port): a page on an attacker's domain that resolves to 127.0.0.1 (DNS rebinding) is refused (403).
2. The token, by cookie or ``Authorization: Bearer``, compared in constant time; none or wrong → 401 on every
   route (the page, static files, the API, SSE, /v1).
3. A cookie-authenticated request other than GET/HEAD/OPTIONS must carry an ``Origin`` equal to the page's
   own (CSRF): browsers send cookies on cross-site form posts, never a Bearer header, so Bearer clients need no
   Origin.

The token never appears in a response, a header other than the cookie the user's own link set, or a log line.
"""

from __future__ import annotations

import hmac
import json
import logging
import os
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

log = logging.getLogger("hologram_plugins.http")
TOKEN_FILE = "http-token"
COOKIE = "hologram_token"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

UNAUTHORIZED_PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>Hologram</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body style="font-family: system-ui, sans-serif; max-width: 40em; margin: 4em auto; line-height: 1.5">
<h1>Hologram</h1>
<p>This page needs its access link. Open the link <code>hologram up</code> printed
(<code>http://127.0.0.1:PORT/?token=…</code>), or run <code>hologram open</code>.</p>
<p lang="zh-CN">此页面需要访问链接。请打开 <code>hologram up</code> 打印的链接
（<code>http://127.0.0.1:PORT/?token=…</code>），或运行 <code>hologram open</code>。</p>
</body></html>
"""


def load_token(data_dir: Path) -> str:
    """The token in ``<data>/http-token``, made (32 random bytes, urlsafe base64, mode 0600) if missing.
    An existing file is reused so links and cookies survive restarts; its mode is put back to 0600. One that
    cannot be a token (not ASCII, spaces inside, cut short) is set aside as ``http-token.damaged`` with a
    warning and a new one made: refusing to start would crash-loop the plugin over a file no restart fixes."""
    path = data_dir / TOKEN_FILE
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        os.chmod(path, 0o600)
        problem, token = token_problem(path.read_bytes())
        if problem is None:
            return token
        if token:  # empty means a crash while writing: nothing worth keeping
            aside = path.with_name(TOKEN_FILE + ".damaged")
            os.replace(path, aside)
            log.warning("%s: %s; set aside as %s, a new token made (old links stop working)", path, problem, aside)
        else:
            path.unlink()
        return load_token(data_dir)
    token = secrets.token_urlsafe(32)
    with os.fdopen(fd, "w", encoding="ascii") as f:
        f.write(token + "\n")
    return token


def token_problem(raw: bytes) -> tuple[str | None, str]:
    """(what is wrong with the token file's bytes or None, the token as text as far as it reads)."""
    text = raw.decode("utf-8", "replace").strip()
    if not raw.strip():
        return "it is empty", ""
    if not raw.isascii():
        return "it is not ASCII (a token is URL-safe base64)", text
    if not text.isprintable() or any(c.isspace() for c in text):
        return "it holds spaces or control characters (a token is one word)", text
    if len(text) < 16:
        return f"it is too short ({len(text)} characters, at least 16)", text
    return None, text


def allowed_hosts(host: str, port: int, *, tls: bool) -> frozenset[str]:
    """The ``Host`` header values this server answers to: the loopback names and the configured host, each
    with the port (and bare when the port is the scheme's default, as browsers then send it)."""
    names = {"127.0.0.1", "localhost", "[::1]"}
    names.add(f"[{host}]" if ":" in host and not host.startswith("[") else host)
    hosts = {f"{name}:{port}" for name in names}
    if port == (443 if tls else 80):
        hosts |= names
    return frozenset(h.lower() for h in hosts)


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return str(value.decode("latin-1"))
    return None


def _cookie_token(scope: Scope) -> str | None:
    raw = _header(scope, b"cookie")
    if not raw:
        return None
    cookie: SimpleCookie = SimpleCookie()
    try:
        cookie.load(raw)
    except Exception:  # a malformed Cookie header is no token, not an error
        return None
    morsel = cookie.get(COOKIE)
    return morsel.value if morsel is not None else None


def _bearer_token(scope: Scope) -> str | None:
    raw = _header(scope, b"authorization")
    if raw and raw[:7].lower() == "bearer ":
        return raw[7:].strip()
    return None


class AccessControl:
    """ASGI middleware in front of the whole app (pure ASGI: SSE streams pass through unbuffered)."""

    def __init__(self, app: ASGIApp, token: str, *, tls: bool, api: Callable[[str], bool] | None = None) -> None:
        self.app = app
        self.api = api  # paths answered in JSON although not under /api (other plugins' mounted routes)
        self._token = token.encode()
        self.tls = tls
        self.hosts: frozenset[str] = frozenset()  # set once the port is known (it may be ephemeral)

    def bind(self, host: str, port: int) -> None:
        self.hosts = allowed_hosts(host, port, tls=self.tls)

    def _matches(self, candidate: str | None) -> bool:
        return candidate is not None and hmac.compare_digest(candidate.encode(), self._token)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope.get("path", "")
        method: str = scope.get("method", "GET")
        host = (_header(scope, b"host") or "").lower()
        api = self.api is not None and self.api(path)
        if host not in self.hosts:
            await _refuse(
                scope, send, 403, "forbidden", "this server answers only to its own address (the Host header)", api=api
            )
            return
        if path == "/" and method in ("GET", "HEAD"):
            query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
            if "token" in query:
                if self._matches(query["token"][0]):
                    await self._login(send)
                else:
                    await _refuse(scope, send, 401, "unauthorized", "wrong token")
                return
        bearer = _bearer_token(scope)
        if bearer is not None:
            if not self._matches(bearer):
                await _refuse(scope, send, 401, "unauthorized", "wrong token", api=api)
                return
        elif self._matches(_cookie_token(scope)):
            if method not in SAFE_METHODS:
                origin = _header(scope, b"origin")
                own = f"{'https' if self.tls else 'http'}://{host}"
                if origin is None or origin.lower() != own:
                    await _refuse(
                        scope, send, 403, "forbidden", "cross-origin request refused (the Origin header)", api=api
                    )
                    return
        else:
            await _refuse(scope, send, 401, "unauthorized", "no access token", api=api)
            return
        await self.app(scope, receive, send)

    async def _login(self, send: Send) -> None:
        """The right token in the link: it becomes the cookie, and the address bar loses it (303 to /)."""
        cookie = f"{COOKIE}={self._token.decode()}; HttpOnly; SameSite=Strict; Path=/"
        if self.tls:
            cookie += "; Secure"
        headers = [
            (b"location", b"/"),
            (b"set-cookie", cookie.encode()),
            (b"cache-control", b"no-store"),
            (b"referrer-policy", b"no-referrer"),
            (b"content-length", b"0"),
        ]
        await send({"type": "http.response.start", "status": 303, "headers": headers})
        await send({"type": "http.response.body", "body": b""})


async def _refuse(scope: Scope, send: Send, status: int, code: str, message: str, *, api: bool = False) -> None:
    """401/403 in the shape the caller reads: OpenAI's for /v1, ours for /api and other plugins' routes (A2A,
    /mcp: ``api``), a small page otherwise (a browser)."""
    path: str = scope.get("path", "")
    page = not (path.startswith(("/api", "/v1", "/.well-known/")) or api)
    hint = "; open the link `hologram up` printed, or run `hologram open`" if status == 401 else ""
    if path.startswith("/v1"):
        kind = "authentication_error" if status == 401 else "permission_error"
        body = json.dumps({"error": {"message": message + hint, "type": kind, "code": code}}).encode()
        ctype = b"application/json"
    elif not page or status == 403:
        body = json.dumps({"error": {"code": code, "message": message + hint}}).encode()
        ctype = b"application/json"
    else:
        body = UNAUTHORIZED_PAGE.encode()
        ctype = b"text/html; charset=utf-8"
    headers = [(b"content-type", ctype), (b"content-length", str(len(body)).encode()), (b"cache-control", b"no-store")]
    if status == 401 and not page:
        headers.append((b"www-authenticate", b'Bearer realm="hologram"'))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body if scope.get("method") != "HEAD" else b""})
