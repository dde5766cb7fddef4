"""The original's A2A incident, as a test: a long conversation through A2A in which the model makes parallel
tool calls, one client disconnects mid-turn and another cancels a task during a tool call — against the strict
mock, which rejects any request whose tool messages are not paired with their assistant call or whose
reasoning is not passed back. Every request must pass, and the session's history must be valid when read.

Mutation check (run): the kernel's `agent.turn._Turn.run` skipping its ``store.repair`` of the calls a cancelled
turn left open makes the strict mock reject the request after the cancel (a tool call without its result), and
this test red.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from a2a.types import a2a_pb2 as pb

from mock_llm import MockLLM
from tests.a2a.kernel import A2AKernel, answer_text, collect, final_task, text_request

MESSAGES = 12
DISCONNECT_AT, CANCEL_AT = 5, 8


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory, mock: MockLLM) -> Iterator[A2AKernel]:
    k = A2AKernel(tmp_path_factory.mktemp("a2a-incident"), mock)
    k.start()
    yield k
    k.stop()


def parallel(n: int, *calls: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    """One model response with several tool calls at once (every tool here is parallel_safe), with reasoning."""
    return {
        "reasoning_content": f"thinking {n}",
        "tool_calls": [
            {"id": f"c{n}_{i}", "name": name, "arguments": json.dumps(args)} for i, (name, args) in enumerate(calls)
        ],
    }


def script(n: int) -> list[dict[str, Any]]:
    if n == DISCONNECT_AT:
        return [parallel(n, ("slow", {"seconds": 1.5}), ("weather", {"city": "Oslo"})),
                {"reasoning_content": f"done {n}", "content": f"answer {n}", "chunk_delay": 0.01}]  # fmt: skip
    if n == CANCEL_AT:
        return [parallel(n, ("slow", {"seconds": 120}), ("weather", {"city": "Rome"}))]
    return [parallel(n, ("weather", {"city": f"city{n}a"}), ("weather", {"city": f"city{n}b"})),
            {"reasoning_content": f"done {n}", "content": f"answer {n}"}]  # fmt: skip


async def wait_state(kernel: A2AKernel, task_id: str, wanted: set[str]) -> pb.Task:
    async with kernel.a2a(streaming=False) as client:
        for _ in range(1200):
            task = await client.get_task(pb.GetTaskRequest(id=task_id))
            if pb.TaskState.Name(task.status.state) in wanted:
                return task
            await asyncio.sleep(0.05)
    raise AssertionError(f"task {task_id} never reached {wanted}")


async def wait_slow(kernel: A2AKernel) -> None:
    for _ in range(1200):
        if kernel.slow_mark.exists():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the slow tool never started")


async def conversation(kernel: A2AKernel, mock: MockLLM) -> tuple[str, list[str]]:
    context = ""
    ids: list[str] = []
    for n in range(1, MESSAGES + 1):
        mock.script(script(n), append=True)
        kernel.slow_mark.unlink(missing_ok=True)
        request = text_request(f"message {n}", context=context)
        if n == DISCONNECT_AT:  # client A streams, and goes away while the slow tool runs
            async with kernel.a2a() as client_a:
                stream = client_a.send_message(request)
                first = await anext(stream)
                task_id = first.task.id
                await wait_slow(kernel)
                await stream.aclose()
            done = await wait_state(kernel, task_id, {"TASK_STATE_COMPLETED"})  # the turn went on without it
            assert answer_text(done) == f"answer {n}"
        elif n == CANCEL_AT:  # client C starts it; client D cancels it during the tool call
            async with kernel.a2a(streaming=False) as client_c:
                started = final_task(
                    await collect(client_c, text_request(f"message {n}", context=context, immediately=True))
                )
                assert started is not None
                task_id = started.id
            await wait_slow(kernel)
            async with kernel.a2a(streaming=False) as client_d:
                cancelled = await client_d.cancel_task(pb.CancelTaskRequest(id=task_id))
            assert pb.TaskState.Name(cancelled.status.state) == "TASK_STATE_CANCELED"
        else:
            async with kernel.a2a(streaming=n % 2 == 0) as client:
                events = await collect(client, request)
            task_id = next(e.task.id for e in events if e.HasField("task"))
            done = await wait_state(kernel, task_id, {"TASK_STATE_COMPLETED"})
            assert answer_text(done) == f"answer {n}", n
        context = context or task_id.split("/")[0]
        ids.append(task_id)
    return context, ids


def test_a_long_conversation_with_parallel_calls_a_disconnect_and_a_cancel(kernel: A2AKernel, mock: MockLLM) -> None:
    mock.reset()
    session, ids = asyncio.run(conversation(kernel, mock))

    assert mock.rejections == [], [r.body for r in mock.rejections]
    assert len(mock.requests) == 2 * MESSAGES - 1  # the cancelled turn made one request
    last = mock.requests[-1].body["messages"]
    users = [m for m in last if m["role"] == "user"]
    assert [u["content"] for u in users if u["content"].startswith("message ")][-1] == f"message {MESSAGES}"
    with_calls = [m for m in last if m["role"] == "assistant" and m.get("tool_calls")]
    assert with_calls and all(m.get("reasoning_content") for m in with_calls)  # reasoning passed back

    stored = kernel.events(session)
    messages = stored["messages"]
    calls = [c["id"] for m in messages if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    results = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    assert sorted(calls) == sorted(results) and len(set(calls)) == len(calls)  # every call has one result
    assert len(calls) == 2 * MESSAGES
    assert sum(1 for m in messages if m["role"] == "user") == MESSAGES

    async def read_all() -> list[str]:
        async with kernel.a2a(streaming=False) as client:
            return [pb.TaskState.Name((await client.get_task(pb.GetTaskRequest(id=i))).status.state) for i in ids]

    read = asyncio.run(read_all())
    assert read == ["TASK_STATE_CANCELED" if n == CANCEL_AT else "TASK_STATE_COMPLETED" for n in range(1, MESSAGES + 1)]
