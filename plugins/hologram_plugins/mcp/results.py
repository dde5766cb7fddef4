"""An MCP ``CallToolResult`` as a Hologram tool result: what the model reads, and what it cannot.

- text blocks are the content, joined by blank lines; ``structuredContent`` without any text is its JSON;
- an image (or audio) block is named in the text (``[image: image/png, 12,345 bytes]``) and its bytes go
  along as the result's blob (the arena: `Plugin.blob`; the first such block — the model is sent text); an
  image's ``mime`` goes with it, so the kernel keeps it and the clients show it (docs/protocol.md, "An image
  for the clients");
- an embedded resource's text is included under its URI; a binary one and a resource link are named;
- ``isError`` is the tool result's ``is_error``: the model sees ``error: …`` and can correct itself.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable
from typing import Any

import mcp_types as types


def _decoded(data: str) -> bytes | None:
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None


def as_tool_result(result: types.CallToolResult, blob: Callable[[bytes], dict[str, Any]]) -> dict[str, Any]:
    """The ``tool/invoke`` answer for ``result``; ``blob`` wraps bytes (`Plugin.blob`)."""
    parts: list[str] = []
    attached: dict[str, Any] | None = None
    mime: str | None = None
    for block in result.content:
        if isinstance(block, types.TextContent):
            parts.append(block.text)
        elif isinstance(block, (types.ImageContent, types.AudioContent)):
            data = _decoded(block.data)
            kind = "image" if isinstance(block, types.ImageContent) else "audio"
            if data is None:
                parts.append(f"[{kind}: {block.mime_type}, not valid base64]")
                continue
            parts.append(f"[{kind}: {block.mime_type}, {len(data):,} bytes]")
            if attached is None:
                attached = blob(data)
                mime = block.mime_type if kind == "image" else None
        elif isinstance(block, types.EmbeddedResource):
            resource = block.resource
            if isinstance(resource, types.TextResourceContents):
                parts.append(f"[resource {resource.uri}]\n{resource.text}")
            else:
                parts.append(f"[resource {resource.uri}: {resource.mime_type or 'binary'}]")
        elif isinstance(block, types.ResourceLink):
            parts.append(f"[resource link {block.uri}: {block.name}]")
    if not any(isinstance(b, types.TextContent) for b in result.content) and result.structured_content is not None:
        parts.insert(0, json.dumps(result.structured_content, ensure_ascii=False, default=str))
    text = "\n\n".join(parts) or "(no content)"
    answer: dict[str, Any] = {"content": f"error: {text}" if result.is_error else text}
    if result.is_error:
        answer["is_error"] = True
    if attached is not None:
        answer["blob"] = attached
        if mime:
            answer["mime"] = mime
    return answer
