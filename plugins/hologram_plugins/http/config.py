"""The plugin's ``[config]`` (manifest defaults, settings.toml ``[plugins.http]``, ``hologram up --port``),
checked once at start so a wrong value is an error naming the key and the fix, not a crash later."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from hologram.sdk import StartRefused

LOOPBACK_NAMES = ("localhost",)
# the server's timeouts and caps: checked by `HttpSettings` (types, ranges) before `from_config` sees them
SERVER_KEYS = ("header_timeout_s", "min_body_rate", "body_timeout_s", "keep_alive_s", "max_connections_per_client")
MAX_BODY_BYTES = 8 * 1024 * 1024  # the largest body a route accepts (the OpenAI-compatible API's)
STREAM_QUEUE_BYTES = 8 * 1024 * 1024  # events waiting for one client beyond a replay it is being sent
REASONING_BYTES = 4 * 1024 * 1024  # a non-streamed /v1 answer's reasoning, assembled from its deltas
ROUTE_TIMEOUT_S = 600.0  # a blocking A2A SendMessage answers when its turn ends: minutes, with tool calls


class HttpSettings(BaseModel):
    """settings.toml's ``[plugins.http]`` as the SDK validates it (types and ranges; its JSON Schema:
    manifests/http.config.schema.json); `HttpConfig.from_config` then checks what needs the file system or
    several keys together (TLS files exist, a non-loopback host has TLS)."""

    model_config = ConfigDict(extra="forbid")  # a misspelt key fails the start, naming it

    host: str = Field(
        "127.0.0.1", min_length=1, description="Bind address; off loopback needs TLS files or allow_insecure_remote."
    )
    port: int = Field(8080, ge=0, le=65535, description="Port; `hologram up --port N` overrides it; 0: any free port.")
    allow_insecure_remote: bool = Field(
        False, description="true: serve a non-loopback host without TLS (the token travels in clear text)."
    )
    tls_certfile: str = Field("", description="PEM certificate: serve https.")
    tls_keyfile: str = Field("", description="PEM private key (with tls_certfile).")
    max_body_bytes: int = Field(
        MAX_BODY_BYTES, ge=1, description="A larger request body is refused with 413 (the OpenAI API's own limit)."
    )
    stream_queue_bytes: int = Field(
        STREAM_QUEUE_BYTES,
        ge=256 * 1024,
        description="Events (their JSON) waiting for one SSE stream or /v1 request, beyond a replay it is being "
        "sent; a client further behind is dropped and resumes from its last seq. At least 256 KiB: what one read "
        "from the kernel brings at once.",
    )
    openai_reasoning_bytes: int = Field(
        REASONING_BYTES, ge=0, description="A non-streamed /v1 answer's reasoning_content is cut after this."
    )
    header_timeout_s: float = Field(
        10.0, gt=0, description="A request head not complete this long after its first byte: 408 and close."
    )
    min_body_rate: int = Field(
        1024, ge=1, description="Bytes a second a request body must average (after body_timeout_s); slower: 408."
    )
    body_timeout_s: float = Field(10.0, gt=0, description="The head start a request body gets before min_body_rate.")
    keep_alive_s: float = Field(5.0, gt=0, description="An idle connection is closed after this many seconds.")
    max_connections_per_client: int = Field(
        256, ge=1, description="Open connections one client address may hold; a request on one more: 429 and close."
    )
    route_timeout_s: float = Field(
        ROUTE_TIMEOUT_S,
        gt=0,
        le=3600,
        description="How long a plugin's mounted route (A2A, /mcp) may take to start its answer before a 504.",
    )


class ConfigError(StartRefused, ValueError):
    """A ``[plugins.http]`` value that cannot work; the message names the key, the value's problem, the fix.
    The plugin does not start and is not restarted (the same value would fail again)."""


@dataclass(frozen=True, slots=True)
class HttpConfig:
    host: str = "127.0.0.1"
    port: int = 8080
    allow_insecure_remote: bool = False
    tls_certfile: str = ""
    tls_keyfile: str = ""
    max_body_bytes: int = MAX_BODY_BYTES  # the server refuses a larger request body with a 413
    header_timeout_s: float = 10.0  # the rest: `http11.Limits`, whose defaults these are
    min_body_rate: int = 1024
    body_timeout_s: float = 10.0
    keep_alive_s: float = 5.0
    max_connections_per_client: int = 256
    route_timeout_s: float = ROUTE_TIMEOUT_S  # a mounted route's plugin must start its answer within this

    @property
    def tls(self) -> bool:
        return bool(self.tls_certfile and self.tls_keyfile)

    @property
    def loopback(self) -> bool:
        return is_loopback(self.host)

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> HttpConfig:
        where = "settings.toml [plugins.http]"
        host = config.get("host", "127.0.0.1")
        if not isinstance(host, str) or not host.strip():
            raise ConfigError(f'{where} host: must be a host name or address, e.g. "127.0.0.1"')
        port = config.get("port", 8080)
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
            raise ConfigError(f"{where} port: must be a whole number 0-65535 (0: any free port), not {port!r}")
        insecure = config.get("allow_insecure_remote", False)
        if not isinstance(insecure, bool):
            raise ConfigError(f"{where} allow_insecure_remote: must be true or false")
        files = {}
        for key in ("tls_certfile", "tls_keyfile"):
            value = config.get(key, "")
            if not isinstance(value, str):
                raise ConfigError(f"{where} {key}: must be a file path (a string)")
            if value and not Path(value).expanduser().is_file():
                raise ConfigError(f"{where} {key}: there is no file {value}; give the path of a PEM file")
            files[key] = str(Path(value).expanduser()) if value else ""
        if bool(files["tls_certfile"]) != bool(files["tls_keyfile"]):
            raise ConfigError(f"{where}: TLS needs both tls_certfile and tls_keyfile (or neither)")
        max_body = config.get("max_body_bytes", MAX_BODY_BYTES)
        if isinstance(max_body, bool) or not isinstance(max_body, int) or max_body < 1:
            raise ConfigError(
                f"{where} max_body_bytes: must be a whole number of bytes, at least 1 (default {MAX_BODY_BYTES}), "
                f"not {max_body!r}"
            )
        made = cls(
            host.strip(), port, insecure, files["tls_certfile"], files["tls_keyfile"], max_body,
            **{key: config[key] for key in (*SERVER_KEYS, "route_timeout_s") if key in config},
        )  # fmt: skip
        if not made.loopback and not made.tls and not made.allow_insecure_remote:
            raise ConfigError(
                f"{where} host = {made.host!r} is reachable from other machines: set tls_certfile and "
                "tls_keyfile, or allow_insecure_remote = true (the token then travels in clear text), "
                'or bind host = "127.0.0.1"'
            )
        return made


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
