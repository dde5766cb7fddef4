"""Optional imports that third-party packages attempt at import time and Hologram never uses: refused up front.

``import httpx`` imports ``httpx._main``, its command-line tool, which pulls in click, rich and pygments when
they are installed (click often is, through other packages); httpcore imports ``trio`` when it is installed (it is
in the development environment, through selenium) to support a trio event loop. Hologram runs asyncio only
and never calls httpx's CLI, yet each process that imports httpx paid for both: 1.8 + 4.1 MB resident and
~0.1 s of import (measured: RssAnon of a process importing httpx and making a client, 11.4 -> 5.5 MB).
A ``None`` in ``sys.modules`` makes the import raise ImportError, which both packages handle by leaving the
feature out (httpx defines a stub ``main``; httpcore sets ``trio = None``).

Applied only in Hologram's own processes (the CLI, so the kernel, and the zygote before it preloads the SDK,
so the modules every plugin shares are imported without them), never on ``import hologram``: a program that
embeds Hologram may well use trio. A plugin forked from the zygote gets the refusal lifted
(:func:`allow_unused_imports`) before its own code runs: a third-party plugin that imports trio must find it,
as it would under ``python -m`` (the SDK's already-imported httpcore keeps running without its trio support).
"""

from __future__ import annotations

import sys

__all__ = ["UNUSED", "allow_unused_imports", "refuse_unused_imports"]

UNUSED = ("httpx._main", "trio")


def refuse_unused_imports() -> list[str]:
    """Mark the UNUSED modules not imported yet as absent; returns those it marked."""
    marked = [name for name in UNUSED if name not in sys.modules]
    for name in marked:
        sys.modules[name] = None  # type: ignore[assignment]
    return marked


def allow_unused_imports() -> list[str]:
    """Lift :func:`refuse_unused_imports`: the UNUSED modules marked absent can be imported again (a forked
    plugin's own code may use them). Returns those it unmarked."""
    unmarked = [name for name in UNUSED if name in sys.modules and sys.modules[name] is None]
    for name in unmarked:
        del sys.modules[name]
    return unmarked
