"""A damaged memory graph under a real `hologram up` (issue 39 item 8, its Done-means).

``graph.kz`` holds a real graph written as cooling writes it, then gets 4 KB of random bytes in its middle —
which segfaulted the kernel a second after start, before the graph had a process of its own. Now:
`hologram up` stays up, turns answer, `hologram status` names the graph and the fix; `hologram doctor` finds
it damaged by opening it in a child process and `--repair` sets it aside; after a restart a fact told and
cooled lands in a new graph and comes back in a new session's request — and the kernel never imported the
database module, whose code ran in the graph's process only.

Mutation checks (done, file copied to /tmp and back): opening the store in process again
(``GraphMemory._open_store`` back to ``open_graph_store``) turns this red — the kernel dies of SIGSEGV at
start (``wait_for_graph``: "hologram up exited"); without the doctor's graph check the repair leaves
``graph.kz`` in place and the restarted kernel stops L3 again.
"""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from mock_llm import MockLLM
from tests.cli.memory_seed import seed, seed_graph
from tests.kit.wait import wait_until
from tests.memory.test_graph_worker import damage

from .kernel import E2EKernel, session_of
from .test_l3_e2e import FACT, TRIPLE, system_notes
from .test_memory_e2e import TOPICS, filler

pytestmark = pytest.mark.slow


@pytest.fixture
def damaged(tmp_path: Path) -> Iterator[tuple[E2EKernel, MockLLM]]:
    with MockLLM("deepseek") as mock:
        kernel = E2EKernel(tmp_path, [mock])
        settings = kernel.data / "settings.toml"
        text = settings.read_text().replace("thinking = true\n", "thinking = true\ncontext_window = 1800\n")
        text += '\n[memory.cooling]\nidle_hours = 0\ninterval_hours = 0.0005\nextractor = "rules"\n'
        settings.write_text(text)
        ids = seed(kernel.data)
        seed_graph(kernel.data, ids["en"])
        assert damage(kernel.data / "graph.kz", 7) == -signal.SIGSEGV  # what killed the kernel before
        try:
            yield kernel, mock
        finally:
            kernel.stop()


def test_a_damaged_graph_leaves_the_kernel_up_and_doctor_sets_it_aside(damaged: tuple[E2EKernel, MockLLM]) -> None:
    kernel, mock = damaged
    graph = kernel.data / "graph.kz"
    kernel.start()  # waits for every plugin: the kernel did not die at start
    memory = wait_until(
        lambda: kernel.status()["memory"], accept=lambda m: m.get("l3_state") == "stopped", timeout=60,
        what="the cooling job's open of the damaged graph to stop after two crashes",
    )  # fmt: skip
    assert memory["l3_crashes"] == 2 and memory["l3_module_in_kernel"] is False, memory
    assert str(graph) in memory["l3_problem"] and "SIGSEGV" in memory["l3_problem"], memory
    assert f"hologram doctor --repair --data {kernel.data}" in memory["l3_problem"], memory
    shown = kernel.hologram("status", "--data", str(kernel.data))
    assert "memory graph (L3): unavailable:" in shown.stdout and "hologram doctor --repair" in shown.stdout

    mock.script([{"reasoning_content": "hi", "content": "Hello, still here."}])
    asked = kernel.ask("Are you there?")
    assert asked.returncode == 0 and "Hello, still here." in asked.stdout, asked.stderr
    assert kernel.process is not None and kernel.process.poll() is None
    stats = kernel.hologram("memory", "stats", "--json", "--data", str(kernel.data))
    assert stats.returncode == 0 and json.loads(stats.stdout)["l1"] >= 2, stats.stderr  # L1/L2 answer
    kernel.stop()

    checked = kernel.hologram("doctor", "--data", str(kernel.data), "--json")
    assert checked.returncode == 1, checked.stdout
    [report] = [f for f in json.loads(checked.stdout)["files"] if f["kind"] == "graph"]
    assert report["state"] == "damaged" and "SIGSEGV" in report["reason"], report
    repaired = kernel.hologram("doctor", "--repair", "--data", str(kernel.data))
    assert repaired.returncode == 0 and "set aside as graph.kz.damaged-" in repaired.stdout, repaired.stdout
    assert not graph.exists() and len(list(kernel.data.glob("graph.kz.damaged-*"))) == 1

    kernel.start()
    mock.reset()
    mock.script([{"reasoning_content": "noted", "content": "I will remember it."}])
    first = kernel.ask(FACT)
    assert first.returncode == 0, first.stderr
    session = session_of(first)
    for index in range(len(TOPICS)):
        mock.script([{"reasoning_content": "ok", "content": f"Thanks for topic {index}."}])
        assert kernel.ask(filler(index), "--session", session).returncode == 0
    memory = wait_until(
        lambda: kernel.status()["memory"], accept=lambda m: (m.get("l3_triples") or 0) >= 1 and m.get("l2_events") == 0,
        timeout=60, what="the session (the fact among its events) to cool into a new graph",
    )  # fmt: skip
    assert memory["l3_state"] == "running" and memory["l3_problem"] is None and graph.exists(), memory
    shown = kernel.hologram("status", "--data", str(kernel.data)).stdout
    assert f"blocks (in its own process, pid {memory['l3_pid']})" in shown, shown
    mock.reset()
    mock.script([{"reasoning_content": "from memory", "content": "She likes Charlotte's Web."}])
    other = kernel.ask("Tell me what you know about Melanie.")
    assert other.returncode == 0 and session_of(other) != session, other.stderr
    [request] = mock.requests
    assert TRIPLE in system_notes(request.body), "the rebuilt L3 reaches a new session's request"
    assert kernel.status()["memory"]["l3_module_in_kernel"] is False, "recall from L3 without kuzu in the kernel"
