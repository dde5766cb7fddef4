"""The turn API end to end (a real `hologram up`, the strict mock): sessions, resuming a turn after the client
went away, and a channel plugin that runs and approves a turn through the ``kernel.turns`` facility with the
events arriving on the event ring — the same contract as the control socket's clients get.

Mutation checks (done): `TurnHub.watch` ignoring ``after`` (no replay) turns the resume test red (the
events between the two connections are missing); the hub not publishing turn events on the ring turns the
channel-plugin test red (the plugin never sees its turn end).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

from hologram.api import turn as api
from hologram.clients import TurnClient
from hologram.rpc import RpcError
from mock_llm import MockLLM
from tests.kit.wait import wait_until

from .test_approvals_e2e import ApprovalKernel, script_one_call

pytestmark = pytest.mark.slow

RELAY_MANIFEST = """\
[plugin]
name = "relay"
version = "0.1.0"
description = "a channel: starts a turn through kernel.turns at start, approves it, logs its events"
run = { module = "relay", env = { PYTHONPATH = "{path}", RELAY_LOG = "{root}/relay-events.jsonl" } }

[facilities]
requires = ["kernel.turns", "recorder.calls"]  # its turn calls deploy: start once the recorder serves it
"""

RELAY = """\
import asyncio, json, os
from hologram.sdk import Plugin

plugin = Plugin("relay")
SESSION = "relay-1"
tasks = set()


@plugin.subscribe(["turn.event"])
async def on_turn_event(data):
    event = data["event"]
    if event["session"] != SESSION:
        return
    with open(os.environ["RELAY_LOG"], "a") as f:
        f.write(json.dumps(event) + "\\n")
    if event["type"] == "approval.requested":
        await plugin.facility("kernel.turns").call(
            "approve", session=SESSION, approval=event["approval"], approved=True, reason="relayed yes"
        )


@plugin.on_start
async def begin(ctx):
    async def start():
        await plugin.facility("kernel.turns").call("start", text="deploy it", session=SESSION, approvals=True)
    tasks.add(asyncio.get_running_loop().create_task(start()))


if __name__ == "__main__":
    plugin.run()
"""


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory, mock: MockLLM) -> Iterator[ApprovalKernel]:
    k = ApprovalKernel(tmp_path_factory.mktemp("turnapi"), mock, plugins={"relay": (RELAY_MANIFEST, RELAY)})
    script_one_call(mock, "deploy", "mark-relay")  # the relay's turn runs as soon as it starts
    k.start()
    yield k
    k.stop()


def relay_events(kernel: ApprovalKernel) -> list[dict[str, Any]]:
    path = kernel.root / "relay-events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_a_channel_plugin_runs_and_approves_a_turn_through_kernel_turns(kernel: ApprovalKernel) -> None:
    events = wait_until(
        lambda: relay_events(kernel),
        accept=lambda seen: any(e["type"] == "turn.ended" for e in seen),
        timeout=60,
        what="the relay plugin to see its turn end on the event ring",
    )
    types = [e["type"] for e in events]
    assert types[0] == "turn.started" and types[-1] == "turn.ended", types
    assert [e["seq"] for e in events] == sorted(e["seq"] for e in events)  # in order, as sent
    for event in events:
        api.parse_event(event)  # every one is a valid event of this API version
    resolved = next((e for e in events if e["type"] == "approval.resolved"), None)
    assert resolved is not None, events
    assert (resolved["approved"], resolved["by"], resolved["reason"]) == (True, "relay", "relayed yes")
    assert events[-1]["stop_reason"] == "answer" and events[-1]["output"] == "done"
    assert kernel.received() == ["mark-relay"]
    stored = kernel.events("relay-1")["events"]
    assert [e["kind"] for e in stored] == ["input", "response", "tool_result", "response", "output"]


def test_sessions_are_listed_read_renamed_and_deleted(kernel: ApprovalKernel, mock: MockLLM) -> None:
    mock.reset()
    mock.script([{"reasoning_content": "r", "content": "hello there"}])

    async def go() -> None:
        async with await TurnClient.connect(kernel.data, client="tester") as client:
            turn = await client.start("hi", session="named-session")
            ended = await turn.result()
            assert (ended.stop_reason, ended.output) == ("answer", "hello there")
            await client.rename("named-session", "Greetings 问候")
            listed = {s["id"]: s for s in await client.sessions()}
            assert listed["named-session"]["title"] == "Greetings 问候"
            stored = await client.read("named-session")
            assert [m["role"] for m in stored["messages"]] == ["user", "assistant"]
            assert await client.delete("named-session") is True
            assert "named-session" not in {s["id"] for s in await client.sessions()}
            with pytest.raises(RpcError, match="there is no session 'named-session'"):
                await client.read("named-session")
            assert await client.delete("named-session") is False
            with pytest.raises(RpcError, match=r"turn/start: text: String should have at least 1 character"):
                await client.connection.request(api.TURN_START, {"text": ""})

    asyncio.run(go())


async def until_ended(stream: Any, approver: TurnClient | None = None, *, reason: str = "") -> list[Any]:
    """A session stream's events up to the first ``turn.ended``; ``approver`` says yes to each request."""
    seen: list[Any] = []
    async with asyncio.timeout(60):
        async for event in stream:
            seen.append(event)
            if approver is not None and isinstance(event, api.ApprovalRequested):
                assert await approver.approve(event, True, reason)
            if isinstance(event, api.TurnEnded):
                break
    return seen


def test_a_client_that_comes_back_resumes_the_turn_without_a_gap_or_a_repeat(
    kernel: ApprovalKernel, mock: MockLLM
) -> None:
    """The first client goes away while an approval is open (a browser tab reloading): the turn, started with
    ``on_disconnect = "continue"``, keeps running; the second client passes the last ``seq`` it saw to
    ``turn/watch``, gets the open request again, answers it and sees the rest."""
    mock.reset()
    script_one_call(mock, "deploy", "mark-resume")

    async def go() -> tuple[list[Any], list[Any], list[Any]]:
        first = await TurnClient.connect(kernel.data, client="tab", approvals=True)
        turn = await first.start("deploy", session="resumed", on_disconnect="continue")
        before: list[Any] = []
        async with asyncio.timeout(60):
            async for event in turn:
                before.append(event)
                if isinstance(event, api.ApprovalRequested):
                    break
        await first.aclose()
        async with await TurnClient.connect(kernel.data, client="tab", approvals=True) as second:
            stream = await second.watch("resumed", after=before[-1].seq)
            after = await until_ended(stream, second, reason="after the reload")
            async with await TurnClient.connect(kernel.data, client="audit") as third:
                whole = await until_ended(await third.watch("resumed", after=0))  # the whole turn, replayed
        return before, after, whole

    before, after, whole = asyncio.run(go())
    assert isinstance(after[0], api.ApprovalRequested) and after[0].approval == before[-1].approval  # asked again
    seen = [e.seq for e in before] + [e.seq for e in after[1:]]
    assert seen == [e.seq for e in whole], (seen, [e.seq for e in whole])  # no gap, no repeat
    assert whole[-1].stop_reason == "answer"
    resolved = next(e for e in whole if isinstance(e, api.ApprovalResolved))
    assert (resolved.by, resolved.reason) == ("tab", "after the reload")
    assert "mark-resume" in kernel.received()
