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
    session, _turn = task.id.split("/")
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


def test_get_reads_the_task_and_a_second_message_continues_its_context(kernel: A2AKernel, mock: MockLLM) -> None:
    """The second message's request to the model carries the first exchange (its text), so the context is
    the session. Mutation: `_session_of` ignoring ``contextId`` (always a new session) turns it red."""
    mock.reset()
    mock.script([{"content": "The secret word is PELICAN."}, {"content": "You told me PELICAN."}])

    async def run() -> tuple[pb.Task, pb.Task, pb.Task]:
        async with kernel.a2a(streaming=False) as client:
            first = final_task(await collect(client, text_request("Remember the word PELICAN")))
            assert first is not None
            second = final_task(await collect(client, text_request("Which word?", context=first.context_id)))
            assert second is not None
            read = await client.get_task(pb.GetTaskRequest(id=first.id))
            return first, second, read

    first, second, read = asyncio.run(run())
    assert second.context_id == first.context_id and second.id != first.id
    assert read.id == first.id and answer_text(read) == "The secret word is PELICAN."
    assert pb.TaskState.Name(read.status.state) == "TASK_STATE_COMPLETED"
    later = json.dumps(mock.requests[1].body["messages"])
    assert "Remember the word PELICAN" in later and "The secret word is PELICAN." in later
    assert mock.rejections == []


def test_get_of_an_unknown_task_is_task_not_found(kernel: A2AKernel) -> None:
    with kernel.client() as client:
        for task_id in ("nosuchsession/abc", "no-slash-at-all"):
            body = {"jsonrpc": "2.0", "id": 7, "method": "GetTask", "params": {"id": task_id}}
            answer = client.post("/a2a", json=body, headers={"A2A-Version": "1.0"}).json()
            assert answer["error"]["code"] == -32001, answer  # TaskNotFoundError


def test_cancel_during_a_tool_call(kernel: A2AKernel, mock: MockLLM) -> None:
    """Cancel while the slow tool runs: the task is canceled, the call got its cancelled result, the model was
    never asked again. Mutation: `on_cancel_task` not calling ``turn/cancel`` turns it red (the state stays
    working until the tool ends)."""
    mock.reset()
    kernel.slow_mark.unlink(missing_ok=True)
    mock.script(
        [{"reasoning_content": "r", "tool_calls": [{"id": "s1", "name": "slow", "arguments": '{"seconds": 120}'}]}]
    )

    async def run() -> tuple[pb.Task, pb.Task]:
        async with kernel.a2a(streaming=False) as client:
            started = final_task(await collect(client, text_request("be slow", immediately=True)))
            assert started is not None
            for _ in range(600):
                if kernel.slow_mark.exists():
                    break
                await asyncio.sleep(0.05)
            assert kernel.slow_mark.exists(), "the slow tool never started"
            cancelled = await client.cancel_task(pb.CancelTaskRequest(id=started.id))
            again = await client.get_task(pb.GetTaskRequest(id=started.id))
            return cancelled, again

    cancelled, again = asyncio.run(run())
    assert pb.TaskState.Name(cancelled.status.state) == "TASK_STATE_CANCELED"
    assert pb.TaskState.Name(again.status.state) == "TASK_STATE_CANCELED"
    session, _ = cancelled.id.split("/")
    results = [e for e in kernel.events(session)["events"] if e["kind"] == "tool_result"]
    assert len(results) == 1 and "cancelled" in results[0]["data"]["content"]
    assert len(mock.requests) == 1 and mock.rejections == []


def test_an_approval_is_answered_through_input_required(kernel: A2AKernel, mock: MockLLM) -> None:
    """The recorder's deploy needs approval: the stream ends in input-required naming it; the next message
    ("yes") in the task answers it, the call runs, the task completes. Mutation: `_answer` sending
    ``decision="deny"`` always turns it red."""
    mock.reset()
    mock.script(
        [
            {
                "reasoning_content": "r",
                "tool_calls": [{"id": "d1", "name": "deploy", "arguments": '{"target": "prod"}'}],
            },
            {"reasoning_content": "r", "content": "deployed"},
        ]
    )

    async def run() -> tuple[list[pb.StreamResponse], list[pb.StreamResponse]]:
        async with kernel.a2a() as client:
            first = await collect(client, text_request("deploy to prod"))
            task = first[0].task
            answer = await collect(client, text_request("yes", task=task.id, context=task.context_id))
            return first, answer

    first, answer = asyncio.run(run())
    assert states(first)[-1] == "TASK_STATE_INPUT_REQUIRED"
    [asked] = [e.status_update for e in first if e.HasField("status_update")]
    assert "deploy" in asked.status.message.parts[0].text
    assert states(answer)[-1] == "TASK_STATE_COMPLETED" and streamed_text(answer) == "deployed"
    assert kernel.received() == ["prod"]
    assert mock.rejections == []


def test_subscribe_follows_a_running_task_to_its_end(kernel: A2AKernel, mock: MockLLM) -> None:
    """SubscribeToTask on a task started with returnImmediately: the task as it is, then its answer and end."""
    mock.reset()
    kernel.slow_mark.unlink(missing_ok=True)
    mock.script(
        [
            {"reasoning_content": "r", "tool_calls": [{"id": "w1", "name": "slow", "arguments": '{"seconds": 1}'}]},
            {"reasoning_content": "r", "content": "after the wait"},
        ]
    )

    async def run() -> list[pb.StreamResponse]:
        async with kernel.a2a(streaming=False) as starter:
            started = final_task(await collect(starter, text_request("wait a bit", immediately=True)))
            assert started is not None
        async with kernel.a2a() as client:
            return [e async for e in client.subscribe(pb.SubscribeToTaskRequest(id=started.id))]

    events = asyncio.run(run())
    assert states(events)[0] == "TASK_STATE_WORKING" and states(events)[-1] == "TASK_STATE_COMPLETED"
    assert streamed_text(events) == "after the wait" or answer_text(final_task(events) or pb.Task()) == "after the wait"
    assert mock.rejections == []


def test_a_wrong_token_is_refused(kernel: A2AKernel) -> None:
    async def run() -> None:
        async with kernel.a2a(token="not-the-token") as client:
            await collect(client, text_request("hi"))

    with pytest.raises(Exception, match="401"):
        asyncio.run(run())
    body = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {}}
    with httpx.Client(base_url=kernel.url, timeout=30) as anonymous:
        refused = anonymous.post("/a2a", json=body, headers={"authorization": "Bearer wrong"})
    assert refused.status_code == 401 and refused.json()["error"]["code"] == "unauthorized"


def test_malformed_json_rpc_gets_the_protocols_errors(kernel: A2AKernel) -> None:
    with kernel.client() as client:

        def post(content: bytes) -> dict[str, object]:
            headers = {"content-type": "application/json", "a2a-version": "1.0"}
            response = client.post("/a2a", content=content, headers=headers)
            assert response.status_code == 200, response.text
            return dict(response.json()["error"])

        assert post(b"{not json")["code"] == -32700
        assert post(b'{"jsonrpc": "1.0", "id": 1, "method": "GetTask"}')["code"] == -32600
        assert post(b'{"jsonrpc": "2.0", "id": 1, "method": "NoSuchMethod", "params": {}}')["code"] == -32601
        assert post(b'{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": 5}}')["code"] == -32602
        assert (
            post(b'{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {}}}')["code"] == -32602
        )


def test_raw_v03_message_send(kernel: A2AKernel, mock: MockLLM) -> None:
    """A v0.3 client's ``message/send`` (as 0.3's JSON, no A2A-Version header) over plain httpx."""
    mock.reset()
    mock.script([{"content": "old protocol, same agent"}])
    body = {
        "jsonrpc": "2.0",
        "id": "r1",
        "method": "message/send",
        "params": {
            "message": {
                "kind": "message",
                "role": "user",
                "messageId": "m-1",
                "parts": [{"kind": "text", "text": "hello from 0.3"}, {"kind": "data", "data": {"ticket": 42}}],
            }
        },
    }
    with kernel.client() as client:
        answer = client.post("/a2a", json=body).json()
    task = answer["result"]
    assert task["kind"] == "task" and task["status"]["state"] == "completed", answer
    assert task["artifacts"][0]["parts"][0]["text"] == "old protocol, same agent"
    session = task["contextId"]
    [stored] = [e for e in kernel.events(session)["events"] if e["kind"] == "input"]
    parts = stored["data"]["parts"]
    assert parts[0] == {"type": "text", "text": "hello from 0.3"}
    assert parts[1]["mime"] == "application/json" and json.loads(parts[1]["data"]) == {"ticket": 42}
    assert mock.rejections == []


def test_a_task_is_read_back_after_a_kernel_restart(kernel: A2AKernel, mock: MockLLM) -> None:
    """GetTask after `hologram up` stopped and started again: the turn API reads the task's turn from the
    session's store (its end, its answer, its messages). Mutation: `service.stored_end` answering ``error``
    always turns it red (the task reads as failed)."""
    mock.reset()
    mock.script([{"content": "kept across restarts"}])

    async def send() -> pb.Task:
        async with kernel.a2a(streaming=False) as client:
            task = final_task(await collect(client, text_request("remember this")))
            assert task is not None
            return task

    async def get(task_id: str) -> pb.Task:
        async with kernel.a2a(streaming=False) as client:
            return await client.get_task(pb.GetTaskRequest(id=task_id))

    task = asyncio.run(send())
    kernel.stop()
    kernel.start()
    read = asyncio.run(get(task.id))
    assert pb.TaskState.Name(read.status.state) == "TASK_STATE_COMPLETED"
    assert answer_text(read) == "kept across restarts"
    assert [m.parts[0].text for m in read.history] == ["remember this", "kept across restarts"]
