"""A tool's result as the kernel holds it, and the one place a tool's answer is normalised into it.

A plugin's answer to ``tool/invoke`` (protocol 1, docs/protocol.md: ``{"content", "is_error"?, "blob"?}``)
enters the kernel in `Supervisor.invoke_tool`; a kernel tool's return value enters in the executor. Both
go through `ToolOutcome.of` exactly once, so everything after (stage hooks, persistence, the model's
history) sees one typed shape and nothing downstream re-checks it. The SDK shapes a Python return value
into the wire format on the plugin's side (`hologram.sdk.runtime.tool_result`); that is serialisation, not
a second normalisation — a plugin in another language sends the same dict.

Images: a result whose ``blob`` comes with an image ``mime`` (``image/png``, ``image/jpeg``, ``image/gif``,
``image/webp``) carries that image for the clients (a browser screenshot). ``of`` reads its bytes through the
``read_blob`` it is given (the supervisor's: the plugin's arena, or base64) into `ToolImage`; the model is still
sent the text only. Where the bytes go from here — a content-addressed file, never the session log — is the
turn's business (`hologram.sessions.media`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from hologram.base import _fastjson as _json

IMAGE_MIMES = ("image/png", "image/jpeg", "image/gif", "image/webp")  # what a page shows with <img> safely


@dataclass(frozen=True, slots=True)
class ToolImage:
    """An image a tool returned for the clients to show: its bytes, once, as the plugin sent them."""

    mime: str
    data: bytes


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """What the model is told a call returned; ``is_error`` marks a failure the model should see as one.

    Not the turn API's ``tool.result`` event (`hologram.api.turn.ToolResult`, what a client is shown): this
    is the kernel's value that the event, the stage hooks and the history are made from."""

    content: str
    is_error: bool = False
    images: tuple[ToolImage, ...] = ()

    @classmethod
    def of(cls, value: Any, read_blob: Callable[[Any], bytes] | None = None) -> ToolOutcome:
        """The result for whatever a tool answered: the protocol's ``{"content", "is_error"?}`` mapping
        (a ``blob`` with an image ``mime`` becomes an image when ``read_blob`` is given; other keys are the
        plugin's business and not sent to the model), a bare string, or anything else as its JSON text (a peer
        that broke the protocol still yields a readable result). A blob that cannot be read costs the image,
        said in the content, never the result."""
        if isinstance(value, Mapping) and "content" in value:
            content, is_error = str(value["content"]), bool(value.get("is_error", False))
            mime = value.get("mime")
            if read_blob is None or value.get("blob") is None or mime not in IMAGE_MIMES:
                return cls(content, is_error)
            try:
                data = read_blob(value["blob"])
            except Exception as exc:  # a bad ref or base64: the text still reaches the model
                return cls(f"{content}\n[the {mime} image could not be read: {exc}]", is_error)
            return cls(content, is_error, (ToolImage(str(mime), data),))
        if isinstance(value, str):
            return cls(value)
        return cls(_json.dumps(value, default=str))
