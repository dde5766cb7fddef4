"""Which URLs the web tools may request: scheme, deny-list, and no private addresses (SSRF).

A model can be talked into fetching `http://169.254.169.254/…` (cloud credentials) or `http://127.0.0.1:8080`
(this very kernel's web UI) by a page it just read. So before every request — the first and each redirect —
the host is resolved and *every* address it resolves to must be public, and the connection then goes to the
address that was checked (see fetch.py), so a DNS answer that changes between check and connect (rebinding)
does not get through. Literal tricks (`2130706433`, `0x7f.1`, `[::ffff:127.0.0.1]`) are caught because the
check runs on resolved addresses, not on the text of the URL.
"""

from __future__ import annotations

import asyncio
import fnmatch
import ipaddress
import socket
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


class FetchError(ValueError):
    """A fetch that failed or was refused; the message is for the model (it names the URL and why)."""


class Blocked(FetchError):
    """A request the policy refuses; the message names the URL and the rule."""


def is_public(address: IPAddress) -> bool:
    """True for globally routable unicast addresses; IPv4 embedded in IPv6 is judged as the IPv4 it is."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return is_public(address.ipv4_mapped)
        if address in _NAT64:
            return is_public(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    if (
        address.is_private
        or address.is_loopback
        or address.is_link_local
        or address.is_multicast
        or address.is_reserved
        or address.is_unspecified
    ):
        return False
    return address.is_global


@dataclass
class Target:
    url: str
    scheme: str
    host: str
    port: int


class NetConfig(BaseModel):
    """The network keys the web and rss plugins share (``[plugins.web]``, ``[plugins.rss]``)."""

    model_config = ConfigDict(extra="forbid")  # a misspelt key fails the start, naming it

    allow_private: bool | list[str] = Field(
        False,
        description="true, or a list of CIDRs to allow (e.g. ['10.1.0.0/16']); loopback, LAN and link-local "
        "addresses are refused by default.",
    )
    deny: list[str] = Field(
        default_factory=list,
        description="Hosts (with their subdomains), glob patterns or CIDRs never fetched.",
    )

    @field_validator("allow_private")
    @classmethod
    def _networks(cls, value: bool | list[str]) -> bool | list[str]:
        for entry in value if isinstance(value, list) else []:
            try:
                ipaddress.ip_network(entry, strict=False)
            except ValueError:
                raise ValueError(f"{entry!r} is not a CIDR such as '10.0.0.0/8'") from None
        return value

    def policy(self) -> NetPolicy:
        return NetPolicy.from_config(self.model_dump())


@dataclass
class NetPolicy:
    allow_private: bool = False
    private_allowed: list[Network] = field(default_factory=list)  # specific non-public ranges that are allowed
    deny_hosts: list[str] = field(default_factory=list)  # "example.com" (and subdomains), "*.ads.*"
    deny_networks: list[Network] = field(default_factory=list)

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> NetPolicy:
        """`allow_private`: true, or a list of CIDRs ("10.0.0.0/8"); `deny`: host patterns and/or CIDRs."""
        allow = config.get("allow_private", False)
        policy = cls(allow_private=allow is True)
        if isinstance(allow, list):
            policy.private_allowed = [ipaddress.ip_network(str(n), strict=False) for n in allow]
        for entry in config.get("deny", []) or []:
            try:
                policy.deny_networks.append(ipaddress.ip_network(str(entry), strict=False))
            except ValueError:
                policy.deny_hosts.append(str(entry).lower().strip("."))
        return policy

    def check_url(self, url: str) -> Target:
        try:
            parts = urlsplit(url.strip())
            port = parts.port
        except ValueError as exc:
            raise Blocked(f"{url!r} is not a valid URL: {exc}") from None
        scheme = parts.scheme.lower()
        if scheme not in ("http", "https"):
            raise Blocked(f"{url!r}: only http and https URLs can be fetched")
        host = (parts.hostname or "").rstrip(".").lower()
        if not host:
            raise Blocked(f"{url!r} has no host")
        if parts.username or parts.password:
            raise Blocked(f"{url!r}: URLs with credentials are not fetched")
        for pattern in self.deny_hosts:
            if host == pattern or host.endswith("." + pattern) or fnmatch.fnmatchcase(host, pattern):
                raise Blocked(f"{url!r}: the host {host} is on the deny-list ({pattern})")
        return Target(url.strip(), scheme, host, port or (443 if scheme == "https" else 80))

    def address_allowed(self, address: IPAddress) -> str | None:
        """None if a connection to `address` is allowed, else the reason."""
        if any(address in network for network in self.deny_networks):
            return f"{address} is on the deny-list"
        if is_public(address) or self.allow_private:
            return None
        if any(address in network for network in self.private_allowed):
            return None
        return f"{address} is a private, loopback, link-local or otherwise non-public address"

    async def resolve(self, target: Target) -> list[str]:
        """Every address of the host, all checked; the first is where the request will go."""
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(target.host, target.port, type=socket.SOCK_STREAM)
        except socket.gaierror as exc:
            raise Blocked(f"cannot resolve {target.host}: {exc.strerror or exc}") from None
        addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
        if not addresses:
            raise Blocked(f"{target.host} has no addresses")
        for text in addresses:
            reason = self.address_allowed(ipaddress.ip_address(text.split("%", 1)[0]))
            if reason is not None:
                raise Blocked(
                    f"refused {target.url}: {target.host} resolves to {reason} "
                    "(requests to private networks are off; set allow_private in the web plugin's config)"
                )
        return addresses
