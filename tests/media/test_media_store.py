"""The media store (hologram.sessions.media): images of tool results kept once by content hash, bounded, private."""

from __future__ import annotations

import hashlib
import os
import stat
import struct
import zlib
from pathlib import Path

import pytest

from hologram.sessions.media import MediaStore, dimensions, looks_like, valid_id
from hologram.tools.outcome import ToolImage, ToolOutcome


def png(width: int, height: int, fill: int = 0) -> bytes:
    """A real PNG (greyscale, one byte a pixel): what Chromium's screenshot is, made here without a library."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    rows = b"".join(b"\x00" + bytes([fill]) * width for _ in range(height))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def store(tmp_path: Path, max_bytes: int = 1 << 20, max_image_bytes: int = 1 << 20) -> MediaStore:
    return MediaStore.in_data_dir(tmp_path, max_bytes=max_bytes, max_image_bytes=max_image_bytes)


def test_an_image_is_kept_once_by_its_hash_private_and_read_back(tmp_path: Path) -> None:
    media = store(tmp_path)
    data = png(30, 20)
    ref = media.put("s1", "image/png", data)
    assert isinstance(ref, dict)
    assert ref == {
        "id": hashlib.sha256(data).hexdigest(),
        "mime": "image/png",
        "bytes": len(data),
        "width": 30,
        "height": 20,
    }
    again = media.put("s2", "image/png", data)  # the same bytes from another session: one file
    assert again == ref
    files = sorted(p.name for p in (tmp_path / "media").iterdir())
    assert files == [ref["id"], ref["id"] + ".json"]
    for name in files:
        assert stat.S_IMODE((tmp_path / "media" / name).stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "media").stat().st_mode) == 0o700
    assert media.read("s1", ref["id"]) == (ref, data)
    assert media.read("s2", ref["id"]) == (ref, data)
    # a fresh store (a restarted kernel) finds it, and both sessions still hold it
    reopened = store(tmp_path)
    assert reopened.read("s2", ref["id"]) == (ref, data)
    assert reopened.total_bytes == len(data)


def test_only_a_session_that_holds_the_image_reads_it(tmp_path: Path) -> None:
    media = store(tmp_path)
    ref = media.put("mine", "image/png", png(4, 4))
    assert isinstance(ref, dict)
    assert media.read("someone-else", ref["id"]) is None
    assert media.read("mine", "0" * 64) is None  # unknown


@pytest.mark.parametrize(
    "bad",
    ["../../etc/passwd", "..", "A" * 64, "g" * 64, "0" * 63, "0" * 65, "", "0" * 62 + "/x", None, 7],
)
def test_a_malformed_id_is_never_joined_to_a_path(tmp_path: Path, bad: object) -> None:
    media = store(tmp_path)
    media.put("s", "image/png", png(2, 2))
    assert not valid_id(bad)
    assert media.read("s", bad) is None  # type: ignore[arg-type]


def test_an_image_over_the_cap_is_refused_with_the_setting_named(tmp_path: Path) -> None:
    media = store(tmp_path, max_image_bytes=1024)
    big = png(200, 200, fill=0) + os.urandom(2000)
    refused = media.put("s", "image/png", big)
    assert isinstance(refused, str)
    assert "max_image_bytes" in refused and f"{len(big):,}" in refused
    assert not (tmp_path / "media").exists() or not list((tmp_path / "media").iterdir())


def test_bytes_that_are_not_the_mime_said_are_refused(tmp_path: Path) -> None:
    media = store(tmp_path)
    assert (
        media.put("s", "image/png", b"<html><script>alert(1)</script>")
        == "the image was not kept: its bytes are not image/png"
    )
    assert not looks_like("image/webp", b"RIFF\x00\x00\x00\x00WAVE")
    assert looks_like("image/webp", b"RIFF\x00\x00\x00\x00WEBPVP8 ")
    assert dimensions("image/gif", b"GIF89a" + struct.pack("<HH", 7, 9)) == (7, 9)


def test_past_max_bytes_the_least_recently_used_go_first(tmp_path: Path) -> None:
    images = [png(20, 20, fill=n) + bytes(n) for n in range(4)]  # distinct bytes, similar sizes
    size = max(len(i) for i in images)
    media = store(tmp_path, max_bytes=3 * size)
    refs = [media.put("s", "image/png", data) for data in images[:3]]
    ids = [r["id"] for r in refs if isinstance(r, dict)]
    assert len(ids) == 3
    assert media.read("s", ids[0]) is not None  # used: the second is now the least recently used
    fourth = media.put("s", "image/png", images[3])
    assert isinstance(fourth, dict)
    assert media.read("s", ids[1]) is None  # pruned
    assert not (tmp_path / "media" / ids[1]).exists()
    assert media.read("s", ids[0]) is not None and media.read("s", fourth["id"]) is not None
    assert media.total_bytes <= 3 * size and media.pruned == 1


def test_the_image_just_put_survives_even_alone_over_the_bound(tmp_path: Path) -> None:
    media = store(tmp_path, max_bytes=10)
    first, second = png(8, 8), png(9, 9)
    media.put("s", "image/png", first)
    ref = media.put("s", "image/png", second)
    assert isinstance(ref, dict) and media.read("s", ref["id"]) is not None
    assert media.read("s", hashlib.sha256(first).hexdigest()) is None


def test_a_deleted_session_takes_its_images_unless_another_holds_them(tmp_path: Path) -> None:
    media = store(tmp_path)
    shared, own = png(3, 3), png(5, 5)
    shared_ref, own_ref = media.put("a", "image/png", shared), media.put("a", "image/png", own)
    media.put("b", "image/png", shared)
    assert isinstance(shared_ref, dict) and isinstance(own_ref, dict)
    assert media.forget_session("a") == 1
    assert not (tmp_path / "media" / own_ref["id"]).exists()
    assert media.read("b", shared_ref["id"]) is not None
    assert media.read("a", shared_ref["id"]) is None  # no longer a's
    assert store(tmp_path).read("a", shared_ref["id"]) is None  # and so after a restart


def test_a_file_changed_on_disk_is_not_served(tmp_path: Path) -> None:
    media = store(tmp_path)
    ref = media.put("s", "image/png", png(2, 2))
    assert isinstance(ref, dict)
    (tmp_path / "media" / ref["id"]).write_bytes(b"\x89PNG\r\n\x1a\nsomething else")
    assert media.read("s", ref["id"]) is None


def test_a_tool_answer_with_an_image_mime_carries_the_bytes_and_others_do_not() -> None:
    data = png(2, 2)
    seen = []

    def read_blob(blob: object) -> bytes:
        seen.append(blob)
        return data

    answer = {"content": "shot", "blob": {"base64": "x"}, "mime": "image/png"}
    assert ToolOutcome.of(answer, read_blob) == ToolOutcome("shot", False, (ToolImage("image/png", data),))
    assert ToolOutcome.of(answer) == ToolOutcome("shot")  # no reader: text only
    assert ToolOutcome.of({"content": "x", "blob": {"base64": "x"}}, read_blob) == ToolOutcome("x")  # no mime
    assert ToolOutcome.of({**answer, "mime": "image/svg+xml"}, read_blob) == ToolOutcome("shot")  # scriptable: no
    assert len(seen) == 1

    def broken(blob: object) -> bytes:
        raise ValueError("unknown arena 'p9'")

    bad = ToolOutcome.of(answer, broken)
    assert bad.images == () and "could not be read: unknown arena 'p9'" in bad.content


def test_status_reads_nothing_until_asked_then_counts(tmp_path: Path) -> None:
    media = store(tmp_path)
    assert media.status() == {"images": None, "bytes": None, "max_bytes": 1 << 20, "pruned": 0}
    data = png(6, 6)
    media.put("s", "image/png", data)
    assert media.status() == {"images": 1, "bytes": len(data), "max_bytes": 1 << 20, "pruned": 0}


def test_stray_files_a_crash_left_are_removed_when_the_index_is_read(tmp_path: Path) -> None:
    media = store(tmp_path)
    ref = media.put("s", "image/png", png(3, 3))
    assert isinstance(ref, dict)
    folder = tmp_path / "media"
    orphan = folder / ("ab" * 32)  # bytes written, their record not (killed between the two writes)
    orphan.write_bytes(png(4, 4))
    (folder / ".x.tmp").write_bytes(b"half")
    (folder / ("cd" * 32 + ".json")).write_text("{not json")  # a damaged record
    reopened = store(tmp_path)
    assert reopened.read("s", ref["id"]) is not None
    assert sorted(p.name for p in folder.iterdir()) == [ref["id"], ref["id"] + ".json"]


def test_a_stored_turns_tool_call_item_keeps_its_image_references() -> None:
    """turn/read of a turn the kernel no longer keeps (after a restart) builds its items from the store."""
    from types import SimpleNamespace

    from hologram.agent.service import stored_items

    ref = {"id": "ab" * 32, "mime": "image/png", "bytes": 70, "width": 1, "height": 1}
    events = [
        SimpleNamespace(kind="input", data={"text": "shot"}, call_id=None),
        SimpleNamespace(kind="tool_result", data={"name": "snap", "status": "ok", "images": [ref]}, call_id="c1"),
        SimpleNamespace(kind="tool_result", data={"name": "lookup", "status": "ok"}, call_id="c2"),
    ]
    items = stored_items("t", events)
    assert items[1] == {
        "id": "t.2",
        "type": "tool_call",
        "call_id": "c1",
        "tool": "snap",
        "status": "ok",
        "images": [ref],
    }
    assert "images" not in items[2]
