"""The kernel's log rotates by size (issue 41 item 2), through a real `hologram up`: a plugin that floods its
stderr — 10,000 lines and one line longer than the pipe reader's buffer — leaves at most ``max_bytes ×
(backups + 1)`` of log on disk, and the Plugins → Log view (``GET /api/plugins/NAME/log``, the http plugin's
route to ``kernel.plugins.log``) keeps answering across the rotations, reading on into the backups.

Mutation checks (done, each red, green again once restored): `LogFile` a plain ``logging.FileHandler`` (no
rotation) — only one file, the size bound fails; `tail_matching` reading only the current file — the view
returns no more lines than that file holds; `ManagedPlugin._pump_stderr` not catching the reader's
``LimitOverrunError`` on the over-long line — the pump dies, the plugin blocks on its full stderr pipe and
"flood ends" never reaches the log; `apply_log_settings` not setting the handler's limits, or keeping
`keep_starts` old starts beside the current one — the second test fails.
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hologram.config.settings import LogSettings
from hologram.kernel.logfile import LogFile, apply_log_settings, log_files
from mock_llm import MockLLM
from tests.kit.wait import wait_until

from .kernel import HttpKernel

pytestmark = pytest.mark.slow

MAX_BYTES = 64 * 1024
BACKUPS = 2
LINES = 10_000  # ~2.8 MB of log lines: some forty rotations of a 64 KiB file
LONG_LINE = 200_000  # over the stderr reader's 64 KiB: asyncio refuses it as a line

FLOOD_MANIFEST = """\
[plugin]
name = "flood"
version = "0.1.0"
description = "prints its stderr full at start"
run = { module = "flood", env = { PYTHONPATH = "{path}" } }
"""

FLOOD = f"""\
import os, sys
from hologram.sdk import Plugin

plugin = Plugin("flood")


@plugin.on_start
def start(ctx) -> None:
    pad = "x" * 200
    for i in range({LINES}):
        print(f"flood {{i:05d}} {{pad}}", file=sys.stderr)
    print("y" * {LONG_LINE}, file=sys.stderr)
    print(f"flood ends (pid {{os.getpid()}})", file=sys.stderr, flush=True)


if __name__ == "__main__":
    plugin.run()
"""


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory, mock: MockLLM) -> Iterator[HttpKernel]:
    k = HttpKernel(tmp_path_factory.mktemp("logs"), mock, plugins={"flood": (FLOOD_MANIFEST, FLOOD)})
    settings = k.data / "settings.toml"
    settings.write_text(settings.read_text() + f"\n[log]\nmax_bytes = {MAX_BYTES}\nbackups = {BACKUPS}\n")
    k.start()
    yield k
    k.stop()


def test_a_flooding_plugin_cannot_fill_the_disk_and_the_log_view_reads_across_rotations(kernel: HttpKernel) -> None:
    with kernel.client() as client:

        def view(lines: int) -> list[str]:
            answer = client.get("/api/plugins/flood/log", params={"lines": lines})
            assert answer.status_code == 200, answer.text
            found: list[str] = answer.json()["lines"]
            return found

        tail = wait_until(lambda: view(3), accept=lambda t: any("flood ends" in x for x in t), timeout=60,
                          what="the flood's last line in the log view")  # fmt: skip
        long_line = f"[flood] {'y' * 8192}… ({LONG_LINE - 8192 + 1} more bytes not logged)"  # its newline counted
        assert tail[-2].endswith(long_line), tail  # the over-long line: one line, cut; the pump went on after it

        [current] = [p for p in (kernel.data / "logs").glob("hologram-*.log")]
        files = log_files(current)
        assert len(files) == BACKUPS + 1, files  # it rotated (a backup per slot), the oldest deleted
        on_disk = sum(p.stat().st_size for p in (kernel.data / "logs").iterdir())
        assert on_disk <= MAX_BYTES * (BACKUPS + 1), f"{on_disk} bytes of log for a {MAX_BYTES} × {BACKUPS + 1} bound"

        many = view(5000)  # more than the current file holds: the rest comes from the backups, in order
        numbers = [int(m.group(1)) for line in many if (m := re.search(r"\[flood\] flood (\d{5}) ", line))]
        in_current = sum(1 for line in current.read_text().splitlines() if "[flood] flood " in line)
        assert len(numbers) > in_current, (len(numbers), in_current)
        assert numbers == list(range(numbers[0], LINES)), "lines missing or out of order across the files"

    kernel.hologram("plugin", "restart", "flood", "--data", str(kernel.data), check=True)
    with kernel.client() as client:  # another start, another flood, more rotations: the view shows its end
        pid = {p["name"]: p for p in client.get("/api/plugins").json()["plugins"]}["flood"]["pid"]
        wait_until(
            lambda: client.get("/api/plugins/flood/log", params={"lines": 3}).json()["lines"],
            accept=lambda t: any(f"flood ends (pid {pid})" in x for x in t),
            timeout=60,
            what="the restarted plugin's flood to end in the view",
        )
    assert sum(p.stat().st_size for p in (kernel.data / "logs").iterdir()) <= MAX_BYTES * (BACKUPS + 1)


def test_the_settings_reach_the_open_file_and_old_starts_are_pruned(tmp_path: Path) -> None:
    """`apply_log_settings` sets the open handler's limits and keeps the logs of `keep_starts` starts (the
    current one counted), each with its backups; other files in logs/ are left alone."""
    logs = tmp_path / "logs"
    logs.mkdir()
    now = time.time()
    for age in range(5):
        old = logs / f"hologram-2026010{age}-000000-1.log"
        old.write_text("old\n")
        Path(f"{old}.1").write_text("older\n")
        os.utime(old, (now - 100 * (age + 1), now - 100 * (age + 1)))
    (logs / "notes.txt").write_text("mine\n")
    handler = LogFile(logs / "hologram-20260201-000000-2.log", maxBytes=1, backupCount=1, delay=True)
    root = logging.getLogger("hologram")
    root.addHandler(handler)
    try:
        apply_log_settings(LogSettings(max_bytes=128 * 1024, backups=4, keep_starts=3), logs)
    finally:
        root.removeHandler(handler)
        handler.close()
    assert (handler.maxBytes, handler.backupCount) == (128 * 1024, 4)
    kept = sorted(p.name for p in logs.iterdir())
    assert kept == [
        "hologram-20260100-000000-1.log", "hologram-20260100-000000-1.log.1",
        "hologram-20260101-000000-1.log", "hologram-20260101-000000-1.log.1", "notes.txt",
    ], kept  # fmt: skip
