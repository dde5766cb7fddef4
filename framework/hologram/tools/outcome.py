"""A tool's result as the kernel holds it, and the one place a tool's answer is normalised into it.

A plugin's answer to ``tool/invoke`` (protocol 1, docs/protocol.md: ``{"content", "is_error"?, "blob"?}``)
enters the kernel in `Supervisor.invoke_tool`; a kernel tool's return value enters in the executor. Both
go through `ToolOutcome.of` exactly once, so everything after (stage hooks, persistence, the model's
history) sees one typed shape and nothing downstream re-checks it. The SDK shapes a Python return value
into the wire format on the plugin's side (`hologram.sdk.runtime.tool_result`); that is serialisation, not
a second normalisation — a plugin in another language sends the same dict.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hologram.base import _fastjson as _json


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """What the model is told a call returned; ``is_error`` marks a failure the model should see as one.

    Not the turn API's ``tool.result`` event (`hologram.api.turn.ToolResult`, what a client is shown): this
    is the kernel's value that the event, the stage hooks and the history are made from."""

    content: str
    is_error: bool = False

    @classmethod
    def of(cls, value: Any) -> ToolOutcome:
        """The result for whatever a tool answered: the protocol's ``{"content", "is_error"?}`` mapping
        (other keys, such as ``blob``, are the plugin's business and not sent to the model), a bare string,
        or anything else as its JSON text (a peer that broke the protocol still yields a readable result)."""
        if isinstance(value, Mapping) and "content" in value:
            return cls(str(value["content"]), bool(value.get("is_error", False)))
        if isinstance(value, str):
            return cls(value)
        return cls(_json.dumps(value, default=str))
