"""Delivery to the page that loses nothing (turn API version 2), over a real `hologram up` with the http plugin:
the http plugin gets its sessions' events over its own connection (not the shared ring, which dropped events
over 1 MiB), and ``seq`` continues across a kernel restart.

Mutation checks (done, each turned the named test red): the hub publishing to the ring again and not sending
the plugin its events (`TurnService.plugin_watcher` send a no-op: the page never sees the request); the
sequence counter not persisted (`SeqCounter(None)` in `TurnHub`: after the restart the events have seqs
below the browser's Last-Event-ID and it is sent nothing); the hub not keeping idle sessions' last turn
(`IdlePool.put` keeping nothing: the turn that ran while the browser was away is not replayed).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest

from hologram.api import turn as api
from hologram.clients import TurnClient
from mock_llm import MockLLM

from .kernel import HttpKernel

pytestmark = pytest.mark.slow
BIG = 5 * 1024 * 1024  # characters of one tool argument
FAILURE_BOUND_S = 40  # a stream that brings nothing is a failure, not a hang (a pass takes well under a second)


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory, mock: MockLLM) -> Iterator[HttpKernel]:
    k = HttpKernel(tmp_path_factory.mktemp("delivery"), mock)
    k.start()
    yield k
    k.stop()


def stream(client: httpx.Client, session: str, stop: Any, last_id: int | None = None) -> list[dict[str, Any]]:
    """The page's SSE stream of ``session`` until ``stop(event)`` (``last_id``: as EventSource reconnects)."""
    headers = {"last-event-id": str(last_id)} if last_id is not None else {}
    events: list[dict[str, Any]] = []
    deadline = time.monotonic() + FAILURE_BOUND_S
    with client.stream("GET", f"/api/sessions/{session}/events", headers=headers) as response:
        assert response.status_code == 200, response.read()
        for line in response.iter_lines():  # a keepalive comment comes every 15 s: the bound is checked then
            assert time.monotonic() < deadline, f"no end of the stream within {FAILURE_BOUND_S} s: {events[-3:]}"
            if line.startswith("data: "):
                events.append(orjson.loads(line[6:]))
                if stop(events[-1]):
                    break
    return events


def test_an_approval_for_a_five_megabyte_argument_reaches_the_page_and_is_answered(
    kernel: HttpKernel, mock: MockLLM
) -> None:
    target = "mark-big-" + "x" * (BIG - 9)
    call = {"id": "big1", "name": "deploy", "arguments": json.dumps({"target": target})}
    mock.script(
        [
            {"reasoning_content": "r", "tool_calls": [call], "chunk_chars": 1024 * 1024},
            {"reasoning_content": "r", "content": "deployed the big one"},
        ]
    )
    with kernel.client() as client:
        started = client.post("/api/turns", json={"text": "deploy the big one", "session": "big-1"}).json()
        answered: list[int] = []

        def stop(event: dict[str, Any]) -> bool:
            if event["type"] == "approval.requested":
                assert len(event["arguments"]["target"]) == BIG
                answer = client.post(
                    f"/api/sessions/big-1/approvals/{event['approval']}", json={"approved": True, "reason": "fine"}
                )
                answered.append(answer.status_code)
            return bool(event["type"] == "turn.ended")

        events = stream(client, "big-1", stop, last_id=0)
    assert events[0]["turn"] == started["turn"]
    assert answered == [200]
    resolved = next(e for e in events if e["type"] == "approval.resolved")
    assert (resolved["approved"], resolved["by"]) == (True, "http")
    assert events[-1]["stop_reason"] == "answer"
    assert len(kernel.record.read_text()) > BIG, "the recorder received the 5 MB call"


def test_a_browser_reconnecting_after_a_kernel_restart_gets_every_event_it_missed_once(
    kernel: HttpKernel, mock: MockLLM
) -> None:
    """The page saw a turn to its end (its last id N); the kernel restarts; a turn runs in the session from the
    terminal while the page is away; the page reconnects with ``Last-Event-ID: N`` and gets that whole turn,
    every seq above N, none twice. (Last test of the module: it restarts the kernel.)"""
    mock.script([{"reasoning_content": "r", "content": "before the restart"}])
    with kernel.client() as client:
        client.post("/api/turns", json={"text": "first", "session": "restart-1"})
        before = stream(client, "restart-1", lambda e: e["type"] == "turn.ended", last_id=0)
    last_id = before[-1]["seq"]
    kernel.stop()
    kernel.start()
    mock.script([{"reasoning_content": "r", "content": "while the page was away"}])

    async def from_the_terminal() -> list[Any]:
        async with await TurnClient.connect(kernel.data, client="cli") as terminal:
            turn = await terminal.start("second", session="restart-1")
            async with asyncio.timeout(60):
                async for _ in turn:
                    pass
            return turn.events

    missed = asyncio.run(from_the_terminal())
    with kernel.client() as client:
        after = stream(client, "restart-1", lambda e: e["type"] == "turn.ended", last_id=last_id)
    assert [e["seq"] for e in after] == [e.seq for e in missed], "every event the page missed, in order, once"
    assert all(e["seq"] > last_id for e in after)
    assert after[0]["type"] == api.TurnStarted(session="", turn="").type
    assert "".join(e["text"] for e in after if e["type"] == "content.delta") == "while the page was away"
