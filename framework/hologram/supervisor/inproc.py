"""An in-process plugin as the supervisor holds it: the face the supervisor needs, not the SDK behind it.

A ``run.inproc`` plugin is served by the SDK's runtime over an in-memory pipe (`hologram.sdk.local`), and
the SDK sits above the supervisor (its conformance kit runs a plugin under one). So the supervisor names
only this protocol, and whoever builds it — the kernel, the kit, a test — hands it the loader
(`Supervisor(inproc_loader=LocalEndpoint.load)`); before, the supervisor imported `sdk.local` itself, an
arrow back up the layers (tests/guard/test_layers.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol


class InprocEndpoint(Protocol):
    """One in-process plugin: its channel to the kernel and the local call path into it (the SDK's
    `LocalEndpoint` is the implementation)."""

    @property
    def name(self) -> str: ...

    def connect(self) -> tuple[Any, Any, Awaitable[None]]:
        """The kernel's end of a new channel (reader, writer) and the plugin's serving of it, to await."""
        ...

    async def handle(self, method: str, params: Any) -> Any:
        """Answer one request exactly as the plugin does over its channel."""
        ...

    def stage_function(self, stage: str) -> Callable[[dict[str, Any]], Any] | None:
        """The function ``stage/invoke`` calls for ``stage`` (None: no hook)."""
        ...


InprocLoader = Callable[[str], InprocEndpoint]
"""A module name (``run.inproc``) → its loaded endpoint; raises ImportError naming what is missing."""
