"""A second `hologram up` on a data directory a kernel runs from stops with one line before it opens anything:
no log file of its own, no database opened, the first kernel untouched (issue 42: it opened the databases
first and refused only at the control socket)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from mock_llm import MockLLM

from .kernel import HOLOGRAM, E2EKernel, env


def _opened_by(pid: int, data: Path) -> list[str]:
    """The files under ``data`` process ``pid`` has open (its /proc fds)."""
    found = []
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = fd.readlink()
        except OSError:
            continue
        if target.is_relative_to(data):
            found.append(str(target.relative_to(data)))
    return sorted(found)


def test_a_second_up_refuses_before_opening_anything(tmp_path: Path, mock: MockLLM) -> None:
    k = E2EKernel(tmp_path, [mock])
    k.start()
    try:
        assert k.process is not None
        held = _opened_by(k.process.pid, k.data.resolve())
        assert "kernel.pid" in held and "sessions.db" in held, held  # the first kernel: the lock and the store
        logs = sorted((k.data / "logs").iterdir())
        second = subprocess.run(
            [*HOLOGRAM, "up", "--port", "0", "--lock", str(k.lock), "--data", str(k.data)],
            capture_output=True, text=True, env=env(), cwd=k.root, timeout=60,
        )  # fmt: skip
        assert second.returncode != 0
        lines = (second.stdout + second.stderr).strip().splitlines()
        assert f"a kernel is already running with this data directory (pid {k.process.pid})" in lines[0], lines
        assert "Traceback" not in second.stderr and len(lines) <= 3, lines
        assert sorted((k.data / "logs").iterdir()) == logs, "the second up made a log file"
        assert "Hologram kernel starting" not in second.stdout
        assert k.status()["plugins"], "the first kernel stopped serving"
    finally:
        k.stop()
    # the lock goes with its kernel: the next up starts
    k.start()
    k.stop()
