"""A full disk, at start and during a turn (issue 42: `hologram up` printed a traceback ending in
``sqlite3.OperationalError: database or disk is full``, and a turn that hit it reached the client as a 502
"upstream" without naming the file).

On a real small filesystem (a tmpfs, mounted here: it needs root, as CI runs; elsewhere the test is skipped
with the reason), filled with a file the test then removes. What holds: the turn's client gets
``turn.error`` ``storage`` naming the file and the free space; /v1 answers 500 ``storage``, not 502; nothing
stored before is lost; once there is space again the next turn is answered; `hologram up` on the full disk
prints one line with the file and the fix, no traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from hologram.api import turn as api
from hologram.clients import TurnClient
from mock_llm import MockLLM
from tests.httpapi.kernel import HttpKernel

from .kernel import HOLOGRAM, env

SIZE_MB = 96


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "small"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root (CI runs as root)")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={SIZE_MB}m", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(disk: Path) -> Path:
    """Fill the filesystem to its last byte with one file; returns it."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        for size in (1 << 20, 4096, 1):  # MiBs, then the last pages, then the last bytes
            with contextlib.suppress(OSError):
                while os.write(fd, b"\0" * size):
                    pass
    finally:
        os.close(fd)
    return filler


async def _turn(data: Path, text: str, session: str) -> list[api.TurnEvent]:
    async with await TurnClient.connect(data, client="disk") as client:
        turn = await client.start(text, session=session)
        return [event async for event in turn]


def test_a_full_disk_is_named_to_the_client_and_loses_nothing(small_disk: Path, mock: MockLLM) -> None:
    k = HttpKernel(small_disk / "root", mock)
    mock.script([{"reasoning_content": "r", "content": "First answer."}], default={"content": "Later answer."})
    k.start()
    try:
        first = asyncio.run(_turn(k.data, "remember the first thing", "disk-1"))
        assert isinstance(first[-1], api.TurnEnded) and first[-1].output == "First answer."
        before = k.events("disk-1")["events"]
        filler = fill(small_disk)

        events = asyncio.run(_turn(k.data, "and a second thing " * 200, "disk-1"))
        [error] = [e for e in events if isinstance(e, api.TurnFailed)]
        assert error.kind == "storage", error
        assert "the disk is full" in error.message and ".db" in error.message, error.message
        assert "free some space" in error.message

        with k.client() as http:
            v1 = http.post(
                "/v1/chat/completions", json={"model": "hologram", "messages": [{"role": "user", "content": "hi"}]}
            )
        assert v1.status_code == 500 and v1.json()["error"]["code"] == "storage", v1.text
        assert "the disk is full" in v1.json()["error"]["message"]

        filler.unlink()  # space again
        assert k.events("disk-1")["events"][: len(before)] == before  # nothing stored before was lost
        again = asyncio.run(_turn(k.data, "and now?", "disk-1"))
        assert isinstance(again[-1], api.TurnEnded) and again[-1].output == "Later answer.", again[-1]
    finally:
        k.stop()

    filler = fill(small_disk)  # a start on the full disk: one line, the file, the fix
    try:
        started = subprocess.run(
            [*HOLOGRAM, "up", "--port", "0", "--lock", str(k.lock), "--data", str(k.data)],
            capture_output=True, text=True, env=env(), cwd=k.root, timeout=120,
        )  # fmt: skip
    finally:
        filler.unlink()
    assert started.returncode == 1, (started.stdout, started.stderr)
    assert "Traceback" not in started.stderr, started.stderr
    assert "the disk is full" in started.stderr and "free some space" in started.stderr, started.stderr
