"""``sessions/append`` (issue 38): a message stored in a session as a turn's input is — who said it included — with
no turn and no model call; a later turn's request carries it as user content. A message appended while a turn
runs waits for it, so it never lands between that turn's tool call and its result. ``sessions/create`` with an id
makes that session once. A real `TurnService` and agent on the strict mock and a real SQLite store.

Mutation checks (done): `TurnHub.append` writing at once even while a turn runs turns
``test_an_append_during_a_turn_waits_for_it`` red (the message lands before the turn's result, and the next
request's history breaks the call/result pairing); dropping ``identity.stored()`` from `TurnService.append`'s data
turns ``test_appended_messages_are_stored_and_reach_the_next_request`` red (no partner stored).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from hologram.agent import KernelTool, ToolInvocation
from hologram.agent.service import TurnService
from hologram.rpc import RpcError
from mock_llm import MockLLM
from tests.kit.loop import run

from .helpers import make_agent


def user_contents(request: Any) -> list[str]:
    return [m["content"] for m in request.body["messages"] if m["role"] == "user"]


def test_appended_messages_are_stored_and_reach_the_next_request(tmp_path: Path, mock_llm: MockLLM) -> None:
    service = TurnService(make_agent(tmp_path, mock_llm))
    mock_llm.script([{"content": "alice said she likes pottery"}])

    async def go() -> dict[str, Any]:
        try:
            append = service.facility_methods()["sessions_append"]  # kernel.turns, as the qq plugin calls it
            for who, text in (("10001", "alice (10001): I like pottery"), ("10002", "bob (10002): nice")):
                answer = await append("qq", session="qq:group:1", text=text, partner=who)
                assert answer == {"session": "qq:group:1", "status": "stored"}
            assert mock_llm.requests == []  # nothing asked the model
            started = await service.start(
                None, {"text": "carol (10003): what does alice like?", "session": "qq:group:1"}, channel="qq"
            )
            assert started["status"] == "running"
            await wait_idle(service, "qq:group:1")
            return await service.read_session({"session": "qq:group:1"})
        finally:
            await service.aclose()

    read = run(go())
    first, second = read["events"][:2]
    assert first["kind"] == "input" and first["channel"] == "qq"
    assert first["data"] == {"text": "alice (10001): I like pottery", "client": "qq", "partner": "10001",
                             "appended": True}  # fmt: skip
    assert second["data"]["partner"] == "10002"
    assert read["title"] == "alice (10001): I like pottery"  # a session the append created is titled from it
    [request] = mock_llm.requests
    assert user_contents(request) == [
        "alice (10001): I like pottery",
        "bob (10002): nice",
        "carol (10003): what does alice like?",
    ]
    assert not any("pottery" in m["content"] for m in request.body["messages"] if m["role"] == "system")
    assert mock_llm.rejections == []


def test_an_append_during_a_turn_waits_for_it(tmp_path: Path, mock_llm: MockLLM) -> None:
    gate: asyncio.Event | None = None
    entered: asyncio.Event | None = None

    async def hold(arguments: dict[str, Any], invocation: ToolInvocation) -> str:
        assert gate is not None and entered is not None
        entered.set()
        await gate.wait()
        return "held"

    tool = KernelTool("hold", "waits", hold, {"type": "object", "properties": {}})
    service = TurnService(make_agent(tmp_path, mock_llm, tools=[tool]))
    mock_llm.script(
        [{"tool_calls": [{"id": "c1", "name": "hold", "arguments": "{}"}]}, {"content": "done"}, {"content": "ok"}]
    )

    async def go() -> list[dict[str, Any]]:
        nonlocal gate, entered
        gate, entered = asyncio.Event(), asyncio.Event()
        try:
            await service.start(None, {"text": "hold on", "session": "s"})
            await asyncio.wait_for(entered.wait(), 30)  # the turn is inside its tool call
            answer = await service.append("cli", {"session": "s", "text": "said meanwhile"})
            assert answer["status"] == "queued"
            second = await service.append("cli", {"session": "s", "text": "and then this"})
            assert second["status"] == "queued"
            gate.set()
            await wait_idle(service, "s")
            await service.start(None, {"text": "next", "session": "s"})
            await wait_idle(service, "s")
            read = await service.read_session({"session": "s"})
            return list(read["events"])
        finally:
            await service.aclose()

    events = run(go())
    kinds = [(e["kind"], e["data"].get("text") or e["data"].get("content") or "") for e in events]
    assert kinds == [
        ("input", "hold on"),
        ("response", ""),
        ("tool_result", "held"),
        ("response", "done"),
        ("output", "done"),
        ("input", "said meanwhile"),
        ("input", "and then this"),
        ("input", "next"),
        ("response", "ok"),
        ("output", "ok"),
    ], kinds
    assert user_contents(mock_llm.requests[-1])[-3:] == ["said meanwhile", "and then this", "next"]
    assert mock_llm.rejections == []


async def wait_idle(service: TurnService, session: str) -> None:
    while service.hub.running(session) or (session in service.hub.sessions and service.hub.sessions[session].appending):
        state = service.hub.sessions.get(session)
        task = state.task if state is not None else None
        if task is not None:
            await task
        else:
            await asyncio.sleep(0)


def test_create_with_an_id_makes_it_once_and_append_checks_its_params(tmp_path: Path, mock_llm: MockLLM) -> None:
    service = TurnService(make_agent(tmp_path, mock_llm))

    async def go() -> None:
        try:
            made = await service.create_session("qq", {"session": "qq:group:7", "title": "QQ group 7"})
            assert made == {"session": "qq:group:7", "title": "QQ group 7", "channel": "qq", "created": True}
            again = await service.create_session("qq", {"session": "qq:group:7", "title": "other"})
            assert again == {"session": "qq:group:7", "title": "QQ group 7", "created": False}
            for bad, field in (({"session": "a/b"}, "session"), ({"session": "x", "title": "t" * 201}, "title")):
                try:
                    await service.create_session("qq", bad)
                except RpcError as exc:
                    assert exc.message.startswith(f"sessions/create: {field}:"), exc.message
                else:
                    raise AssertionError(f"{bad} was accepted")
            try:
                await service.append("qq", {"session": "s", "text": "x", "approvals": True})
            except RpcError as exc:
                assert "approvals" in exc.message and "sessions/append" in exc.message
            else:
                raise AssertionError("an unknown key was accepted")
        finally:
            await service.aclose()

    run(go())
