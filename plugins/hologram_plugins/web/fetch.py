"""One guarded HTTP GET: every hop checked by the NetPolicy, connected to the checked address, size-capped.

Redirects are followed here, not by httpx, so each new location is checked again before it is requested.
The request goes to the resolved IP with the original `Host` header and, for HTTPS, the original name as SNI
and for certificate verification — so what was checked is what is connected to. Proxies from the
environment are ignored (a proxy would resolve and connect on its own, past the check).
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urljoin, urlsplit, urlunsplit

from hologram.base._unused_imports import refuse_unused_imports
from hologram_plugins.web.guard import Blocked, FetchError, NetPolicy, Target

if TYPE_CHECKING:
    import httpx

# httpx is imported on the first fetch, not with the plugin: it is ~100 ms of start-up and ~4.5 MB of each
# idle plugin process that imports this module (web, rss; tools/bench/footprint.py --turns).

USER_AGENT = "Hologram/0.1 (web plugin)"
MAX_REDIRECTS = 5
_META_CHARSET = re.compile(rb"""<meta[^>]+charset=["']?([A-Za-z0-9_\-]+)""", re.IGNORECASE)


@dataclass
class Fetched:
    url: str  # after redirects
    status: int
    content_type: str
    body: bytes
    truncated: bool
    charset: str | None

    def text(self) -> str:
        charset = self.charset
        if charset is None:
            sniffed = _META_CHARSET.search(self.body[:4096])
            charset = sniffed.group(1).decode("ascii") if sniffed else "utf-8"
        try:
            return self.body.decode(charset, errors="replace")
        except LookupError:
            return self.body.decode("utf-8", errors="replace")


def _pinned_url(target: Target, address: str) -> str:
    parts = urlsplit(target.url)
    host = f"[{address}]" if ipaddress.ip_address(address.split("%", 1)[0]).version == 6 else address
    return urlunsplit((parts.scheme, f"{host}:{target.port}", parts.path or "/", parts.query, ""))


async def guarded_get(url: str, policy: NetPolicy, *, max_bytes: int, timeout_s: float, accept: str = "*/*") -> Fetched:
    """GET `url` under `policy`, following up to MAX_REDIRECTS checked redirects. Every failure is a
    `FetchError` with a message for the model: `Blocked` by the policy, a timeout, an HTTP-level error."""
    refuse_unused_imports()  # this plugin runs asyncio only: httpx's CLI and trio would be ~6 MB for nothing
    import httpx

    try:
        return await asyncio.wait_for(_get(url, policy, max_bytes, timeout_s, accept), timeout_s)
    except asyncio.TimeoutError:
        raise FetchError(f"{url} did not answer within {timeout_s:g} s") from None
    except httpx.HTTPError as exc:
        raise FetchError(f"fetching {url} failed: {type(exc).__name__}: {exc}") from None


async def _get(url: str, policy: NetPolicy, max_bytes: int, timeout_s: float, accept: str) -> Fetched:
    import httpx

    timeout = httpx.Timeout(timeout_s, connect=min(10.0, timeout_s))
    async with httpx.AsyncClient(trust_env=False, follow_redirects=False, timeout=timeout) as client:
        for _ in range(MAX_REDIRECTS + 1):
            target = policy.check_url(url)
            address = (await policy.resolve(target))[0]
            host_header = target.host if target.port in (80, 443) else f"{target.host}:{target.port}"
            request = client.build_request(
                "GET",
                _pinned_url(target, address),
                headers={"Host": host_header, "User-Agent": USER_AGENT, "Accept": accept},
                extensions={"sni_hostname": target.host} if target.scheme == "https" else {},
            )
            response = await client.send(request, stream=True)
            try:
                if response.is_redirect and "location" in response.headers:
                    url = urljoin(url, response.headers["location"])
                    continue
                body, truncated = await _read_capped(response, max_bytes)
                content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
                return Fetched(url, response.status_code, content_type, body, truncated, response.charset_encoding)
            finally:
                await response.aclose()
    raise Blocked(f"{url!r}: more than {MAX_REDIRECTS} redirects")


async def _read_capped(response: httpx.Response, max_bytes: int) -> tuple[bytes, bool]:
    """At most max_bytes of the body; the rest is never downloaded (the connection is closed instead)."""
    buffer = bytearray()
    async for chunk in response.aiter_bytes():
        buffer.extend(chunk)
        if len(buffer) > max_bytes:
            return bytes(buffer[:max_bytes]), True
    return bytes(buffer), False
