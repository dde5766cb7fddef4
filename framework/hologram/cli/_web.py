"""Where the HTTP channel plugin listens, for `hologram up`'s summary and `hologram status`.

The plugin writes ``<data>/http.json`` (no secret) once it listens and removes it at stop; the token is
``<data>/http-token`` (0600). Reading the files needs no control-socket round trip, and a file left by a
plugin that was killed is recognised by its pid.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any
from urllib.parse import quote

INFO_FILE = "http.json"
TOKEN_FILE = "http-token"


def web_info(data_dir: Path) -> dict[str, Any] | None:
    """http.json of a plugin that is still running, or None."""
    try:
        info = json.loads((data_dir / INFO_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(info, dict) or not isinstance(info.get("url"), str):
        return None
    pid = info.get("pid")
    if isinstance(pid, int):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            pass
    return info


def web_link(data_dir: Path) -> str | None:
    """The ready link (the URL with the token, which the page turns into a cookie), or None."""
    info = web_info(data_dir)
    if info is None:
        return None
    try:
        token = (data_dir / TOKEN_FILE).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):  # the http plugin sets a damaged one aside at its start
        return None
    return f"{str(info['url']).rstrip('/')}/?token={quote(token, safe='')}"


def remote_exposure(data_dir: Path) -> str | None:
    """What `up` says when the web UI is bound off loopback (``[plugins.http] host``), else None."""
    import ipaddress

    info = web_info(data_dir)
    if info is None:
        return None
    host = str(info.get("host") or "")
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        loopback = False
    if loopback:
        return None
    how = (
        "over TLS" if info.get("tls") else "WITHOUT TLS (allow_insecure_remote = true): the token travels in clear text"
    )
    return f"listening on {host}, reachable from other machines, {how}"
