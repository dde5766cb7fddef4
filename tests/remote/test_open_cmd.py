"""`hologram open`: what it says when nothing serves (each case its own fix), and the link it prints.
The link against a real server: tests/e2e/test_remote_cli_e2e.py::test_open_print_gives_a_link_that_works."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hologram.cli import main


def run_open(data: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str, str]:
    code = main(["open", "--data", str(data), *extra])
    out, err = capsys.readouterr()
    return code, out, err


def test_no_data_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_open(tmp_path / "missing", capsys, "--print")
    assert code == 1 and "no data directory" in err and "hologram up" in err


def test_no_kernel(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_open(tmp_path, capsys, "--print")
    assert code == 1 and f"no kernel runs with data directory {tmp_path}" in err
    assert f"hologram up --data {tmp_path}" in err


def test_a_kernel_without_its_http_plugin(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "hologram.sock").touch()
    code, _, err = run_open(tmp_path, capsys, "--print")
    assert code == 1 and "its http plugin is not serving" in err and "hologram status" in err


def test_a_file_left_by_a_plugin_that_is_gone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    (tmp_path / "http.json").write_text(json.dumps({"url": "http://127.0.0.1:9", "pid": gone.pid}))
    (tmp_path / "http-token").write_text("tok")
    code, _, err = run_open(tmp_path, capsys, "--print")
    assert code == 1 and f"gone (pid {gone.pid})" in err and "tok" not in err


def test_the_link_and_no_browser_here(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "http.json").write_text(json.dumps({"url": "http://127.0.0.1:8123", "port": 8123, "pid": os.getpid()}))
    (tmp_path / "http-token").write_text("abc-_123\n")
    code, out, _ = run_open(tmp_path, capsys, "--print")
    assert (code, out) == (0, "http://127.0.0.1:8123/?token=abc-_123\n")
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    code, out, err = run_open(tmp_path, capsys)
    assert code == 0 and out == "web UI: http://127.0.0.1:8123/?token=abc-_123\n"
    assert "ssh -L 8123:127.0.0.1:8123" in err
