"""`hologram doctor` and the memory graph (issue 39 item 8): the graph is checked by opening it in a child
process (a damaged one segfaults the library, which must not end the doctor), and ``--repair`` sets a
damaged one aside and gives its events back to their sessions' history, where they cool again.

Real SessionStore, ColdStore, Kùzu database and `hologram doctor` subprocesses; cooling by the rules.

Mutation checks (done, file copied to /tmp and back): `set_graph_aside` not clearing ``l3_events`` turns
``test_repair_sets_the_graph_aside_and_its_events_cool_again`` red (the cooled events stay out of the
history with no graph holding them).
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from hologram.memory.graph import open_graph_store

from .test_graph_worker import damage, fill
from .test_l3_membership import cooled, ids_of, open_memory

pytestmark = pytest.mark.slow


def doctor(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hologram", "doctor", *args], capture_output=True, text=True, timeout=300
    )


def graph_report(data: Path, *extra: str) -> tuple[int, dict[str, object]]:
    done = doctor("--data", str(data), "--json", *extra)
    [report] = [f for f in json.loads(done.stdout)["files"] if f["kind"] == "graph"]
    return done.returncode, report


def test_a_healthy_graph_is_ok_with_its_counts(tmp_path: Path) -> None:
    fill(tmp_path / "graph.kz", 3)
    code, report = graph_report(tmp_path)
    assert code == 0 and report["state"] == "ok", report
    assert report["notes"] == ["6 triples, 3 blocks, 4 entities (opened read-only in a child process)"]


def test_a_graph_in_use_is_a_warning(tmp_path: Path) -> None:
    fill(tmp_path / "graph.kz", 1)
    with open_graph_store(tmp_path / "graph.kz"):
        code, report = graph_report(tmp_path)
    assert code == 0 and report["state"] == "warning" and "in use by another process" in str(report["reason"])


def test_a_damaged_graph_is_reported_not_crashed_on(tmp_path: Path) -> None:
    fill(tmp_path / "graph.kz")
    assert damage(tmp_path / "graph.kz", 3) == -signal.SIGSEGV
    done = doctor("--data", str(tmp_path))
    assert done.returncode == 1, done.stderr
    line = next(x for x in done.stdout.splitlines() if "graph.kz" in x)
    assert "damaged" in line and "opening it crashed the graph database" in line and "SIGSEGV" in line
    assert f"fix: `hologram doctor --repair --data {tmp_path}`" in done.stdout


def test_repair_sets_the_graph_aside_and_its_events_cool_again(tmp_path: Path) -> None:
    async def cool() -> list[str]:
        k = open_memory(tmp_path)
        moved = await cooled(k)
        await k.close()
        return moved

    moved = asyncio.run(cool())
    damage(tmp_path / "graph.kz", 4)
    code, report = graph_report(tmp_path, "--repair")
    assert code == 0 and report["state"] == "repaired", report
    assert report["repair"] == {"kept": report["repair"]["kept"], "returned": len(moved)}  # type: ignore[index]
    kept = Path(str(report["repair"]["kept"]))  # type: ignore[index]
    assert kept.exists() and kept.name.startswith("graph.kz.damaged-") and not (tmp_path / "graph.kz").exists()

    async def after() -> None:
        k = open_memory(tmp_path)
        assert k.mem.l3_ids("s1") == [], "nothing is recorded as held by a graph that is gone"
        l1 = {ids_of(k.mem, "s1")[e.seq] for e in k.mem.l1_events("s1") if e.seq in ids_of(k.mem, "s1")}
        assert set(moved) <= l1, "the events the graph held are back in the history"
        again = await cooled(k)  # pruned and cooled into a new graph, like new ones
        assert set(moved) <= set(again) and (tmp_path / "graph.kz").exists()
        assert k.graph.status()["l3_problem"] is None and (k.graph.counts() or None) is not None
        await k.close()

    asyncio.run(after())
