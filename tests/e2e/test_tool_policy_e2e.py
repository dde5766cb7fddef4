"""The tool policy of a channel, decided in the kernel (issue 38, item 5), end to end: a real `hologram up` with the
shipped files plugin, the strict mock, and a test channel plugin that starts a turn through the public SDK
(``kernel.turns`` ``start``), whose channel settings.toml limits to the tools that read
(``[channels.polbridge] tools = ["@read"]``). The model is not offered ``files_write``; a scripted call of it is
refused with the reason, before approval, and the files plugin never receives it (the file it would write does
not exist); ``files_read`` is offered. The same channel's ``tools_list`` / ``tools_call`` (outside a turn) follow
the same policy. A control-socket client of another channel keeps every tool (the policy is the channel's).

Mutation checks (done): `ToolRegistry.snapshot` ignoring its ``restriction`` turns
``test_a_channel_outside_its_policy_is_not_offered_the_tool_and_its_call_never_runs`` red (files_write offered,
and the call writes the file); dropping the ``excluded`` branch of `Executor._prepare` (the tool is left out but
its call not refused with the policy's reason) turns it red on the reason ("there is no tool named").
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

from hologram.clients import TurnClient
from mock_llm import MockLLM
from tests.kit.manifests import copy_shipped
from tests.kit.wait import wait_until

from .test_approvals_e2e import ApprovalKernel

pytestmark = pytest.mark.slow

BRIDGE_MANIFEST = """\
[plugin]
name = "polbridge"
version = "0.1.0"
description = "a channel: starts one turn and records its events and what the tools look like to it"
run = { module = "polbridge", env = { PYTHONPATH = "{path}", BRIDGE_LOG = "{root}/polbridge.jsonl" } }

[facilities]
requires = ["kernel.turns"]
"""

BRIDGE = """\
import asyncio, json, os
from hologram.sdk import Plugin

plugin = Plugin("polbridge")
tasks = set()


def log(record):
    with open(os.environ["BRIDGE_LOG"], "a") as f:
        f.write(json.dumps(record) + "\\n")


@plugin.on_turn_event
async def on_turn_event(event):
    log({"event": event})


@plugin.on_start
async def begin(ctx):
    turns = plugin.facility("kernel.turns")

    async def start():
        for _ in range(600):  # the files plugin starts beside this one: until its tools are served (a bound)
            listed = await turns.call("tools_list")
            if any(t["name"] == "files_read" for t in listed["tools"]):
                break
            await asyncio.sleep(0.1)
        log({"tools": sorted(t["name"] for t in listed["tools"])})
        direct = await turns.call("tools_call", tool="files_write", arguments={"path": "direct.txt", "content": "x"})
        log({"direct": direct})
        await turns.call("start", text="write the report", session="pol-1", partner="mallory")
    tasks.add(asyncio.get_running_loop().create_task(start()))


if __name__ == "__main__":
    plugin.run()
"""


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory, mock: MockLLM) -> Iterator[ApprovalKernel]:
    root = tmp_path_factory.mktemp("policy")
    k = ApprovalKernel(root, mock, plugins={"polbridge": (BRIDGE_MANIFEST, BRIDGE)})
    copy_shipped("files", root / "manifests")
    k.hologram("build", "--no-discover", "-m", str(root / "manifests"), "-o", str(k.lock), check=True)
    settings = k.data / "settings.toml"
    settings.write_text(settings.read_text() + '\n[channels.polbridge]\ntools = ["@read"]\n')
    call = {"id": "w1", "name": "files_write", "arguments": json.dumps({"path": "report.txt", "content": "pwned"})}
    mock.script([{"reasoning_content": "r", "tool_calls": [call]}], default={"content": "ok"})
    k.start()
    yield k
    k.stop()


def bridge_log(kernel: ApprovalKernel) -> list[dict[str, Any]]:
    path = kernel.root / "polbridge.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_a_channel_outside_its_policy_is_not_offered_the_tool_and_its_call_never_runs(
    kernel: ApprovalKernel, mock: MockLLM
) -> None:
    log = wait_until(
        lambda: bridge_log(kernel),
        accept=lambda seen: any(r.get("event", {}).get("type") == "turn.ended" for r in seen),
        timeout=60,
        what="the channel plugin to see its turn end",
    )
    events = [r["event"] for r in log if "event" in r]
    request = next(r for r in mock.requests if "write the report" in json.dumps(r.body["messages"]))
    offered = {t["function"]["name"] for t in request.body.get("tools", [])}
    assert "files_read" in offered and "files_write" not in offered and "files_edit" not in offered, offered
    assert "shell_run" not in offered  # not even the approval-needing tools: they do not read
    result = next(e for e in events if e["type"] == "tool.result")
    assert result["status"] == "denied" and result["tool"] == "files_write", result
    assert "files_write is not allowed in turns from polbridge" in result["content"]
    assert "[channels.polbridge] in settings.toml" in result["content"]
    assert not any(e["type"] == "approval.requested" for e in events)  # refused before any approval
    assert events[-1]["type"] == "turn.ended" and events[-1]["stop_reason"] == "denied"
    assert not (kernel.workspace / "report.txt").exists()  # the files plugin never received the call

    listed = next(r["tools"] for r in log if "tools" in r)
    assert "files_read" in listed and "files_write" not in listed
    direct = next(r["direct"] for r in log if "direct" in r)
    assert direct["status"] == "denied" and "not allowed in turns from polbridge" in direct["content"], direct
    assert not (kernel.workspace / "direct.txt").exists()
    assert mock.rejections == []


def test_another_channel_keeps_every_tool(kernel: ApprovalKernel) -> None:
    """The policy is polbridge's: a control client named otherwise is offered files_write and its call runs
    (so the refusal above is the policy's, not a broken files plugin)."""

    async def go() -> dict[str, Any]:
        async with await TurnClient.connect(kernel.data, client="tester") as client:
            names = {t["name"] for t in await client.tools_list()}
            assert "files_write" in names
            return await client.tools_call("files_write", {"path": "allowed.txt", "content": "fine"})

    result = asyncio.run(go())
    assert result["status"] == "ok", result
    assert (kernel.workspace / "allowed.txt").read_text() == "fine"
