"""What keeping a tool's image costs the kernel (hologram.sessions.media): a put (sha256, a 0600 file, its record)
and a read (the file, re-hashed) per image size, and the ``tool.result`` event's wire JSON with the reference
against the same event carrying the image inline as base64 (what the replay buffers would have to hold).

    .venv/bin/python tools/bench/media.py [--json] [--sizes 100000,1000000,8000000] [--count 20]

`put` runs on the kernel's event loop (the turn's `_record`), so its time is a pause of the loop: a browser
screenshot (100 KB – 1 MB) costs a few milliseconds.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from hologram.api import turn as api
from hologram.sessions.media import MediaStore


def measure(size: int, count: int) -> dict[str, Any]:
    folder = Path(tempfile.mkdtemp(prefix="hologram-media-bench-"))
    try:
        media = MediaStore.in_data_dir(folder, max_bytes=1 << 34, max_image_bytes=10 << 20)
        images = [b"\x89PNG\r\n\x1a\n" + os.urandom(size) for _ in range(count)]
        start = time.perf_counter()
        refs = [media.put("s", "image/png", data) for data in images]
        put_s = (time.perf_counter() - start) / count
        ids = [ref["id"] for ref in refs if isinstance(ref, dict)]
        start = time.perf_counter()
        for media_id in ids:
            media.read("s", media_id)
        read_s = (time.perf_counter() - start) / count
        event = api.ToolResult(session="s", turn="t", call_id="c1", tool="browser_screenshot", content="x")
        event.images = [refs[0]] if isinstance(refs[0], dict) else []
        with_ref = len(json.dumps(api.wire(event)))
        inline = with_ref + len(base64.b64encode(images[0]))
        return {
            "bytes": size,
            "put_ms": put_s * 1000,
            "read_ms": read_s * 1000,
            "event_ref": with_ref,
            "event_inline": inline,
        }
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000,8000000")
    parser.add_argument("--count", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = [measure(int(size), args.count) for size in args.sizes.split(",")]
    if args.json:
        print(json.dumps(rows))
        return
    for r in rows:
        print(
            f"{r['bytes']:>10,} B: put {r['put_ms']:.2f} ms, read {r['read_ms']:.2f} ms; "
            f"tool.result {r['event_ref']:,} B with the reference, {r['event_inline']:,} B inline"
        )


if __name__ == "__main__":
    main()
