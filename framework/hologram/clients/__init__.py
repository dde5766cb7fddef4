"""The turn API's clients: `TurnClient` over the control socket (`control`) and `HttpTurnClient`
over HTTP (`http_client`), both importable from here."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hologram.clients.control import TurnClient
    from hologram.clients.http_client import HttpTurnClient

__all__ = ["HttpTurnClient", "TurnClient"]


def __getattr__(name: str) -> Any:
    """Each client is imported on first use: the HTTP one needs httpx, which a local client never does, and
    a client over HTTP has no use for the control socket."""
    if name == "TurnClient":
        from hologram.clients.control import TurnClient

        return TurnClient
    if name == "HttpTurnClient":
        from hologram.clients.http_client import HttpTurnClient

        return HttpTurnClient
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
