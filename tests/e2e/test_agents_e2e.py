"""Sub-agents, self-management and the loop guard end to end: `hologram up` with the shipped agents, admin and shell
plugins, the strict DeepSeek mock as the model, a turn-API client.

- Two ``agent_delegate`` calls of one step run two child turns at once, and each answer comes back as a tool result
  with its session. That the children overlapped is proven, not timed: each child's ``shell_run`` drops a file in a
  shared directory and waits (bounded) until both files are there, which only happens if both run at once; run one
  after the other, the first would wait out its bound and answer ``alone``.
- A child is held to the tools it was given (``shell_run`` only: its call of ``settings_get`` is refused).
- A child that has ``agent_delegate`` (no ``tools`` given) cannot delegate again: its call is refused.
- The children's steps show live under their delegate calls in the parent's turn (``tool.output``).
- ``settings_get`` shows the settings without the provider's key; ``plugins_list`` names the plugins.
- A model that repeats one call ends its turn with ``stop_reason`` "loop", and the next turn of the session is
  accepted by the strict mock.

Mutation check (done): agent_delegate not ``parallel_safe`` in manifests/agents.toml turns
test_two_sub_agents_run_at_once_and_answer_as_tool_results red (both shells answer ``alone``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hologram.api import turn as api
from hologram.clients import TurnClient
from mock_llm import MockLLM
from tests.kit.manifests import copy_shipped
from tests.kit.providers import provider_toml, write_settings

from .kernel import E2EKernel

pytestmark = pytest.mark.slow
SECRET = "sk-E2E-NEVER-SHOWN"


class AgentsKernel(E2EKernel):
    def __init__(self, root: Path, mock: MockLLM) -> None:  # no super(): its graph
        self.root, self.mocks, self.process = root, [mock], None
        self.data, self.lock = root / "data", root / "hologram.lock"
        manifests = root / "manifests"
        for name in ("agents", "admin", "shell"):
            copy_shipped(name, manifests)
        self.hologram("build", "--no-discover", "-m", str(manifests), "-o", str(self.lock), check=True)
        self.data.mkdir()
        write_settings(
            self.data / "settings.toml",
            '[agent]\nmax_steps = 6\ntool_timeout_s = 90\n\n[approvals.tools.shell_run]\nmode = "allow"\n\n'
            + provider_toml(mock, api_key=SECRET),
        )


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory, mock: MockLLM) -> Iterator[AgentsKernel]:
    k = AgentsKernel(tmp_path_factory.mktemp("agents"), mock)
    k.start()
    yield k
    k.stop()


@pytest.fixture(autouse=True)
def fresh(mock: MockLLM) -> None:
    mock.reset()


def call(call_id: str, tool: str, **arguments: Any) -> dict[str, str]:
    return {"id": call_id, "name": tool, "arguments": json.dumps(arguments)}


async def one_turn(
    kernel: AgentsKernel, text: str, session: str | None = None, *, approve: bool = False
) -> tuple[api.TurnEnded, list[Any]]:
    """One turn from a client (``approve``: one that approves every request it is asked, as a person at the page)."""
    async with await TurnClient.connect(kernel.data, client="e2e", approvals=approve) as client:
        stream = await client.start(text, session=session)
        events: list[Any] = []
        async with asyncio.timeout(120):  # a failure bound
            async for event in stream:
                events.append(event)
                if isinstance(event, api.ApprovalRequested):
                    assert await client.approve(event, "approve_once")
        return await stream.result(), events


def tool_messages(request: Any) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in request.body["messages"] if m["role"] == "tool"}


def test_two_sub_agents_run_at_once_and_answer_as_tool_results(kernel: AgentsKernel, mock: MockLLM) -> None:
    meet = kernel.root / "meet"
    meet.mkdir()
    rendezvous = (
        f"touch {meet}/$$; for i in $(seq 600); do "
        f'[ "$(ls {meet} | wc -l)" -ge 2 ] && echo met && exit 0; sleep 0.05; done; echo alone'
    )  # a failure bound of ~30 s, not an expected duration: together they meet at once
    mock.script(
        [
            {
                "tool_calls": [
                    call("d1", "agent_delegate", task="child one: run the check", tools=["shell_run"]),
                    call("d2", "agent_delegate", task="child two: run the check", tools=["shell_run"]),
                ]
            }
        ],
        default={
            "by_last_role": {  # each child: its shell call, then its answer; the parent: its answer at last
                "user": {"tool_calls": [call("s{n}", "shell_run", command=rendezvous), call("g{n}", "settings_get")]},
                "tool": {"content": "answer {n}"},
            }
        },
    )
    ended, events = asyncio.run(one_turn(kernel, "run the check twice, in parallel"))
    assert ended.stop_reason == "answer", ended
    results = {e.call_id: e for e in events if isinstance(e, api.ToolResult)}
    answers = [json.loads(results[d].content) for d in ("d1", "d2")]
    assert all(a["stop_reason"] == "answer" and a["answer"].startswith("answer") for a in answers), answers
    children = [a["session"] for a in answers]
    assert len(set(children)) == 2
    for child in children:
        stored = {e["call_id"]: e["data"] for e in kernel.events(child)["events"] if e["kind"] == "tool_result"}
        shell = next(d for c, d in stored.items() if c.startswith("s"))
        assert "met" in shell["content"] and "alone" not in shell["content"], shell
        refused = next(d for c, d in stored.items() if c.startswith("g"))
        assert refused["content"].startswith("denied: settings_get is not among the tools this turn was given")
        inputs = [e["data"] for e in kernel.events(child)["events"] if e["kind"] == "input"]
        assert inputs[0]["client"] == "agent_delegate" and inputs[0]["text"].startswith("child ")
    shown = {
        d: "".join(e.text for e in events if isinstance(e, api.ToolOutput) and e.call_id == d) for d in ("d1", "d2")
    }
    for d, text in shown.items():  # each child's steps, live under its delegate call in the parent's turn
        assert "→ shell_run " in text and "← shell_run: met" in text and "← settings_get: denied" in text, (d, text)
    last = tool_messages(mock.requests[-1])  # the parent's last request carries both answers
    assert {json.loads(last[d])["session"] for d in ("d1", "d2")} == set(children)
    assert mock.rejections == []


def test_settings_without_secrets_and_the_plugins(kernel: AgentsKernel, mock: MockLLM) -> None:
    mock.script(
        [
            {"tool_calls": [call("a", "settings_get"), call("b", "plugins_list")]},
            {"content": "seen"},
        ]
    )
    ended, _ = asyncio.run(one_turn(kernel, "how are you configured?"))
    assert ended.stop_reason == "answer"
    sent = tool_messages(mock.requests[-1])
    settings = json.loads(sent["a"])["settings"]
    assert settings["agent"]["loop_repeats"] == 3 and settings["approvals"]["tools"]["shell_run"]["mode"] == "allow"
    assert settings["providers"][0]["api_key"] == {"set": True}
    assert SECRET not in json.dumps(mock.requests[-1].body)  # not in what the model was sent, anywhere
    head, body = sent["b"].split("\n", 1)
    assert head == "3 plugin(s), all ready"
    assert {p["name"] for p in json.loads(body)} == {"agents", "admin", "shell"}


def test_a_model_repeating_one_call_ends_the_turn_with_loop(kernel: AgentsKernel, mock: MockLLM) -> None:
    mock.script([{"tool_calls": [call(f"r{i}", "settings_get", section="agent")]} for i in range(4)])
    ended, events = asyncio.run(one_turn(kernel, "check the agent settings"))
    assert ended.stop_reason == "loop" and ended.steps == 4
    results = {e.call_id: e.content for e in events if isinstance(e, api.ToolResult)}
    assert results["r2"].startswith("not run: loop guard: you called settings_get with the same arguments 2 times")
    assert results["r3"].startswith("not run: the loop guard ended the turn")
    mock.script([{"content": "fine"}])
    again, _ = asyncio.run(one_turn(kernel, "and now?", session=ended.session))
    assert again.stop_reason == "answer" and again.output == "fine"
    assert mock.rejections == []


def test_a_sub_agent_that_delegates_again_is_refused(kernel: AgentsKernel, mock: MockLLM) -> None:
    """A child given all its parent's tools (no ``tools``) has ``agent_delegate`` too; its call of it is refused on
    the ``parent`` the kernel sends with the child's calls (``tool/invoke``), and no grandchild runs."""
    mock.script(
        [
            {"tool_calls": [call("d1", "agent_delegate", task="look into it")]},
            {"tool_calls": [call("d2", "agent_delegate", task="look deeper")]},  # the child
            {"content": "did it myself"},  # the child's answer
            {"content": "the sub-agent did it"},  # the parent's
        ]
    )
    ended, events = asyncio.run(one_turn(kernel, "delegate it"))
    assert ended.stop_reason == "answer", ended
    child = json.loads(next(e.content for e in events if isinstance(e, api.ToolResult) and e.call_id == "d1"))
    assert child["answer"] == "did it myself"
    stored = {e["call_id"]: e["data"] for e in kernel.events(child["session"])["events"] if e["kind"] == "tool_result"}
    assert stored["d2"]["content"] == "error: a sub-agent cannot delegate further: do the task with your own tools"
    assert len(mock.requests) == 4 and mock.rejections == []  # the parent's two, the child's two: no grandchild


def test_a_sub_agents_approval_is_asked_of_the_parents_client(kernel: AgentsKernel, mock: MockLLM) -> None:
    """Nobody watches a child's session; its call that needs approval (plugin_restart) is put to the clients of
    the parent's session, which approve it: the shell plugin restarts. (Last in the module: shell restarts.)"""
    mock.script(
        [
            {"tool_calls": [call("d1", "agent_delegate", task="restart shell", tools=["plugin_restart"])]},
            {"tool_calls": [call("r1", "plugin_restart", name="shell")]},  # the child
            {"content": "restarted it"},  # the child's answer
            {"content": "the sub-agent restarted shell"},  # the parent's
        ]
    )
    ended, events = asyncio.run(one_turn(kernel, "restart shell through a sub-agent", approve=True))
    assert ended.stop_reason == "answer", ended
    [asked] = [e for e in events if isinstance(e, api.ApprovalRequested)]
    child = json.loads(next(e.content for e in events if isinstance(e, api.ToolResult) and e.call_id == "d1"))
    assert asked.session == ended.session and asked.turn == ended.turn and asked.tool == "plugin_restart"
    assert asked.summary.startswith(f"sub-agent (session {child['session']}): ")
    [resolved] = [e for e in events if isinstance(e, api.ApprovalResolved)]
    assert resolved.approved and resolved.approval == asked.approval
    stored = {e["call_id"]: e["data"] for e in kernel.events(child["session"])["events"] if e["kind"] == "tool_result"}
    assert stored["r1"]["content"].startswith("shell restarted"), stored
    assert stored["r1"]["approval"]["approved"] is True
    assert child["answer"] == "restarted it" and mock.rejections == []
