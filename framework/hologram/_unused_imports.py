"""Optional imports that third-party packages attempt at import time and Hologram never uses: refused up front.

``import httpx`` imports ``httpx._main``, its command-line tool, which pulls in click, rich and pygments when
they are installed (click always is: uvicorn needs it); httpcore imports ``trio`` when it is installed (it is
in the development environment, through selenium) to support a trio event loop. Hologram runs asyncio only
and never calls httpx's CLI, yet each process that imports httpx paid for both: 1.8 + 4.1 MB resident and
~0.1 s of import (measured: RssAnon of a process importing httpx and making a client, 11.4 -> 5.5 MB).
A ``None`` in ``sys.modules`` makes the import raise ImportError, which both packages handle by leaving the
feature out (httpx defines a stub ``main``; httpcore sets ``trio = None``).

Applied only in Hologram's own processes (the CLI, so the kernel, and the zygote, so every plugin forked
from it), never on ``import hologram``: a program that embeds Hologram may well use trio.
"""

from __future__ import annotations

import sys

__all__ = ["UNUSED", "refuse_unused_imports"]

UNUSED = ("httpx._main", "trio")


def refuse_unused_imports() -> list[str]:
    """Mark the UNUSED modules not imported yet as absent; returns those it marked."""
    marked = [name for name in UNUSED if name not in sys.modules]
    for name in marked:
        sys.modules[name] = None  # type: ignore[assignment]
    return marked
