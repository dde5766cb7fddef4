"""Bounded work per event in memory (issue 42 item 1), through a real `hologram up`: a tool returns 5 MB of
text in a real turn; the kernel, under a watchdog that kills it past `GUARD_MB` over its idle RSS (so a
regression fails the test instead of taking the machine down), answers, indexes the result's first 50,000
characters — ~211 passages, 64 of them embedded — says so once in its log, and `hologram memory search` marks
the hit as searchable only in part. Before, the result was cut into 22,094 passages, tokenised on the event
loop for 8 s and embedded for 390 s of CPU.

Mutation checked: `SessionIndex.add` splitting the whole text (no `indexed`) — the log line counts 22,342
passages (each tokenised on the event loop); the embedding cap not applied (`embed=True` for every passage) —
216 texts embedded for the event, not 64 and a few.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest

from hologram.memory.text.bounds import MAX_EMBEDDED_PASSAGES, MAX_INDEX_CHARS
from mock_llm import MockLLM
from tests.e2e.test_approvals_e2e import ApprovalKernel
from tests.httpapi.test_input_limits import Watchdog, rss_mb
from tests.kit.wait import wait_until

pytestmark = pytest.mark.slow

SIZE = 5 * 1024 * 1024
GUARD_MB = 800  # the watchdog's bound over idle RSS (measured: +160 MB for this turn, the 5 MB text's copies)
UNIT = "Revenue grew this quarter in the northern region. 季度收入增长。 The gazebo is painted in May. "

MANIFEST = """\
[plugin]
name = "bulk"
version = "0.1.0"
description = "returns a long document"
run = { module = "bulk", env = { PYTHONPATH = "{path}" } }

[[tools]]
name = "bulk_read"
description = "read the long document"
parallel_safe = true
parameters = { type = "object", properties = { size = { type = "integer" } }, required = ["size"] }
"""

SOURCE = f"""\
from hologram.sdk import Plugin

plugin = Plugin("bulk")
UNIT = {UNIT!r}


@plugin.tool("bulk_read")
def bulk_read(size: int) -> str:
    return (UNIT * (size // len(UNIT) + 1))[:size]


if __name__ == "__main__":
    plugin.run()
"""


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory, mock: MockLLM) -> Iterator[ApprovalKernel]:
    k = ApprovalKernel(tmp_path_factory.mktemp("bounded"), mock, plugins={"bulk": (MANIFEST, SOURCE)})
    k.start()
    wait_until(lambda: k.status()["memory"], accept=lambda m: m["embedder_ready"] and m["embedder"], timeout=120,
               what="the embedding model loaded")  # fmt: skip
    assert k.process is not None
    dog = Watchdog(k.process.pid, rss_mb(k.process.pid) + GUARD_MB)
    dog.start()
    yield k
    dog.stop.set()
    k.stop()
    assert not dog.fired, f"the kernel passed +{GUARD_MB} MB and was killed"


def test_a_tool_result_of_megabytes_costs_memory_a_bounded_share(kernel: ApprovalKernel, mock: MockLLM) -> None:
    mock.reset()
    call = [{"id": "b1", "name": "bulk_read", "arguments": json.dumps({"size": SIZE})}]
    mock.script(
        [{"reasoning_content": "read it", "tool_calls": call}, {"reasoning_content": "ok", "content": "Read it all."}],
        default={"reasoning_content": "ok", "content": "Fine."},
    )
    before = kernel.status()["memory"]["texts_embedded"]
    answer = kernel.ask("read the long document", "--session", "bulk")
    assert answer.returncode == 0 and "Read it all." in answer.stdout, answer
    assert len(json.dumps(mock.requests[1].body)) > SIZE  # the model was shown the whole result
    memory = wait_until(lambda: kernel.status()["memory"], accept=lambda m: m["indexing"] == 0, timeout=120,
                        what="the session's passages embedded")  # fmt: skip
    embedded = memory["texts_embedded"] - before  # the tool result's passages, the input's and the query's
    assert MAX_EMBEDDED_PASSAGES <= embedded <= MAX_EMBEDDED_PASSAGES + 8, embedded

    logs = "\n".join(p.read_text(errors="replace") for p in (kernel.data / "logs").iterdir())
    said = [line for line in logs.splitlines() if f"is {SIZE} characters" in line]
    assert len(said) == 1, said  # once for the event
    passages = int(re.search(r"\((\d+) passages, (\d+) with a vector\)", said[0]).group(1))  # type: ignore[union-attr]
    assert f"the first {MAX_INDEX_CHARS} are searchable" in said[0] and passages < 300, said[0]

    found = kernel.hologram("memory", "search", "gazebo painted", "--data", str(kernel.data), "--json", check=True)
    hits = [h for h in json.loads(found.stdout)["hits"] if h.get("session") == "bulk" and h["kind"] == "tool_result"]
    assert hits and hits[0]["chars"] == SIZE and hits[0]["indexed_chars"] == MAX_INDEX_CHARS, hits
    shown = kernel.hologram("memory", "search", "gazebo painted", "--data", str(kernel.data), check=True).stdout
    assert f"only its first {MAX_INDEX_CHARS:,} of {SIZE:,} characters are searchable" in shown, shown
