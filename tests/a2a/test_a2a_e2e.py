"""A2A through `hologram up`, with the official ``a2a-sdk`` client (1.0) and raw JSON-RPC (0.3), strict mock.

Mutation checks: see each test's docstring.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import httpx
import pytest
from a2a.types import a2a_pb2 as pb

from mock_llm import MockLLM
from tests.a2a.kernel import A2AKernel, answer_text, collect, final_task, states, streamed_text, text_request


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory, mock: MockLLM) -> Iterator[A2AKernel]:
    k = A2AKernel(tmp_path_factory.mktemp("a2a"), mock)
    k.start()
    yield k
    k.stop()


def test_send_answers_with_a_completed_task(kernel: A2AKernel, mock: MockLLM) -> None:
    mock.reset()
    mock.script([{"reasoning_content": "think", "content": "Hello from Hologram"}])

    async def run() -> list[pb.StreamResponse]:
        async with kernel.a2a(streaming=False) as client:
            return await collect(client, text_request("hi there"))

    events = asyncio.run(run())
    task = final_task(events)
    assert task is not None and pb.TaskState.Name(task.status.state) == "TASK_STATE_COMPLETED"
    assert answer_text(task) == "Hello from Hologram"
    assert [m.role for m in task.history] == [pb.ROLE_USER, pb.ROLE_AGENT]
    session, turn = task.id.split("/")
    assert task.context_id == session
    stored = kernel.events(session)
    assert [e["kind"] for e in stored["events"]][:2] == ["input", "response"]
    assert mock.rejections == []


def test_stream_sends_the_answer_as_it_is_written(kernel: A2AKernel, mock: MockLLM) -> None:
    mock.reset()
    mock.script([{"reasoning_content": "think", "content": "streamed answer here"}])

    async def run() -> list[pb.StreamResponse]:
        async with kernel.a2a() as client:
            return await collect(client, text_request("stream please"))

    events = asyncio.run(run())
    assert states(events)[0] in ("TASK_STATE_WORKING", "TASK_STATE_SUBMITTED")
    assert states(events)[-1] == "TASK_STATE_COMPLETED"
    assert streamed_text(events) == "streamed answer here"
    assert sum(1 for e in events if e.HasField("artifact_update")) > 2  # in pieces, as the mock streamed it
