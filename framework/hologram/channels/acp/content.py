"""ACP content blocks ↔ the turn API's input parts (`hologram.api.input_parts`), both ways.

A prompt's blocks become ``turn/start``'s ``input``; a stored turn's parts become the blocks ``session/load``
replays. The kernel checks the parts (types, sizes, base64) and its error names the part and the fix, so this
module only translates: text → text, image → image, an embedded resource (a file the editor attached, with its
text or bytes) → a file part named by its path, a resource link → a line of text naming it (the agent does not
fetch the editor's links). Audio is refused: the turn API's parts carry none, and ``initialize`` says so.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote, urlparse

from acp import RequestError
from acp.helpers import (
    embedded_blob_resource,
    embedded_text_resource,
    image_block,
    resource_block,
    resource_link_block,
    text_block,
)
from acp.schema import (
    AudioContentBlock,
    BlobResourceContents,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    ResourceContentBlock,
    TextContentBlock,
    TextResourceContents,
)

PromptBlock = (
    TextContentBlock | ImageContentBlock | AudioContentBlock | ResourceContentBlock | EmbeddedResourceContentBlock
)
ReplayBlock = TextContentBlock | ImageContentBlock | ResourceContentBlock | EmbeddedResourceContentBlock
NAME_MAX = 255  # a file part's name (hologram.api.input_parts.FilePart)


def file_name(uri: str) -> str:
    """A file part's name for a resource: its path for a ``file:`` URI (the model reads where the file is, not
    only its base name), else the URI; the tail kept when too long."""
    parsed = urlparse(uri)
    name = unquote(parsed.path) if parsed.scheme == "file" else uri
    name = name or "resource"
    return name if len(name) <= NAME_MAX else name[-NAME_MAX:]


def uri_of(name: str) -> str:
    """The URI a stored file part is replayed with: `file_name` back, as near as it goes."""
    if "://" in name:
        return name
    return f"file://{name}" if name.startswith("/") else name


def input_of(blocks: list[PromptBlock]) -> tuple[str | None, list[dict[str, Any]] | None]:
    """``turn/start``'s input for a prompt: ``(text, None)`` for a prompt of one text block (stored as a
    text-only turn, as every other client's), else ``(None, parts)``."""
    parts: list[dict[str, Any]] = []
    for n, block in enumerate(blocks):
        if isinstance(block, TextContentBlock):
            if block.text:
                parts.append({"type": "text", "text": block.text})
        elif isinstance(block, ImageContentBlock):
            if block.data:
                parts.append({"type": "image", "mime": block.mime_type, "data": block.data})
            elif block.uri:
                parts.append({"type": "image", "url": block.uri})
            else:
                raise RequestError.invalid_params({"prompt": f"block {n}: an image with neither data nor uri"})
        elif isinstance(block, ResourceContentBlock):
            label = block.title or block.name
            parts.append({"type": "text", "text": f"[link {label}: {block.uri}]"})
        elif isinstance(block, EmbeddedResourceContentBlock):
            parts.append(_file_part(block.resource))
        else:  # audio: promptCapabilities.audio is false
            raise RequestError.invalid_params(
                {"prompt": f"block {n}: {block.type} is not supported: send text, images or files"}
            )
    if not parts:
        raise RequestError.invalid_params({"prompt": "the prompt is empty: send at least one text block"})
    if len(parts) == 1 and parts[0]["type"] == "text":
        return str(parts[0]["text"]), None
    return None, parts


def _file_part(resource: TextResourceContents | BlobResourceContents) -> dict[str, Any]:
    name = file_name(resource.uri)
    if isinstance(resource, TextResourceContents):
        mime = resource.mime_type or "text/plain"
        return {"type": "file", "name": name, "mime": mime, "data": resource.text, "encoding": "text"}
    return {
        "type": "file",
        "name": name,
        "mime": resource.mime_type or "application/octet-stream",
        "data": resource.blob,
    }


def blocks_of(stored: dict[str, Any]) -> list[ReplayBlock]:
    """The blocks of a stored ``input`` event (``sessions/read``): its parts, or what the user typed."""
    parts = stored.get("parts")
    if not isinstance(parts, list):
        text = stored.get("original") or stored.get("text") or ""
        return [text_block(str(text))]
    blocks: list[ReplayBlock] = []
    for part in parts:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "text":
            blocks.append(text_block(str(part.get("text", ""))))
        elif kind == "image" and part.get("data"):
            blocks.append(image_block(str(part["data"]), str(part.get("mime") or "image/png")))
        elif kind == "image" and part.get("url"):
            blocks.append(resource_link_block(str(part["url"]), str(part["url"])))
        elif kind == "file":
            uri, mime, data = uri_of(str(part.get("name", ""))), part.get("mime"), str(part.get("data", ""))
            if part.get("encoding") == "text":
                blocks.append(resource_block(embedded_text_resource(uri, data, mime_type=mime)))
            else:
                blocks.append(resource_block(embedded_blob_resource(uri, data, mime_type=mime)))
    return blocks
