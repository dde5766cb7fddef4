"""What the kernel has to tell the user reaches the terminal as before, though library code no longer prints:
the agent's "no LLM provider" is a kernel notice that `hologram up` prints on stderr, before the plugins'
progress; `--watch` reports go to stdout (`cli/up_cmd.py` `print_notice`; e2e: tests/e2e/test_agent_watch.py,
tests/launcher/test_up.py::test_watch_rebuilds_on_manifest_change_and_restarts_only_affected).

Mutation check (done): `up_cmd` not subscribing `print_notice` turns the first test red.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from hologram.cli.up_cmd import print_notice
from hologram.kernel.notices import Notice
from tests.launcher.kit import ROOT, write_plugin
from tests.launcher.test_up import hologram

pytestmark = pytest.mark.slow


def test_up_without_a_provider_says_so_on_stderr(tmp_path: Path) -> None:
    write_plugin(tmp_path, "solo")
    hologram("build", "--no-discover", "-m", ".", cwd=tmp_path)
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    process = subprocess.Popen(
        [sys.executable, "-m", "hologram", "up", "--port", "0", "--data", str(tmp_path / "data")],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert process.stderr is not None and process.stdout is not None
    said = threading.Event()
    lines: list[str] = []

    def read() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            lines.append(line)
            if line.startswith("hologram: no LLM provider is configured; "):
                said.set()

    threading.Thread(target=read, daemon=True).start()
    try:
        assert said.wait(60), "".join(lines)
    finally:
        process.send_signal(signal.SIGINT)
        out, _ = process.communicate(timeout=90)
    assert "settings.toml" in next(line for line in lines if line.startswith("hologram: no LLM provider"))
    assert "no LLM provider" not in out  # stdout carries the progress lines only


def test_print_notice_puts_watch_reports_on_stdout_and_warnings_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    print_notice(Notice("watch", "lock rebuilt; restarted nothing"))
    print_notice(Notice("agent", "no LLM provider is configured; add one", warning=True))
    captured = capsys.readouterr()
    assert captured.out == "watch: lock rebuilt; restarted nothing\n"
    assert captured.err == "hologram: no LLM provider is configured; add one\n"
