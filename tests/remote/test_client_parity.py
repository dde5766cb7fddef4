"""The two turn-API clients take the same params: `HttpTurnClient` (HTTP) and `TurnClient` (control socket).

A param added to one and not the other is how the HTTP API fell behind before (no scene, no partner over HTTP).
Mutation check (done): dropping ``partner`` from `HttpTurnClient.start` turns this red.
"""

from __future__ import annotations

import inspect

from hologram.clients.control import TurnClient
from hologram.clients.http_client import HttpTurnClient


def test_start_and_approve_have_the_same_signature_on_both_clients() -> None:
    for method in ("start", "approve", "watch", "cancel"):
        socket, http = (
            inspect.signature(getattr(TurnClient, method)),
            inspect.signature(getattr(HttpTurnClient, method)),
        )
        if method == "cancel":  # HTTP cancels the session's running turn only (no turn id in its path yet)
            assert list(http.parameters) == list(socket.parameters)[: len(http.parameters)]
            continue
        assert socket == http, (method, socket, http)
