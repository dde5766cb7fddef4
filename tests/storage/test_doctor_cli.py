"""`hologram doctor` and `hologram doctor --repair` as a user runs them (subprocesses), on real files damaged
on disk.

Mutation checks (done): `_check_sqlite` skipping ``integrity_check`` turns ``test_check_reports_every_file``
red (the scribbled sessions.db passes as ok); `run` not asking `kernel_running` turns
``test_repair_refuses_while_a_kernel_answers`` red (the file is replaced under the kernel); `data_files` not
skipping ``*.damaged-*`` turns ``test_repair_recovers_keeps_the_damaged_files_and_reports_rows`` red (the
kept copies are reported damaged ever after).
"""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from damaged_files import break_text, build_cold, build_sessions, scribble, smash_header, truncate_half

pytestmark = pytest.mark.slow


def doctor(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hologram", "doctor", *args], capture_output=True, text=True, timeout=120
    )


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("pristine")
    build_sessions(root / "sessions.db")
    build_cold(root / "cold.db", events=100)
    (root / "settings.toml").write_text("[agent]\nmax_steps = 4\n")
    return root


@pytest.fixture
def data(pristine: Path, tmp_path: Path) -> Path:
    out = tmp_path / "data"
    shutil.copytree(pristine, out)
    (out / "logs").mkdir()
    (out / "logs" / "broken.json").write_text("{not json")  # logs are not checked
    (out / "plugins" / "rss").mkdir(parents=True)
    (out / "plugins" / "rss" / "feeds.json").write_text('{"feeds": []}')
    (out / "plugins" / "files" / "workspace").mkdir(parents=True)
    (out / "plugins" / "files" / "workspace" / "user.json").write_text("{user's own file")  # nor workspaces
    return out


def test_healthy_directory(data: Path) -> None:
    result = doctor("--data", str(data))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "4 ok"
    assert "logs" not in result.stdout and "workspace" not in result.stdout


def test_check_reports_every_file(data: Path) -> None:
    scribble(data / "sessions.db")
    break_text(data / "cold.db", "MARK-cold-3 ")
    (data / "settings.toml").write_bytes(b'[agent]\nmax_steps = 4\nsystem_prompt = "caf\xe9"\n')
    (data / "plugins" / "rss" / "feeds.json").write_text('{"feeds": [')
    before = (data / "sessions.db").read_bytes()
    result = doctor("--data", str(data))
    assert result.returncode == 1
    assert "Traceback" not in result.stderr + result.stdout
    lines = {line.split()[0]: line for line in result.stdout.splitlines() if line.startswith(str(data))}
    assert "damaged   SQLite's integrity check fails" in lines[str(data / "sessions.db")]
    assert "warning   1 row(s) do not decode" in lines[str(data / "cold.db")]
    assert "damaged   line 3: not UTF-8 text" in lines[str(data / "settings.toml")]
    assert "damaged   line 1: not valid JSON" in lines[str(data / "plugins" / "rss" / "feeds.json")]
    assert f"fix: `hologram doctor --repair --data {data}`" in result.stdout
    assert (data / "sessions.db").read_bytes() == before, "a check never writes"
    report = json.loads(doctor("--data", str(data), "--json").stdout)
    states = {Path(f["path"]).name: f["state"] for f in report["files"]}
    assert states == {
        "sessions.db": "damaged",
        "cold.db": "warning",
        "settings.toml": "damaged",
        "feeds.json": "damaged",
    }
    assert report["ok"] is False


def test_repair_recovers_keeps_the_damaged_files_and_reports_rows(data: Path) -> None:
    truncate_half(data / "sessions.db")
    smash_header(data / "cold.db")
    damaged = {name: (data / name).read_bytes() for name in ("sessions.db", "cold.db")}
    result = doctor("--repair", "--data", str(data))
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert re.search(r"/sessions\.db +repaired +the file .*\(truncated\)", out)
    assert out.splitlines()[-1] == "2 ok, 2 repaired"
    assert "    events: " in out and " of 1800 rows recovered (" in out
    assert "    cold_events: 100 of 100 rows recovered (0 lost)" in out
    assert "the header was damaged and has been rebuilt (page size 4096 probed)" in out
    for name, content in damaged.items():
        kept = list(data.glob(f"{name}.damaged-*"))
        assert len(kept) == 1 and kept[0].read_bytes() == content, name
        assert (data / name).stat().st_mode & 0o777 == 0o600
    again = doctor("--data", str(data))
    assert again.returncode == 0 and again.stdout.splitlines()[-1] == "4 ok", again.stdout
    report = json.loads(doctor("--repair", "--data", str(data), "--json").stdout)
    assert report["ok"] is True and all(f["state"] == "ok" for f in report["files"])


def test_repair_json_summary(data: Path) -> None:
    truncate_half(data / "sessions.db")
    report = json.loads(doctor("--repair", "--json", "--data", str(data)).stdout)
    entry = next(f for f in report["files"] if f["path"].endswith("sessions.db"))
    assert entry["state"] == "repaired"
    events = entry["repair"]["tables"]["events"]
    assert events["expected"] == 1800 and events["recovered"] + events["lost"] == 1800
    assert Path(entry["repair"]["kept"]).name.startswith("sessions.db.damaged-")


@pytest.fixture
def listening(data: Path) -> Iterator[Path]:
    """Something answering on the control socket, as a running kernel does."""
    path = data / "hologram.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(str(path))
        server.listen(8)
        yield path


def test_repair_refuses_while_a_kernel_answers(data: Path, listening: Path) -> None:
    truncate_half(data / "sessions.db")
    before = (data / "sessions.db").read_bytes()
    result = doctor("--repair", "--data", str(data))
    assert result.returncode == 1
    assert f"{listening}: error: a kernel is running with this data directory" in result.stderr
    assert "hint: stop it (Ctrl-C in its terminal)" in result.stderr
    assert "Traceback" not in result.stderr
    assert (data / "sessions.db").read_bytes() == before and not list(data.glob("*.damaged-*"))


def test_no_data_directory(tmp_path: Path) -> None:
    result = doctor("--data", str(tmp_path / "nope"))
    assert result.returncode == 1 and "error: no data directory here" in result.stderr
