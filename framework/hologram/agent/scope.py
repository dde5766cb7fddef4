"""What a turn started for another turn is limited to: a sub-agent's (``agent_delegate``) tools, steps and parent.

A turn started with ``turn/start`` ``tools``, ``max_steps`` or ``parent`` (docs/protocol.md §9) gets a `TurnScope`.
``tools`` names the tools (or whole plugins, ``kernel`` for memory's tools) it may use; it only ever narrows what
the turn's channel policy allows (a deferred tool named there is still loaded with ``tools_load``). ``max_steps`` lowers
``[agent] max_steps`` for this turn. ``parent`` is the session whose running turn this one works for: the child may
use no tool the parent may not (a chat channel limited to reading cannot delegate its way to a shell), and the hub
cancels it when the parent's turn ends, so no child turn outlives the call that started it (agent/hub.py).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class TurnScope:
    tools: frozenset[str] | None = None  # tool or plugin names; None: what the turn's policy allows
    max_steps: int | None = None  # at most this many LLM calls (never more than [agent] max_steps)
    parent: str | None = None  # the session of the turn this one works for

    @property
    def narrows(self) -> bool:
        return self.tools is not None or self.parent is not None
