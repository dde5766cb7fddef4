"""Guard: pydantic stays off the runtime path — the kernel (`hologram up` of the default graph, then a turn)
and `hologram ask` never import it, and no process of the kernel's tree (zygote, plugins) maps its core.

Why: importing pydantic and building the settings, lock and manifest models cost the kernel ~10 MB of memory
and ~50-80 ms of CPU before its first answer, and every `hologram ask` its import (docs/performance.md,
"pydantic off the runtime path"). They are dataclasses validated by `hologram._fields` now; an eager import
anywhere on these paths would bring the cost back unnoticed.

How: the kernel runs under ``python -X importtime`` (what it prints goes to a file), a turn through
``python -X importtime -m hologram ask`` gets the strict mock's answer, then the kernel stops: every module
either process imported is in those logs. The test first checks the logs reached the paths it speaks about —
the kernel's holds the settings, the lock, the manifest model (the lock's staleness check) and the agent;
ask's holds the turn client — then that no ``pydantic``/``pydantic_core`` module is among them, and that no
process of the kernel's tree has pydantic's compiled core mapped (/proc/PID/maps).

Mutation checks (done): ``import pydantic`` at the top of hologram/settings.py turns the kernel's assertion red
(``pydantic``, ``pydantic.version``, …); at the top of hologram/client.py, the ask assertion; ``from pydantic
import BaseModel`` at the top of hologram/sdk/__init__.py, the tree's (every plugin maps
``_pydantic_core…so``).
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
from pathlib import Path

import pytest

from bench.proctree import tree
from hologram.kernel.control import call
from mock_llm import MockLLM

from .kernel import GuardKernel

pytestmark = pytest.mark.slow

ANSWER = "Paris, as far as this mock knows."
KERNEL_PATH = {"hologram.settings", "hologram.lock", "hologram.manifest.model", "hologram.agent.turn"}
ASK_PATH = {"hologram.cli.ask_cmd", "hologram.client", "hologram.turn_api"}


def modules(importtime: str) -> set[str]:
    """The modules an ``-X importtime`` log names (other lines — the kernel's own output — are skipped)."""
    names = set()
    for line in importtime.splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            if name != "imported package":
                names.add(name)
    return names


def pydantic_in(names: set[str]) -> list[str]:
    return sorted(n for n in names if n.split(".")[0] in ("pydantic", "pydantic_core"))


def mapped_pydantic(pid: int) -> list[str]:
    with contextlib.suppress(OSError):  # gone meanwhile
        maps = Path(f"/proc/{pid}/maps").read_text()
        return sorted({line.split()[-1] for line in maps.splitlines() if "pydantic" in line})
    return []


def test_the_kernel_and_ask_never_import_pydantic(tmp_path: Path, mock: MockLLM) -> None:
    kernel = GuardKernel(tmp_path, mock)
    log = tmp_path / "kernel-importtime.txt"
    kernel.start(python_options=("-X", "importtime"), output=log)
    try:
        mock.reset()
        mock.script([{"content": ANSWER}])
        ask = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "hologram", "ask", "--data", str(kernel.data), "hello"],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=120,  # a failure bound, not an expected duration
        )
        assert ask.returncode == 0 and ANSWER in ask.stdout, ask
        plugins = [p for p in call(kernel.data, "status")["plugins"] if p["state"] == "ready"]
        processes = tree(kernel.pid)
        assert len(plugins) >= 8 and len(processes) >= len(plugins), (plugins, processes)
        mapped = {pid: found for pid in processes if (found := mapped_pydantic(pid))}
    finally:
        kernel.stop()

    in_kernel = modules(log.read_text(encoding="utf-8"))
    in_ask = modules(ask.stderr)
    assert in_kernel >= KERNEL_PATH, f"the kernel's log misses {sorted(KERNEL_PATH - in_kernel)}"
    assert in_ask >= ASK_PATH, f"ask's log misses {sorted(ASK_PATH - in_ask)}"
    assert not pydantic_in(in_kernel), (
        f"`hologram up` imported {pydantic_in(in_kernel)}; the first importer is in {log} (python -X importtime)"
    )
    assert not pydantic_in(in_ask), f"`hologram ask` imported {pydantic_in(in_ask)}"
    assert not mapped, f"processes of the kernel's tree map pydantic: {mapped}"
