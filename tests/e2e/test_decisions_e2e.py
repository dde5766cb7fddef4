"""Approvals as decisions, end to end: a real `hologram up` with shell, code, the recorder (a tool that needs
approval and records every call it receives) and the http plugin on loopback; the strict mock as the model;
`TurnClient` over the control socket and `HttpTurnClient` / raw HTTP over the http plugin.

What is proven (each through what reached the recorder, the settings file, the events):
- ``approve_for_session``: the next call of the same tool and subject in that session runs without a request;
  another session is asked; a deleted session's grant is gone;
- ``always``: settings.toml gets the rule (its other lines kept), the next turn is not asked, ``GET
  /api/approvals`` (what the web settings page lists) has it;
- ``cancel``: the turn ends cancelled, every request of the step is resolved, nothing reaches the recorder;
- version 1's ``approved: bool`` still answers (as ``approve_once`` / ``deny``), on the socket and over HTTP;
- ``POST /api/turns`` carries turn/start's params: a ``scene`` sent over HTTP is the scene the kernel stored.

Mutation checks (done, each turned the named test red): `TurnHub.ask` ignoring grants (the second call is
asked); `TurnHub.forget` keeping grants (the deleted session's new turn is not asked); `Approver._always`
returning before `remember` (no rule in the file, the next turn asked); `TurnHub.answer` not cancelling on
``cancel`` (the turn runs on to its answer); `Channel.start` dropping ``**params`` (no scene in scenes.db);
`Executor._approve_all` not awaiting the waits it cancelled (as main had it: the requests were resolved after
``turn.ended``, so the cancel test saw none resolved).
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import tomllib

from hologram.api import turn as api
from hologram.clients import TurnClient
from hologram.clients.http_client import HttpTurnClient
from hologram.memory.scenes.store import SCENES_DB
from mock_llm import MockLLM
from tests.kit.manifests import copy_shipped

from .test_approvals_e2e import ApprovalKernel, script_one_call
from .test_remote_cli_e2e import RemoteKernel

pytestmark = pytest.mark.slow


class DecisionKernel(ApprovalKernel):
    """`ApprovalKernel` plus the http plugin on an ephemeral port (`url`, `token` once it listens)."""

    url = ""
    token = ""

    def __init__(self, root: Path, mock: MockLLM) -> None:
        super().__init__(root, mock)
        copy_shipped("http", root / "manifests")
        self.hologram("build", "--no-discover", "-m", str(root / "manifests"), "-o", str(self.lock), check=True)
        settings = self.data / "settings.toml"
        settings.write_text("# the user's own comment\n" + settings.read_text())

    def start(self) -> None:
        RemoteKernel.start(self)  # type: ignore[arg-type]  # the same start: --port 0, then http.json

    def http(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {self.token}"}, timeout=30)


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory, mock: MockLLM) -> Iterator[DecisionKernel]:
    k = DecisionKernel(tmp_path_factory.mktemp("decisions"), mock)
    k.start()
    yield k
    k.stop()


@pytest.fixture(autouse=True)
def fresh(mock: MockLLM, kernel: DecisionKernel) -> None:
    mock.reset()
    kernel.record.unlink(missing_ok=True)


async def socket_turn(client: TurnClient, session: str, answer: bool | str | None) -> list[Any]:
    turn = await client.start("deploy", session=session)
    async with asyncio.timeout(60):
        async for event in turn:
            if isinstance(event, api.ApprovalRequested) and answer is not None:
                assert await client.approve(event, answer)
    return turn.events


def asked(events: list[Any]) -> int:
    return sum(isinstance(e, api.ApprovalRequested) for e in events)


def resolved(events: list[Any]) -> list[api.ApprovalResolved]:
    return [e for e in events if isinstance(e, api.ApprovalResolved)]


def test_approve_for_session_lets_the_same_call_run_in_that_session_only(kernel: DecisionKernel, mock: MockLLM) -> None:
    async def go() -> list[list[Any]]:
        async with await TurnClient.connect(kernel.data, client="grants", approvals=True) as client:
            out = []
            for session, answer in (("grant-1", "approve_for_session"), ("grant-1", None), ("grant-2", "deny")):
                script_one_call(mock, "deploy", "mark-session")
                out.append(await socket_turn(client, session, answer))
            assert await client.delete("grant-1")
            script_one_call(mock, "deploy", "mark-session")
            out.append(await socket_turn(client, "grant-1", "deny"))
            return out

    first, second, other, after_delete = asyncio.run(go())
    assert asked(first) == 1 and resolved(first)[0].decision == "approve_for_session"
    assert asked(second) == 0 and not resolved(second), "the second call in the session was not asked"
    assert second[-1].stop_reason == "answer"
    assert asked(other) == 1 and resolved(other)[0].decision == "deny", "another session is asked"
    assert asked(after_delete) == 1, "a deleted session's grant went with it"
    assert kernel.received() == ["mark-session", "mark-session"], "the granted call ran twice, the denied never"


def test_always_writes_the_policy_and_the_next_turn_is_not_asked(kernel: DecisionKernel, mock: MockLLM) -> None:
    async def go() -> tuple[list[Any], list[Any]]:
        async with await HttpTurnClient.connect(kernel.url, kernel.token, client="cli", approvals=True) as client:
            script_one_call(mock, "deploy", "mark-always")
            turn = await client.start("deploy", session="always-1")
            async with asyncio.timeout(60):
                async for event in turn:
                    if isinstance(event, api.ApprovalRequested):
                        assert await client.approve(event, "always")
            script_one_call(mock, "deploy", "mark-always")
            again = await client.start("deploy", session="always-2")
            await again.result()
            return turn.events, again.events

    first, second = asyncio.run(go())
    [done] = resolved(first)
    assert (done.approved, done.decision, done.by) == (True, "always", "http")
    settings = kernel.data / "settings.toml"
    text = settings.read_text()
    assert text.startswith("# the user's own comment\n"), "what the user wrote is kept"
    policy = tomllib.loads(text)
    assert policy["approvals"]["tools"]["deploy"]["allow"] == ["mark-always"]
    assert policy["approvals"]["timeout_s"] == 3 and policy["providers"][0]["name"] == "mock"
    assert asked(second) == 0 and second[-1].stop_reason == "answer", "the policy was re-read: not asked"
    assert kernel.received() == ["mark-always", "mark-always"]
    with kernel.http() as http:
        listed = http.get("/api/approvals").json()
    assert {"tool": "deploy", "mode": "ask", "allow": ["mark-always"]} in listed["rules"]


def test_cancel_denies_ends_the_turn_and_resolves_every_open_request(kernel: DecisionKernel, mock: MockLLM) -> None:
    calls = [{"id": f"c{i}", "name": "deploy", "arguments": json.dumps({"target": f"mark-cancel-{i}"})} for i in (1, 2)]
    mock.script([{"reasoning_content": "r", "tool_calls": calls}, {"reasoning_content": "r", "content": "never"}])

    async def go() -> list[Any]:
        async with await TurnClient.connect(kernel.data, client="stopper", approvals=True) as client:
            turn = await client.start("deploy two", session="cancel-1")
            requests: list[api.ApprovalRequested] = []
            async with asyncio.timeout(60):
                async for event in turn:
                    if isinstance(event, api.ApprovalRequested):
                        requests.append(event)
                        if len(requests) == 2:
                            assert await client.approve(requests[0], "cancel", "stop it")
            return turn.events

    events = asyncio.run(go())
    assert events[-1].stop_reason == "cancelled"
    by_call = {e.call_id: e for e in resolved(events)}
    assert by_call.keys() == {"c1", "c2"}, "both requests were resolved"
    assert (by_call["c1"].approved, by_call["c1"].decision, by_call["c1"].reason) == (False, "cancel", "stop it")
    assert (by_call["c2"].approved, by_call["c2"].by) == (False, "kernel")
    assert kernel.received() == []
    assert len(mock.requests) == 1, "the turn did not go on to another step"


def test_version_1_approved_bool_still_answers_on_the_socket_and_over_http(
    kernel: DecisionKernel, mock: MockLLM
) -> None:
    async def go() -> tuple[list[Any], list[Any]]:
        async with await TurnClient.connect(kernel.data, client="v1", approvals=True) as client:
            script_one_call(mock, "deploy", "mark-v1-yes")
            yes = await socket_turn(client, "v1-1", True)
        async with await HttpTurnClient.connect(kernel.url, kernel.token, approvals=True) as remote:
            script_one_call(mock, "deploy", "mark-v1-no")
            turn = await remote.start("deploy", session="v1-2")
            async with asyncio.timeout(60):
                async for event in turn:
                    if isinstance(event, api.ApprovalRequested):
                        with kernel.http() as http:  # the raw body a version-1 client sends
                            path = f"/api/sessions/v1-2/approvals/{event.approval}"
                            assert http.post(path, json={"approved": False}).json() == {"accepted": True}
            return yes, turn.events

    yes, no = asyncio.run(go())
    assert [(r.approved, r.decision) for r in resolved(yes)] == [(True, "approve_once")]
    assert [(r.approved, r.decision) for r in resolved(no)] == [(False, "deny")]
    assert kernel.received() == ["mark-v1-yes"]


def test_a_scene_sent_over_http_reaches_the_kernel(kernel: DecisionKernel, mock: MockLLM) -> None:
    key = "chan:qq/peer:group_http"
    mock.script([{"reasoning_content": "r", "content": "hello"}])

    async def go() -> api.TurnEnded:
        async with await HttpTurnClient.connect(kernel.url, kernel.token) as client:
            return await (await client.start("hi", session="scene-http", scene=key, partner="group_http")).result()

    assert asyncio.run(go()).stop_reason == "answer"
    with sqlite3.connect(kernel.data / SCENES_DB) as db:
        keys = [k for (k,) in db.execute("SELECT key FROM scenes")]
    assert key in keys, keys
    with kernel.http() as http:  # a bad param over HTTP is the socket's error, naming the field
        bad = http.post("/api/turns", json={"text": "x", "scene": "not a key"})
        unknown = http.post("/api/turns", json={"text": "x", "partnr": "typo"})
    assert bad.status_code == 400 and "scene" in bad.json()["error"]["message"]
    assert unknown.status_code == 400 and "partnr" in unknown.json()["error"]["message"]
