"""L3 fills with any model (issue 39 item 5, its Done-means): a real `hologram up` with the default extractor
(``auto``) and the strict mock answering the extraction prompt with prose, never JSON — as small local models
do. `hologram memory distill` moves the events into L3 anyway, read by the rules, reports the model's failures
once grouped by reason, `hologram status` shows the extractor and the last run's counts, and a new session's
request carries the fact.

Mutation checks (done, file copied to /tmp and back): ``GraphMemory.extractor`` returning the bare
``LLMExtractor`` for ``auto`` turns this red (moved 0, 19-style failures, no triple in the new session).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from mock_llm import MockLLM

from .kernel import E2EKernel, session_of
from .test_l3_e2e import FACT, TRIPLE, system_notes
from .test_memory_e2e import TOPICS, filler

pytestmark = pytest.mark.slow

PROSE = {"content": "Sure! Here is what I found: Melanie's favourite book is Charlotte's Web."}


@pytest.fixture
def kernel(tmp_path: Path) -> Iterator[tuple[E2EKernel, MockLLM]]:
    with MockLLM("deepseek") as mock:
        kernel = E2EKernel(tmp_path, [mock])
        settings = kernel.data / "settings.toml"
        text = settings.read_text().replace("thinking = true\n", "thinking = true\ncontext_window = 1800\n")
        settings.write_text(text)  # [memory.cooling] as installed: extractor "auto", idle 72 h
        kernel.start()
        try:
            yield kernel, mock
        finally:
            kernel.stop()


def test_a_model_that_cannot_answer_json_still_fills_l3(kernel: tuple[E2EKernel, MockLLM]) -> None:
    k, mock = kernel
    mock.script([{"reasoning_content": "noted", "content": "I will remember it."}])
    first = k.ask(FACT)
    assert first.returncode == 0, first.stderr
    session = session_of(first)
    for index in range(len(TOPICS)):
        mock.script([{"reasoning_content": "ok", "content": f"Thanks for topic {index}."}])
        assert k.ask(filler(index), "--session", session).returncode == 0
    assert k.status()["memory"]["l2_events"] >= 1, "the fact was pruned to L2"

    mock.reset()
    mock.script([], default=PROSE)  # every extraction request gets prose
    done = k.hologram("memory", "distill", "--idle-hours", "0", "--json", "--data", str(k.data), timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    extraction = [r for r in mock.requests if r.body.get("response_format") == {"type": "json_object"}]
    assert extraction and not mock.rejections, "the model was asked, as the strict vendor accepts"
    assert report["moved"] >= 1 and report["failed"] == 0 and report["triples"] >= 1, report
    assert report["extractor"] == "auto" and report["fallbacks"] == {"the answer is not JSON": len(extraction)}
    memory = k.status()["memory"]
    assert memory["l3_triples"] >= 1 and memory["l3_module_in_kernel"] is False, memory
    last = memory["cooling"]["last"]
    assert memory["cooling"]["extractor"] == "auto" and last["moved"] == report["moved"], memory["cooling"]
    assert last["fallbacks"] == report["fallbacks"]
    shown = k.hologram("status", "--data", str(k.data)).stdout
    assert "cooling: extractor auto (the model; the rules for what it cannot read); last run" in shown, shown
    assert f"{len(extraction)} read by the rules because the model could not" in shown, shown

    mock.reset()
    mock.script([{"reasoning_content": "from memory", "content": "She likes Charlotte's Web."}])
    other = k.ask("Tell me what you know about Melanie.")
    assert other.returncode == 0 and session_of(other) != session, other.stderr
    [request] = mock.requests
    assert TRIPLE in system_notes(request.body), "the fact the rules read reaches a new session's request"
