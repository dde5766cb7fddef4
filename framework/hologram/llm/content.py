"""Input parts (as stored with a turn's input event) → what a model reads: text, and OpenAI content arrays.

A turn's parts are plain dicts (`hologram.api.input_parts` validated them when the turn started), so this works
on a stored session as well as on a request. Two readings:

- `input_text`: the text of the turn — its text parts, and each text file under a line that names it. This is
  what the stages, memory and retrieval see (images are not text: each is a ``[image: <mime>]`` marker, and a
  binary file is only named);
- `image_urls` / `openai_content`: the images, as ``data:`` (or http) URLs in the chat content array of the
  vendors that take images (``[{"type": "text", ...}, {"type": "image_url", "image_url": {"url": ...}}]``).

Whether a provider takes images is its setting (`ProviderSettings.takes_images`); the chain refuses a request
with images before sending it to one that does not (`hologram.llm.chain`).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from typing import Any

TEXT_MIMES = ("application/json", "application/xml", "application/x-yaml", "application/yaml", "application/toml")


def is_text_mime(mime: str) -> bool:
    return mime.startswith("text/") or mime in TEXT_MIMES or mime.endswith(("+json", "+xml"))


def file_text(part: Mapping[str, Any]) -> str | None:
    """A file part's content as text, or None when it is not a text file (or not UTF-8)."""
    data = str(part.get("data", ""))
    if part.get("encoding") == "text":
        return data
    if not is_text_mime(str(part.get("mime", ""))):
        return None
    try:
        return base64.b64decode(data).decode("utf-8")
    except (binascii.Error, ValueError):
        return None


def input_text(parts: Sequence[Mapping[str, Any]]) -> str:
    """The text the model (and memory) reads of a turn's parts, in their order; an image is only a marker."""
    pieces: list[str] = []
    for part in parts:
        kind = part.get("type")
        if kind == "text":
            pieces.append(str(part.get("text", "")))
        elif kind == "image":  # a marker, so that the text says where an image was (and is never empty)
            pieces.append(f"[image: {part.get('mime') or part.get('url')}]")
        elif kind == "file":
            name, mime = part.get("name", "file"), part.get("mime", "application/octet-stream")
            text = file_text(part)
            if text is None:
                pieces.append(f"[file {name} ({mime}): not text, not shown]")
            else:
                pieces.append(f"[file {name} ({mime})]\n{text}")
    return "\n\n".join(pieces)


def image_urls(parts: Sequence[Mapping[str, Any]] | None) -> tuple[str, ...]:
    """Each image part as the URL a vision API takes: ``data:<mime>;base64,<data>``, or its http(s) url."""
    urls: list[str] = []
    for part in parts or ():
        if part.get("type") != "image":
            continue
        url = part.get("url")
        urls.append(str(url) if url else f"data:{part.get('mime')};base64,{part.get('data', '')}")
    return tuple(urls)


def openai_content(text: str | None, images: Sequence[str]) -> list[dict[str, Any]]:
    """A user message's content array: its text (when there is any) and then its images."""
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    content.extend({"type": "image_url", "image_url": {"url": url}} for url in images)
    return content
