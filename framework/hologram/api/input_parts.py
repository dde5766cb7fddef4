"""Typed input parts of ``turn/start`` (``input``): text, images and files, as pydantic models.

``text`` stays the simple form (one text part); ``input`` is a list of parts, discriminated by ``type``:

- ``{"type": "text", "text": "..."}``
- ``{"type": "image", "mime": "image/png", "data": "<base64>"}`` or ``{"type": "image", "url": "https://..."}``
- ``{"type": "file", "name": "notes.md", "mime": "text/markdown", "data": "<base64>"}``
  (``"encoding": "text"`` when ``data`` is the text itself)

Limits, so that one request fits one control-socket line (16 MiB, `hologram.rpc.framing`) and a provider's own
image limit (OpenAI: 20 MB): at most `MAX_PARTS` parts, `MAX_PART_BYTES` decoded per image or file,
`MAX_TOTAL_BYTES` decoded in all. Each error names the field, what was sent and how to fix it: a client's
mistake is said to its author, it is never a traceback in the kernel.

How the parts reach a model is `hologram.llm.content`'s business (it reads them as the plain dicts that are
stored with the turn's input event); these models only decide what a client may send.
"""

from __future__ import annotations

import base64
import binascii
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from typing_extensions import Self

MIB = 1024 * 1024
MAX_PARTS = 16
MAX_PART_BYTES = 8 * MIB
MAX_TOTAL_BYTES = 10 * MIB  # base64 of it (~13.4 MiB) and the JSON around it stay under the 16 MiB line
IMAGE_MIMES = ("image/png", "image/jpeg", "image/gif", "image/webp")  # what the vision APIs take


class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _mib(size: int) -> str:
    return f"{size / MIB:.1f} MiB"


def decoded_size(data: str) -> int:
    """The decoded length of base64 ``data``, without decoding it (the limit is checked first)."""
    stripped = data.rstrip("=")
    return len(stripped) * 3 // 4


def _check_base64(data: str, what: str) -> str:
    size = decoded_size(data)
    if size > MAX_PART_BYTES:
        raise ValueError(
            f"{what} is {_mib(size)} decoded; at most {_mib(MAX_PART_BYTES)} per part: send a smaller one"
            + (" (or its url)" if what == "image" else "")
        )
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(
            f"{what} data is not base64 ({len(data)} characters starting {data[:12]!r}): encode the bytes as "
            "standard base64 (RFC 4648, no line breaks, no data: prefix)"
        ) from None
    return data


class TextPart(_Part):
    """Text the user typed."""

    type: Literal["text"]
    text: str = Field(min_length=1, description="the text")


class ImagePart(_Part):
    """An image: its bytes (``mime`` and base64 ``data``) or an http(s) ``url`` the provider fetches."""

    type: Literal["image"]
    mime: str | None = Field(None, description=f"with data: one of {', '.join(IMAGE_MIMES)}")
    data: str | None = Field(None, description="the image's bytes, base64")
    url: str | None = Field(None, max_length=4096, description="an http(s) address of the image, instead of data")

    @field_validator("data")
    @classmethod
    def _data(cls, data: str | None) -> str | None:
        return None if data is None else _check_base64(data, "image")

    @field_validator("url")
    @classmethod
    def _url(cls, url: str | None) -> str | None:
        if url is not None and not url.startswith(("http://", "https://")):
            raise ValueError(
                f"{url[:40]!r} is not an http(s) address: give an http:// or https:// url, or send the bytes "
                "as mime and data"
            )
        return url

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        if (self.data is None) == (self.url is None):
            raise ValueError("an image needs exactly one of data (with mime) or url")
        if self.data is not None and self.mime not in IMAGE_MIMES:
            raise ValueError(f"mime {self.mime!r} is not an image type the models take: use one of {IMAGE_MIMES}")
        return self


class FilePart(_Part):
    """A file: text files are shown to the model as text, other files are named to it only."""

    type: Literal["file"]
    name: str = Field(min_length=1, max_length=255, description="the file's name, as the model will see it")
    mime: str = Field("application/octet-stream", min_length=1, max_length=255)
    data: str = Field(description="the file's content: base64, or the text itself with encoding text")
    encoding: Literal["base64", "text"] = "base64"

    @model_validator(mode="after")
    def _content(self) -> Self:
        if self.encoding == "base64":
            _check_base64(self.data, "file")
        elif len(self.data.encode()) > MAX_PART_BYTES:
            raise ValueError(f"file is {_mib(len(self.data.encode()))}; at most {_mib(MAX_PART_BYTES)} per part")
        return self

    def size(self) -> int:
        return decoded_size(self.data) if self.encoding == "base64" else len(self.data.encode())


Part = Annotated[TextPart | ImagePart | FilePart, Field(discriminator="type")]


def check_parts(parts: list[TextPart | ImagePart | FilePart]) -> None:
    """The limits over the whole list (each part checked its own already)."""
    if not parts:
        raise ValueError("input is empty: send at least one part, or use text")
    if len(parts) > MAX_PARTS:
        raise ValueError(f"{len(parts)} parts; at most {MAX_PARTS}: merge text parts or send fewer files")
    total = sum(
        decoded_size(p.data) if isinstance(p, ImagePart) and p.data else p.size() if isinstance(p, FilePart) else 0
        for p in parts
    )
    if total > MAX_TOTAL_BYTES:
        raise ValueError(
            f"the images and files are {_mib(total)} decoded together; at most {_mib(MAX_TOTAL_BYTES)} a turn: "
            "send fewer or smaller ones"
        )
