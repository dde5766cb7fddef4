"""A live terminal end to end: `hologram up` with the shipped terminal plugin, the strict DeepSeek mock as the
model, and a turn-API client that answers the kernel's approval requests as `hologram chat` would.

The scripted model opens a python3 REPL (asked: the program is the subject), waits for its prompt, types a
line (asked: the text is the subject), reads the answer off the screen, has a second line refused — it never
reaches the REPL — and closes the terminal, which kills the REPL. Approval is the kernel's, as for shell_run:
term_read and term_close are not asked.

Mutation check (done): `needs_approval` taken off term_send in the manifest turns the test red (the refused
line runs and its file appears).
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


class TerminalKernel(E2EKernel):
    def __init__(self, root: Path, mock: MockLLM) -> None:  # no super(): its own graph
        self.root, self.mocks, self.process = root, [mock], None
        self.data, self.lock = root / "data", root / "hologram.lock"
        manifests = root / "manifests"
        copy_shipped("terminal", manifests)
        self.hologram("build", "--no-discover", "-m", str(manifests), "-o", str(self.lock), check=True)
        self.data.mkdir()
        (self.data / "workspace").mkdir()
        settings = '[agent]\nmax_steps = 10\ntool_timeout_s = 60\n\n[approvals]\ndefault = "ask"\n\n'
        write_settings(self.data / "settings.toml", settings + provider_toml(mock))


@pytest.fixture
def kernel(tmp_path: Path, mock: MockLLM) -> Iterator[TerminalKernel]:
    mock.reset()
    k = TerminalKernel(tmp_path, mock)
    k.start()
    yield k
    k.stop()


def call(call_id: str, tool: str, **arguments: Any) -> dict[str, str]:
    return {"id": call_id, "name": tool, "arguments": json.dumps(arguments)}


def step(*calls: dict[str, str]) -> dict[str, Any]:
    return {"reasoning_content": "r", "tool_calls": list(calls)}


def test_a_python_repl_driven_through_the_kernel_with_approvals(kernel: TerminalKernel, mock: MockLLM) -> None:
    refused = "import pathlib; pathlib.Path('refused-line-ran').touch()"
    mock.script(
        [
            step(call("c1", "term_open", command="python3")),
            step(call("c2", "term_read", id="1", wait_for=">>> ")),
            step(call("c3", "term_send", id="1", text="print(6 * 7)", keys=["Enter"])),
            step(call("c4", "term_read", id="1", wait_for="42")),
            # a step whose every call is refused ends the turn (the kernel's rule): the close rides along
            step(call("c5", "term_send", id="1", text=refused, keys=["Enter"]), call("c6", "term_close", id="1")),
            {"reasoning_content": "r", "content": "Six times seven is 42."},
        ]
    )
    asked: list[dict[str, Any]] = []

    async def go() -> str:
        async with await TurnClient.connect(kernel.data, client="e2e", approvals=True) as client:
            turn = await client.start("use python to compute 6*7")
            async for event in turn:
                if isinstance(event, api.ApprovalRequested):
                    asked.append({"tool": event.tool, "arguments": event.arguments, "summary": event.summary})
                    await client.approve(event, event.arguments.get("text") != refused, "not that one")
            assert turn.ended is not None
            return turn.ended.output

    assert asyncio.run(asyncio.wait_for(go(), 120)) == "Six times seven is 42."
    assert [(a["tool"], a["summary"]) for a in asked] == [
        ("term_open", "term_open: python3"),
        ("term_send", "term_send: print(6 * 7)"),
        ("term_send", f"term_send: {refused}"),
    ]
    results = {m["tool_call_id"]: m["content"] for m in mock.requests[-1].body["messages"] if m["role"] == "tool"}
    assert results["c1"].startswith("[terminal 1 · python3 · running · 100x30")
    assert "'>>> ' seen after" in results["c2"]
    screen = results["c4"].split("--- screen ---\n", 1)[1].splitlines()
    assert screen[-3:] == [">>> print(6 * 7)", "42", ">>>"], results["c4"]
    assert results["c5"].startswith("denied: the call was not approved") and "not that one" in results["c5"]
    assert results["c6"].startswith("closed terminal 1 (python3): killed 1 process: python3 (pid ")
    assert not (kernel.data / "workspace" / "refused-line-ran").exists()
    assert mock.rejections == []
