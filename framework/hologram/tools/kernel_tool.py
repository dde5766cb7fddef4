"""A tool implemented in the kernel process, and what its handler is told about the call.

Here, below the agent, because the kernel's components that provide such tools (memory: `memory_recall`,
`coldcontext_query`) sit below the agent that runs them: with the type in `hologram.agent.tools`, memory
imported the agent (an arrow back up the layers, tests/guard/test_layers.py). The agent's registry
(`hologram.agent.tools.ToolRegistry`) holds them and re-exports these names.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ToolInvocation:
    """What a kernel tool handler is told about the call besides its arguments."""

    call_id: str
    session_id: str | None
    turn_id: str | None = None


KernelHandler = Callable[[dict[str, Any], ToolInvocation], Awaitable[Any]]


@dataclass(frozen=True)
class KernelTool:
    """A tool implemented in the kernel process. ``handler(arguments, invocation)`` returns a str, a
    ``{"content": str, "is_error": bool}`` dict, or any JSON value (sent as JSON text)."""

    name: str
    description: str
    handler: KernelHandler
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})
    parallel_safe: bool = False
    offered: Callable[[str | None], bool] | None = None
    """Whether a session's requests carry this tool's schema (None: always). A search over a layer that holds
    nothing for the session (no cold context yet, an empty memory graph) would cost its bytes on every request
    of every new session for nothing; it stays callable by name all the same."""
