"""Guard: pydantic is where it pays and nowhere else (docs/guards.md, "pydantic shared through the zygote").

The contracts — settings, manifest, lock, the turn API's params, a plugin's config — are pydantic models, so the
kernel imports it; `hologram ask` (a process per turn) does not: it sends plain dicts of the params' fields and
reads events as dataclasses. What must not happen either is every plugin paying for its own copy: the zygote
preloads pydantic, so a forked plugin finds it imported and shares its pages (the compiled core's relocated
data, the Python objects of its modules) with the zygote and every sibling. A plugin that imported pydantic
after the fork — the zygote's preload lost it, or a plugin ran outside the zygote — writes the core's
relocation pages itself: they show as private dirty memory of that process in /proc/PID/smaps.

How: `hologram up` of the default graph, one turn through `python -X importtime -m hologram ask` that the strict
mock answers (so the paths that validate ran; ask's log names no pydantic module), then every process of the kernel's tree is read: the kernel and the zygote map
pydantic's core; each plugin maps it too (the SDK validates its config with it), and the core's pages are shared
in it, not private. The test first checks it reached those paths: ask got the answer, at least 8 plugins are
ready, each maps the core.

Mutation checks (done): `from hologram.api import params` in hologram/clients/control.py turns ask's assertion
red; dropping the pydantic modules from the zygote's PRELOAD turns the zygote's assertion
red; with that assertion disabled and `import pydantic.main` at the start of `Plugin.run` (each plugin importing
it after the fork), the plugins' assertion is red: 212 kB private dirty in each of the 8 plugins' core mappings.
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
PRIVATE_LIMIT_KB = 64  # a few pages a process may touch; an own copy of the core's relocations is ~210 kB


def core_mapping(pid: int) -> dict[str, int] | None:
    """Summed smaps counters (kB) of the mappings of pydantic's compiled core in `pid`, or None if unmapped."""
    with contextlib.suppress(OSError):  # gone meanwhile
        text = Path(f"/proc/{pid}/smaps").read_text()
        totals: dict[str, int] = {}
        inside = False
        for line in text.splitlines():
            head = line.split()
            if head and "-" in head[0] and len(head) >= 5:  # a mapping's header line
                inside = "_pydantic_core" in line
            elif inside and line.endswith(" kB"):
                key, value = line.split(":", 1)
                totals[key] = totals.get(key, 0) + int(value.split()[0])
        return totals or None
    return None


def test_pydantic_is_shared_through_the_zygote(tmp_path: Path, mock: MockLLM) -> None:
    kernel = GuardKernel(tmp_path, mock)
    kernel.start()
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
        status = call(kernel.data, "status")
        plugins = {p["name"]: p["pid"] for p in status["plugins"] if p["state"] == "ready" and p.get("pid")}
        # the default graph's plugins that start at up (the built-ins with [start] lazy wait for a call)
        assert len(plugins) >= 6, status["plugins"]
        processes = tree(kernel.pid)
        zygotes = [pid for pid in processes if pid not in plugins.values() and pid != kernel.pid]
        mappings = {name: core_mapping(pid) for name, pid in plugins.items()}
        in_kernel = core_mapping(kernel.pid)
        in_zygote = [m for pid in zygotes if (m := core_mapping(pid))]
    finally:
        kernel.stop()

    in_ask = {line.rsplit("|", 1)[1].strip() for line in ask.stderr.splitlines() if line.startswith("import time:")}
    assert {"hologram.clients.control", "hologram.api.turn"} <= in_ask, "ask's -X importtime log misses its client"
    assert not {n for n in in_ask if n.split(".")[0] in ("pydantic", "pydantic_core")}, (
        "`hologram ask` imported pydantic"
    )
    assert in_kernel, "the kernel does not map pydantic's core: did the contracts stop being pydantic models?"
    assert in_zygote, f"no zygote ({zygotes}) maps pydantic's core: its preload lost pydantic"
    missing = sorted(name for name, m in mappings.items() if not m)
    assert not missing, f"plugins that do not map pydantic's core (their config is not validated?): {missing}"
    private = {
        name: m.get("Private_Dirty", 0)
        for name, m in mappings.items()
        if m and m.get("Private_Dirty", 0) > PRIVATE_LIMIT_KB
    }
    assert not private, f"plugins holding their own copy of pydantic's core (private dirty kB): {private}"
