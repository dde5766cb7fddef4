"""The session's SSE stream over a real `hologram up`: a client that goes away mid-turn and comes back with
``Last-Event-ID`` (or ``?after=``) gets exactly the rest — the deltas it holds add up to the answer, no
``seq`` twice, none missing — and an approval asked while it was away is answered after the reconnect.

Mutation checks (done): `Channel.open_stream` ignoring ``after`` (watching from seq 0, its listener taking every
seq) turns the resume test red (seqs repeated); watching with ``after + 1`` turns it red (an event missing).
(`Listener.put`'s own seq check is a second guard: ignoring ``after`` in the watch alone leaves them green.)
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest

from mock_llm import MockLLM
from tests.e2e.test_approvals_e2e import script_one_call

from .kernel import HttpKernel

pytestmark = pytest.mark.slow

ANSWER = "".join(f"word{i} 词{i} " for i in range(80))  # ~160 deltas of 4 characters from the mock


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory, mock: MockLLM) -> Iterator[HttpKernel]:
    k = HttpKernel(tmp_path_factory.mktemp("sse"), mock)
    k.start()
    yield k
    k.stop()


def read(
    client: httpx.Client, session: str, *, stop: Any, headers: dict[str, str] | None = None, after: int | None = None
) -> list[dict[str, Any]]:
    """Open the stream, collect events until ``stop(events)`` is true, then drop the connection."""
    params = {"after": str(after)} if after is not None else None
    events: list[dict[str, Any]] = []
    with client.stream("GET", f"/api/sessions/{session}/events", headers=headers, params=params) as response:
        assert response.status_code == 200, response.read()
        last_id = None
        for line in response.iter_lines():
            if line.startswith("id: "):
                last_id = int(line[4:])
            elif line.startswith("data: "):
                event = orjson.loads(line[6:])
                assert event["seq"] == last_id
                events.append(event)
                if stop(events):
                    break
    return events


def deltas(events: list[dict[str, Any]]) -> int:
    return sum(e["type"] == "content.delta" for e in events)


def ended(events: list[dict[str, Any]]) -> bool:
    return bool(events) and events[-1]["type"] == "turn.ended"


def test_reconnecting_mid_answer_loses_and_repeats_no_delta(kernel: HttpKernel, mock: MockLLM) -> None:
    mock.reset()
    mock.script([{"reasoning_content": "plan", "content": ANSWER}])
    with kernel.client() as client:
        started = client.post("/api/turns", json={"text": "a long answer", "session": "resume-1"}).json()
        first = read(client, "resume-1", stop=lambda es: deltas(es) >= 5)  # the running turn, from its start
        second = read(
            client, "resume-1", stop=lambda es: deltas(es) >= 5, headers={"last-event-id": str(first[-1]["seq"])}
        )
        third = read(client, "resume-1", stop=ended, after=second[-1]["seq"])
        whole = read(client, "resume-1", stop=ended, after=0)  # the whole turn, replayed
    assert first[0]["type"] == "turn.started" and first[0]["turn"] == started["turn"]
    seqs = [e["seq"] for e in first + second + third]
    assert len(seqs) == len(set(seqs)), "a seq came twice"
    assert seqs == [e["seq"] for e in whole], "a seq is missing"  # the replay of the whole turn
    text = "".join(e["text"] for e in first + second + third if e["type"] == "content.delta")
    assert text == ANSWER == third[-1]["output"]
    assert deltas(first) == 5 and deltas(second) == 5  # the connections really were cut mid-answer


def test_an_approval_asked_while_away_is_answered_after_the_reconnect(kernel: HttpKernel, mock: MockLLM) -> None:
    """The turn waits on the approval, so the reconnect is certainly mid-turn (whatever the machine's speed)."""
    mock.reset()
    script_one_call(mock, "deploy", "mark-web")
    with kernel.client() as client:
        client.post("/api/turns", json={"text": "deploy", "session": "resume-2"})
        before = read(client, "resume-2", stop=lambda es: es[-1]["type"] == "approval.requested")
        asked = before[-1]
        after: list[dict[str, Any]] = []
        with client.stream(
            "GET", "/api/sessions/resume-2/events", headers={"last-event-id": str(asked["seq"])}
        ) as response:
            answered = client.post(
                f"/api/sessions/resume-2/approvals/{asked['approval']}", json={"approved": True, "reason": "ok"}
            )
            assert answered.json() == {"accepted": True}
            for line in response.iter_lines():
                if line.startswith("data: "):
                    after.append(orjson.loads(line[6:]))
                    if ended(after):
                        break
        again = client.post(f"/api/sessions/resume-2/approvals/{asked['approval']}", json={"approved": False})
        assert again.json() == {"accepted": False}  # already decided
        whole = read(client, "resume-2", stop=ended, after=0)
    seqs = [e["seq"] for e in before + after]
    assert seqs == [e["seq"] for e in whole], seqs  # no gap, no repeat
    assert not any(e["type"] == "approval.requested" for e in after)  # not asked twice on this stream
    resolved = next(e for e in after if e["type"] == "approval.resolved")
    assert (resolved["approved"], resolved["by"], resolved["reason"]) == (True, "http", "ok")  # the plugin answered
    assert after[-1]["stop_reason"] == "answer" and "mark-web" in kernel.received()


def test_cancel_stops_a_running_turn(kernel: HttpKernel, mock: MockLLM) -> None:
    mock.reset()
    script_one_call(mock, "deploy", "mark-cancelled")
    with kernel.client() as client:
        client.post("/api/turns", json={"text": "deploy", "session": "resume-3"})
        read(client, "resume-3", stop=lambda es: es[-1]["type"] == "approval.requested")
        assert client.post("/api/sessions/resume-3/cancel").json() == {"cancelled": True}
        rest = read(client, "resume-3", stop=ended, after=0)
        assert rest[-1]["stop_reason"] == "cancelled"
        assert client.post("/api/sessions/resume-3/cancel").json() == {"cancelled": False}
        assert client.delete("/api/sessions/resume-3").json() == {"deleted": True}
        assert client.get("/api/sessions/resume-3").status_code == 404
    assert "mark-cancelled" not in kernel.received()
