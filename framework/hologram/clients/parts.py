"""Input parts of ``turn/start`` from files on disk: what ``hologram ask --image/--file`` and scripts send.

Plain dicts in the wire shape of `hologram.api.input_parts` (the kernel validates them), the MIME type guessed
from the name (`mimetypes`). A file that cannot be read, is too large or (for ``--image``) is not an image
the models take is a `HologramError` naming the file and the fix, raised before anything is sent: the limits
are the kernel's own, so a too-large file is refused here instead of by the kernel after an upload.
"""

from __future__ import annotations

import base64
import mimetypes
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hologram.base.errors import HologramError, Problem


def _read(path: Path, what: str) -> bytes:
    from hologram.api.input_parts import MAX_PART_BYTES  # pydantic, only for a turn that sends files

    try:
        size = path.stat().st_size
        if size > MAX_PART_BYTES:
            raise HologramError(
                Problem(
                    f"the {what} is {size / 2**20:.1f} MiB; at most {MAX_PART_BYTES // 2**20} MiB per {what}",
                    file=str(path),
                    hint=f"send a smaller {what} (shrink or compress it)",
                )
            )
        return path.read_bytes()
    except OSError as exc:
        raise HologramError(
            Problem(f"cannot read the {what}: {exc.strerror}", file=str(path), hint="check the path")
        ) from None


def image_part(path: Path) -> dict[str, Any]:
    """``{"type": "image", "mime", "data"}`` of an image file (png, jpeg, gif, webp)."""
    from hologram.api.input_parts import IMAGE_MIMES

    mime = mimetypes.guess_type(path.name)[0]
    if mime not in IMAGE_MIMES:
        raise HologramError(
            Problem(
                f"not an image type the models take ({mime or 'unknown type'})",
                file=str(path),
                hint="send a .png, .jpg, .gif or .webp file, or use --file for other files",
            )
        )
    return {"type": "image", "mime": mime, "data": base64.b64encode(_read(path, "image")).decode("ascii")}


def file_part(path: Path) -> dict[str, Any]:
    """``{"type": "file", "name", "mime", "data"}`` of any file (text files are shown to the model as text)."""
    mime = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    data = base64.b64encode(_read(path, "file")).decode("ascii")
    return {"type": "file", "name": path.name, "mime": mime, "data": data}


def input_parts(text: str, images: Sequence[Path] = (), files: Sequence[Path] = ()) -> list[dict[str, Any]]:
    """The parts of a turn: its text (when there is any), then the images, then the files."""
    parts: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    parts.extend(image_part(Path(p)) for p in images)
    parts.extend(file_part(Path(p)) for p in files)
    return parts
