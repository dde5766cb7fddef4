"""Memory: what of a session the model sees, what is held in cold context (L2), and how it comes back.

The API is what the agent uses (DESIGN.md "Memory", docs/memory.md):

* :class:`SessionMemory` — L1/L2 of every session of a data directory: :meth:`~SessionMemory.prepare`
  before every LLM request (returns :class:`Prepared`), :meth:`~SessionMemory.recover` on overflow, the
  ``coldcontext_query`` kernel tool (:meth:`~SessionMemory.kernel_tool`);
* :class:`OverflowGuard` / :class:`PromptTooLargeError` — one guard per turn decides when a request must
  recover, and ends the turn with a clear error after two recoveries;
* :class:`ColdStore` — the durable L2 file (``cold.db``), for the tools that open it directly (doctor);
* :func:`estimate_tokens` — the token estimate every budget is counted in.

Everything else is internal: import it from its module. The modules are grouped by concern, one subpackage each
(``across``, ``cold``, ``embed``, ``graph``, ``index``, ``rank``, ``scenes``, ``text``; docs/memory.md, "Modules");
this package's top level is the facade.

The names are imported on first use (PEP 562): the memory graph's own process
(``python -m hologram.memory.graph.worker``) imports this package as the parent of its modules, and must not
pay for ``SessionMemory`` (numpy, the providers: 0.73 s and tens of MB) to serve the database.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hologram.memory.cold.overflow import OverflowGuard, PromptTooLargeError
    from hologram.memory.cold.store import ColdStore
    from hologram.memory.session_memory import SessionMemory
    from hologram.memory.session_records import Prepared
    from hologram.memory.text.tokens import estimate_tokens

__all__ = ["ColdStore", "OverflowGuard", "Prepared", "PromptTooLargeError", "SessionMemory", "estimate_tokens"]

_HOME = {
    "ColdStore": "hologram.memory.cold.store",
    "OverflowGuard": "hologram.memory.cold.overflow",
    "PromptTooLargeError": "hologram.memory.cold.overflow",
    "SessionMemory": "hologram.memory.session_memory",
    "Prepared": "hologram.memory.session_records",
    "estimate_tokens": "hologram.memory.text.tokens",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'hologram.memory' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value
