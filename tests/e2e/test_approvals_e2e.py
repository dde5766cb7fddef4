"""Approvals in the kernel, end to end: a real `hologram up`, the strict mock, turn-API clients (`hologram.clients.control`).

What is proven:
- a plugin never receives a call that was not approved — for shell and code (the shipped manifests; a call
  that reached them would run its command and leave its mark) and for a third-party plugin that declares
  ``needs_approval`` in its manifest only and records every ``tool/invoke`` it receives. Refused,
  unanswered (the timeout) and unaskable (no client that can approve) calls leave no mark; an approved one
  leaves exactly one, so the check can fail;
- two clients on one session see the same events; either can answer; the other sees the outcome, and a
  late answer is refused as already decided.

Mutation checks (done): returning from `Executor._approve` without deciding turns every "no mark" assertion
red (the plugin receives the call); making `TurnHub.emit` skip watchers other than the first turns the
two-clients test red.
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
from hologram.rpc import NOT_ALLOWED, RpcError
from mock_llm import MockLLM
from tests.kit.manifests import copy_shipped

from .kernel import E2EKernel

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
APPROVAL_TIMEOUT_S = 3  # the unanswered case waits this long; answers come in milliseconds

RECORDER_MANIFEST = """\
[plugin]
name = "recorder"
version = "0.1.0"
description = "a third-party tool that needs approval; it records every call it receives"
run = {{ module = "recorder", env = {{ PYTHONPATH = "{path}", RECORD_FILE = "{record}" }} }}

[facilities]
provides = ["recorder.calls@1"]  # ready once its tools are served: a plugin that uses them can require it

[[tools]]
name = "deploy"
description = "deploy a target"
needs_approval = true
approval_subject = "target"
parameters = {{ type = "object", properties = {{ target = {{ type = "string" }} }}, required = ["target"] }}
"""

RECORDER = """\
import json, os
from hologram.sdk import Plugin

plugin = Plugin("recorder")


@plugin.tool("deploy")
async def deploy(target: str) -> str:
    with open(os.environ["RECORD_FILE"], "a") as f:  # every tool/invoke this plugin receives
        f.write(json.dumps({"target": target}) + "\\n")
    return f"deployed {target[:200]}"  # (a 5 MB target: the call, not its echo, is what a test looks at)


if __name__ == "__main__":
    plugin.run()
"""


class ApprovalKernel(E2EKernel):
    """shell and code from the shipped manifests, plus the recorder; one provider; a short approval timeout."""

    def __init__(self, root: Path, mock: MockLLM, plugins: dict[str, tuple[str, str]] | None = None) -> None:
        """``plugins``: more plugins, name → (manifest text with ``{path}`` for the code folder, module source)."""
        self.root, self.mocks, self.process = root, [mock], None
        self.data, self.lock = root / "data", root / "hologram.lock"
        manifests, code = root / "manifests", root / "code"
        manifests.mkdir(parents=True)
        code.mkdir()
        for name in ("shell", "code"):
            copy_shipped(name, manifests)
        self.record = root / "recorder-calls.jsonl"
        (code / "recorder.py").write_text(RECORDER)
        (manifests / "recorder.toml").write_text(RECORDER_MANIFEST.format(path=code, record=self.record))
        for name, (manifest, source) in (plugins or {}).items():
            (code / f"{name}.py").write_text(source)
            (manifests / f"{name}.toml").write_text(manifest.replace("{path}", str(code)).replace("{root}", str(root)))
        self.hologram("build", "--no-discover", "-m", str(manifests), "-o", str(self.lock), check=True)
        self.data.mkdir()
        settings = self.data / "settings.toml"
        settings.write_text(
            f"[agent]\nmax_steps = 4\n\n[approvals]\ntimeout_s = {APPROVAL_TIMEOUT_S}\n\n"
            f'[[providers]]\nname = "mock"\nkind = "deepseek"\nbase_url = "{mock.base_url}"\n'
            'model = "deepseek-chat"\nthinking = true\nmax_retries = 0\ntimeout_s = 10\n'
        )
        settings.chmod(0o600)

    @property
    def workspace(self) -> Path:
        return self.data / "workspace"

    def received(self) -> list[str]:
        """What reached the plugins: the recorder's log, and the marks shell and code calls leave."""
        marks = sorted(p.name for p in self.workspace.glob("mark-*")) if self.workspace.exists() else []
        calls = self.record.read_text().splitlines() if self.record.exists() else []
        return [*(json.loads(c)["target"] for c in calls), *marks]


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory, mock: MockLLM) -> Iterator[ApprovalKernel]:
    k = ApprovalKernel(tmp_path_factory.mktemp("approvals"), mock)
    k.start()
    yield k
    k.stop()


@pytest.fixture(autouse=True)
def fresh(mock: MockLLM, kernel: ApprovalKernel) -> None:
    mock.reset()
    for mark in kernel.workspace.glob("mark-*") if kernel.workspace.exists() else []:
        mark.unlink()
    kernel.record.unlink(missing_ok=True)


CALLS = {
    "shell_run": lambda mark: {"command": f"touch {mark}"},
    "code_run": lambda mark: {"code": f"open({mark!r}, 'w').write('ran')"},
    "deploy": lambda mark: {"target": mark},
}


def script_one_call(mock: MockLLM, tool: str, mark: str) -> None:
    arguments = json.dumps(CALLS[tool](mark))
    mock.script(
        [
            {"reasoning_content": "r", "tool_calls": [{"id": "k1", "name": tool, "arguments": arguments}]},
            {"reasoning_content": "r", "content": "done"},
        ]
    )


async def one_turn(kernel: ApprovalKernel, answer: bool | None, *, approvals: bool = True) -> list[Any]:
    """A turn whose only call needs approval; ``answer`` None: the client can approve but does not answer."""
    async with await TurnClient.connect(kernel.data, client="tester", approvals=approvals) as client:
        turn = await client.start("go")
        async with asyncio.timeout(60):
            async for event in turn:
                if isinstance(event, api.ApprovalRequested) and answer is not None:
                    await client.approve(event, answer, "test says so")
        return turn.events


def resolution(events: list[Any]) -> api.ApprovalResolved:
    [resolved] = [e for e in events if isinstance(e, api.ApprovalResolved)]
    return resolved


@pytest.mark.parametrize("tool", ["shell_run", "code_run", "deploy"])
def test_a_refused_call_never_reaches_the_plugin(kernel: ApprovalKernel, mock: MockLLM, tool: str) -> None:
    script_one_call(mock, tool, "mark-refused")
    events = asyncio.run(one_turn(kernel, False))
    resolved = resolution(events)
    assert (resolved.approved, resolved.by, resolved.reason) == (False, "tester", "test says so")
    [result] = [e for e in events if isinstance(e, api.ToolResult)]
    assert result.status == "denied" and "not approved: test says so" in result.content
    assert kernel.received() == []
    assert mock.rejections == []


@pytest.mark.parametrize("tool", ["shell_run", "code_run", "deploy"])
def test_an_unanswered_call_is_denied_at_the_timeout(kernel: ApprovalKernel, mock: MockLLM, tool: str) -> None:
    script_one_call(mock, tool, "mark-unanswered")
    events = asyncio.run(one_turn(kernel, None))
    resolved = resolution(events)
    assert (resolved.approved, resolved.by) == (False, "kernel")
    assert resolved.reason == f"no answer within {APPROVAL_TIMEOUT_S} s"
    assert kernel.received() == []


@pytest.mark.parametrize("tool", ["shell_run", "code_run", "deploy"])
def test_with_nobody_to_ask_the_call_is_denied_at_once(kernel: ApprovalKernel, mock: MockLLM, tool: str) -> None:
    script_one_call(mock, tool, "mark-unasked")
    events = asyncio.run(one_turn(kernel, True, approvals=False))
    assert not any(isinstance(e, api.ApprovalRequested) for e in events)  # a script is never asked
    assert resolution(events).reason == "no client that can approve is watching this session"
    assert kernel.received() == []


@pytest.mark.parametrize("tool", ["shell_run", "code_run", "deploy"])
def test_an_approved_call_reaches_the_plugin_once(kernel: ApprovalKernel, mock: MockLLM, tool: str) -> None:
    script_one_call(mock, tool, "mark-approved")
    events = asyncio.run(one_turn(kernel, True))
    assert resolution(events).approved
    assert kernel.received() == ["mark-approved"]
    session = events[0].session
    stored = kernel.events(session)["events"]
    [result] = [e["data"] for e in stored if e["kind"] == "tool_result"]
    assert result["approval"]["approved"] is True and result["approval"]["by"] == "tester"


def test_two_clients_see_the_same_turn_and_either_can_answer(kernel: ApprovalKernel, mock: MockLLM) -> None:
    script_one_call(mock, "deploy", "mark-two")

    async def go() -> tuple[list[Any], list[Any], bool]:
        async with (
            await TurnClient.connect(kernel.data, client="terminal", approvals=True) as starter,
            await TurnClient.connect(kernel.data, client="browser", approvals=True) as watcher,
        ):
            session = "shared-session"
            stream = await watcher.watch(session)
            turn = await starter.start("go", session=session)
            late: list[bool] = []
            seen_by_watcher: list[Any] = []
            async with asyncio.timeout(60):
                async for event in stream:  # the watcher answers; the starter only watches
                    seen_by_watcher.append(event)
                    if isinstance(event, api.ApprovalRequested):
                        assert await watcher.approve(event, True, "from the browser")
                        late.append(await starter.approve(event, False, "too late"))
                    if isinstance(event, api.TurnEnded):
                        break
                await turn.result()
            return turn.events, seen_by_watcher, late[0]

    starter_saw, watcher_saw, late_accepted = asyncio.run(go())

    def shape(events: list[Any]) -> list[tuple[str, int]]:
        return [(e.type, e.seq) for e in events]

    assert shape(starter_saw) == shape(watcher_saw)  # the same events, in the same order, with the same seqs
    types = [e.type for e in starter_saw]
    assert types[0] == "turn.started" and types[-1] == "turn.ended"
    assert {"content.delta", "tool.call", "approval.requested", "approval.resolved", "tool.result"} <= set(types)
    resolved = resolution(starter_saw)  # the one that did not answer sees who did
    assert (resolved.approved, resolved.by, resolved.reason) == (True, "browser", "from the browser")
    assert late_accepted is False
    assert kernel.received() == ["mark-two"]


def test_only_a_watcher_that_can_approve_may_answer(kernel: ApprovalKernel, mock: MockLLM) -> None:
    """An approval id is not a key: a second connection that never watched the session, and one that watches it
    without ``approvals: true``, each send ``turn/approve`` for the open request and are refused with
    NOT_ALLOWED; the request stays open, the starter's denial decides, and the call never reaches its plugin.
    Mutation check (done): `TurnHub.answer` without its watcher check turns this red (the intruder's approval is
    accepted and the recorder receives the call)."""
    script_one_call(mock, "deploy", "mark-intruded")

    async def go() -> tuple[list[Any], list[int]]:
        async with (
            await TurnClient.connect(kernel.data, client="tester", approvals=True) as starter,
            await TurnClient.connect(kernel.data, client="stranger", approvals=True) as stranger,
            await TurnClient.connect(kernel.data, client="onlooker", approvals=False) as onlooker,
        ):
            session = "guarded-session"
            turn = await starter.start("go", session=session)
            await onlooker.watch(session)  # watches, but said it cannot approve
            refused: list[int] = []
            async with asyncio.timeout(60):
                async for event in turn:
                    if isinstance(event, api.ApprovalRequested):
                        for intruder in (stranger, onlooker):
                            with pytest.raises(RpcError) as caught:
                                await intruder.approve(event, True, "let me")
                            refused.append(int(caught.value.code))
                        assert await starter.approve(event, False, "no")
            return turn.events, refused

    events, refused = asyncio.run(go())
    assert refused == [NOT_ALLOWED, NOT_ALLOWED]
    resolved = resolution(events)
    assert (resolved.approved, resolved.by, resolved.reason) == (False, "tester", "no")
    assert kernel.received() == []


def test_cancel_during_an_approval_resolves_it(kernel: ApprovalKernel, mock: MockLLM) -> None:
    """A turn cancelled while its call waits for a person closes the request: every client sees
    ``approval.resolved`` (denied, by the kernel, "the turn was cancelled") before ``turn.ended``, and the call never
    runs. Mutation check (done): `TurnHub.ask` without its CancelledError branch turns this red (no resolution)."""
    script_one_call(mock, "deploy", "mark-cancelled")

    async def go() -> list[Any]:
        async with await TurnClient.connect(kernel.data, client="tester", approvals=True) as client:
            turn = await client.start("go", session="cancelled-approval")
            async with asyncio.timeout(60):
                async for event in turn:
                    if isinstance(event, api.ApprovalRequested):
                        assert await client.cancel(event.session)
            return turn.events

    events = asyncio.run(go())
    types = [e.type for e in events]
    assert types.index("approval.resolved") < types.index("turn.ended"), types
    resolved = resolution(events)
    assert (resolved.approved, resolved.by, resolved.reason) == (False, "kernel", "the turn was cancelled")
    assert events[-1].stop_reason == "cancelled"
    assert kernel.received() == []


def test_a_queued_turn_is_cancelled_before_it_starts(kernel: ApprovalKernel, mock: MockLLM) -> None:
    """A second turn in a session waits (``status: queued``, a ``turn.queued`` event) behind the running one;
    ``turn/cancel`` with its id drops it — ``turn.ended`` cancelled and no ``turn.started`` — while the running
    turn goes on to its end, and the model is never asked for the dropped one. Mutation check (done): `TurnHub.
    cancel` ignoring ``turn`` (cancelling the running one) turns this red."""
    script_one_call(mock, "deploy", "mark-queued")
    session = "queue-session"

    async def go() -> tuple[dict[str, Any], list[Any], list[Any]]:
        async with (
            await TurnClient.connect(kernel.data, client="tester", approvals=True) as client,
            await TurnClient.connect(kernel.data, client="observer") as observer,
        ):
            seen = await observer.watch(session)
            first = await client.start("go", session=session)
            answer: dict[str, Any] = {}
            events: list[Any] = []
            async with asyncio.timeout(60):
                async for event in seen:
                    events.append(event)
                    if isinstance(event, api.ToolCallStarted):  # the first turn is certainly running now
                        answer = await client.connection.request(
                            api.TURN_START, {"text": "later", "session": session, "client": "tester"}
                        )
                        assert await client.cancel(session, answer["turn"])
                        async for own in first:  # the request goes to the client that can approve, not the observer
                            if isinstance(own, api.ApprovalRequested):
                                assert await client.approve(own, False, "no")
                                break
                    if isinstance(event, api.TurnEnded) and event.turn == first.turn:
                        break
            stored = (await client.read(session))["events"]
            return answer, events, stored

    answer, events, stored = asyncio.run(go())
    dropped = answer["turn"]
    assert answer["status"] == "queued"
    assert [(e.turn, e.ahead) for e in events if isinstance(e, api.TurnQueued)] == [(dropped, 1)]
    ends = [(e.turn, e.stop_reason) for e in events if isinstance(e, api.TurnEnded)]
    assert ends == [(dropped, "cancelled"), (events[0].turn, "denied")], ends
    assert not any(isinstance(e, api.TurnStarted) and e.turn == dropped for e in events)
    assert not any(e["turn"] == dropped for e in stored), "the dropped turn stored nothing"
    assert len(mock.requests) == 1, "the model was asked for the first turn only (its call; every call denied ends it)"
