"""Memory L3 end to end (issue 15): a real `hologram up` with a small context window, cooling forced
(``[memory.cooling] idle_hours = 0``, a run every ~2 s, the deterministic extractor), the strict mock as the
vendor, `hologram ask` as the client. A fact told in one turn is pruned to L2, cooled into the memory graph
(L3) by the kernel's own job, and then a later request — in the same session and in a new one — carries the
fact as a triple with its source, in the system note, while the event itself never returns to the history.

Mutation checks (done, file copied to /tmp and back): not wiring the graph in agent/attach.py
(``memory.graph = graph`` removed) turns this red (no triple in the request); ``_in_l3`` all False in
SessionMemory turns it red (the cooled event is back in the history, and the next prune fails to put it).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mock_llm import MockLLM
from tests.kit.wait import wait_until

from .kernel import E2EKernel, session_of
from .test_memory_e2e import TOPICS, filler

pytestmark = pytest.mark.slow

FACT = "Melanie: My favorite book is Charlotte's Web, I read it every summer."
TRIPLE = "Melanie | favorite book | Charlotte's Web"


@pytest.fixture
def cooling(tmp_path: Path) -> Iterator[tuple[E2EKernel, MockLLM]]:
    with MockLLM("deepseek") as mock:
        kernel = E2EKernel(tmp_path, [mock])
        settings = kernel.data / "settings.toml"
        text = settings.read_text().replace("thinking = true\n", "thinking = true\ncontext_window = 1800\n")
        text += '\n[memory.cooling]\nidle_hours = 0\ninterval_hours = 0.0005\nextractor = "rules"\n'
        settings.write_text(text)
        kernel.start()
        try:
            yield kernel, mock
        finally:
            kernel.stop()


def system_notes(body: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content")) for m in body["messages"] if m.get("role") == "system")


def history(body: dict[str, Any]) -> str:
    return json.dumps([m for m in body["messages"] if m.get("role") != "system"], ensure_ascii=False)


def test_a_cooled_fact_comes_back_from_l3_with_its_source(cooling: tuple[E2EKernel, MockLLM]) -> None:
    kernel, mock = cooling
    assert kernel.status()["memory"]["l3_triples"] is None, "no graph before anything cooled"
    mock.script([{"reasoning_content": "noted", "content": "I will remember it."}])
    first = kernel.ask(FACT)
    assert first.returncode == 0, first.stderr
    session = session_of(first)
    for index in range(len(TOPICS)):
        mock.script([{"reasoning_content": "ok", "content": f"Thanks for topic {index}."}])
        result = kernel.ask(filler(index), "--session", session)
        assert result.returncode == 0, result.stderr
    memory = wait_until(
        lambda: kernel.status()["memory"], accept=lambda m: (m.get("l3_triples") or 0) >= 1, timeout=60,
        what="the kernel's cooling job to move the pruned fact into L3",
    )  # fmt: skip
    assert memory["l3_blocks"] >= 1 and memory["l3_problem"] is None
    shown = kernel.hologram("status", "--data", str(kernel.data))
    assert f"memory graph (L3): {memory['l3_triples']:,} triples" in shown.stdout, shown.stdout

    mock.reset()
    mock.script([{"reasoning_content": "from memory", "content": "Charlotte's Web."}])
    asked = kernel.ask("Which book does Melanie love to read?", "--session", session)
    assert asked.returncode == 0, asked.stderr
    [request] = mock.requests
    notes = system_notes(request.body)
    assert TRIPLE in notes and "said: “Melanie: My favorite book is Charlotte's Web" in notes, notes
    assert "Charlotte's Web, I read it every summer" not in history(request.body), "L3 holds it, not the history"

    mock.reset()
    mock.script([{"reasoning_content": "from memory", "content": "She likes Charlotte's Web."}])
    other = kernel.ask("Tell me what you know about Melanie.")
    assert other.returncode == 0, other.stderr
    assert session_of(other) != session
    [request] = mock.requests
    notes = system_notes(request.body)
    assert TRIPLE in notes and f"session {session}" in notes, "across sessions, by the name, with its source"
    assert kernel.status()["memory"]["l3_module_in_kernel"] is False, "L3 used, the database in its own process"
