"""The HTTP channel end to end, the first steps: a real `hologram up --port 0`, the plugin's files, the
token, a turn started over HTTP and its events on the session's SSE stream."""

from __future__ import annotations

import stat
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest

from mock_llm import MockLLM

from .kernel import HttpKernel

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory, mock: MockLLM) -> Iterator[HttpKernel]:
    k = HttpKernel(tmp_path_factory.mktemp("http"), mock)
    k.start()
    yield k
    k.stop()


def sse_events(response: httpx.Response, until: str = "turn.ended") -> list[dict[str, Any]]:
    """The events of an open SSE response, up to the first of type ``until``; each ``id`` equals its seq."""
    events: list[dict[str, Any]] = []
    event_id = None
    for line in response.iter_lines():
        if line.startswith("id: "):
            event_id = int(line[4:])
        elif line.startswith("data: "):
            event = orjson.loads(line[6:])
            assert event["seq"] == event_id, (event, event_id)
            events.append(event)
            if event["type"] == until:
                break
    return events


def test_the_plugin_announces_where_it_listens_and_keeps_its_token_private(kernel: HttpKernel) -> None:
    info = kernel.info()
    assert info["url"] == f"http://127.0.0.1:{info['port']}" and info["port"] not in (0, 8080)
    assert set(info) == {"url", "host", "port", "pid", "tls"} and info["tls"] is False
    token_file = kernel.data / "http-token"
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    assert len(kernel.token) >= 40  # 32 random bytes, urlsafe base64
    assert kernel.token not in (kernel.data / "http.json").read_text()


def test_a_turn_started_over_http_streams_its_events(kernel: HttpKernel, mock: MockLLM) -> None:
    mock.reset()
    mock.script([{"reasoning_content": "think", "content": "hello from the mock"}])
    with kernel.client() as client:
        info = client.get("/api/info").json()
        assert info["turn_api"] == 2
        started = client.post("/api/turns", json={"text": "hi there"}).json()
        with client.stream("GET", f"/api/sessions/{started['session']}/events") as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            events = sse_events(response)
    assert events[0]["type"] == "turn.started" and events[0]["turn"] == started["turn"]
    assert events[0]["client"] == "web" and events[0]["text"] == "hi there"
    text = "".join(e["text"] for e in events if e["type"] == "content.delta")
    assert text == "hello from the mock" == events[-1]["output"]
    seqs = [e["seq"] for e in events]
    assert seqs == sorted(set(seqs))  # in order, none twice (seq counts the kernel's events, across sessions)


def test_a_session_read_over_http_has_its_title_and_pages(kernel: HttpKernel, mock: MockLLM) -> None:
    """The kernel titles a new session from its first input (issue 41); ``?limit=`` reads a page of the
    session with it (the page reads a title that way), and a bad limit is a 400 naming the parameter."""
    mock.reset()
    mock.script([{"content": "one"}])
    with kernel.client() as client:
        sid = client.post("/api/turns", json={"text": "  Plan the trip\nto Lisbon"}).json()["session"]
        with client.stream("GET", f"/api/sessions/{sid}/events?after=0") as response:
            assert sse_events(response)[-1]["output"] == "one"
        whole = client.get(f"/api/sessions/{sid}").json()
        page = client.get(f"/api/sessions/{sid}?limit=1").json()
        bad = client.get(f"/api/sessions/{sid}?limit=0")
        listed = {s["id"]: s["title"] for s in client.get("/api/sessions").json()["sessions"]}
    assert whole["title"] == page["title"] == listed[sid] == "Plan the trip"
    assert len(whole["events"]) == 3 and whole["next_before"] is None  # input, response, output
    assert [e["kind"] for e in page["events"]] == ["output"] and page["next_before"] == page["events"][0]["seq"]
    assert bad.status_code == 400 and "limit" in bad.json()["error"]["message"]
