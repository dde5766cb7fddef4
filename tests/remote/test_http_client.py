"""`HttpTurnClient` against an in-process fake of the HTTP API (`httpx.MockTransport`): the SSE parsing and the
resume edge cases that a real server produces only by accident — a connection cut mid-event, a server that
replays events the client already has, a stream that keeps failing. What the real server does end to end is
tests/e2e/test_remote_cli_e2e.py.

Mutation checks (done):
- `HttpTurnClient._deliver` without the ``event.seq <= last`` check → test_a_replayed_event_is_not_delivered_twice
  is red (the deltas "ab" arrive twice).
- `_read_once` not sending ``Last-Event-ID`` on reconnect → test_a_dropped_stream_resumes_after_the_last_seq is
  red (the header is missing: the fake server cannot resume, the client gives up — KernelGone).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from hologram.api import turn as api
from hologram.base.errors import HologramError
from hologram.clients.http_client import TOKEN_REFUSED, HttpTurnClient
from hologram.clients.stream import KernelGone
from tests.kit.loop import run

URL = "http://kernel.test:8080"
SESSION, TURN = "s1", "t1"


def event(seq: int, kind: str, **fields: Any) -> dict[str, Any]:
    return {"type": kind, "session": SESSION, "turn": TURN, "seq": seq, **fields}


def frame(data: dict[str, Any]) -> bytes:
    return f"id: {data['seq']}\ndata: {json.dumps(data)}\n\n".encode()


TURN_EVENTS = [
    event(1, "turn.started", text="hi", client="web"),
    event(2, "content.delta", text="a"),
    event(3, "content.delta", text="b"),
    event(4, "content.delta", text="c"),
    event(5, "content.delta", text="d"),
    event(6, "turn.ended", stop_reason="answer", output="abcd"),
]


class Dropped(httpx.AsyncByteStream):
    """The body of an SSE response: these chunks, then (``cut``) the connection breaks."""

    def __init__(self, chunks: list[bytes], cut: bool) -> None:
        self.chunks, self.cut = chunks, cut

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            yield chunk
            await asyncio.sleep(0)
        if self.cut:
            raise httpx.ReadError("connection reset by peer")
        await asyncio.Event().wait()  # a live stream: nothing more (the client closes it)


class FakeServer:
    """/api/info, /api/turns, approvals and the events route; ``connections`` decides what each SSE connection
    sends: a function of (connection number, Last-Event-ID) → (events, cut)."""

    def __init__(self, connections: Any, *, token: str = "right", turn_api: int | None = 1) -> None:
        self.connections = connections
        self.token = token
        self.turn_api = turn_api
        self.sse_headers: list[dict[str, str]] = []
        self.approvals: list[dict[str, Any]] = []

    async def __call__(self, request: httpx.Request) -> httpx.Response:
        if request.headers.get("authorization") != f"Bearer {self.token}":
            return httpx.Response(401, json={"error": {"code": "unauthorized", "message": "no token"}})
        path = request.url.path
        if path == "/api/info":
            return httpx.Response(200, json={"version": "9.9", "turn_api": self.turn_api, "providers": 1})
        if path == "/api/turns":
            return httpx.Response(200, json={"session": SESSION, "turn": TURN})
        if path.startswith(f"/api/sessions/{SESSION}/approvals/"):
            self.approvals.append(json.loads(request.content))
            return httpx.Response(200, json={"accepted": True})
        if path == f"/api/sessions/{SESSION}/events":
            self.sse_headers.append(dict(request.headers))
            last = request.headers.get("last-event-id")
            events, cut = self.connections(len(self.sse_headers), None if last is None else int(last))
            body = [frame(e) for e in events]
            return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=Dropped(body, cut))
        return httpx.Response(404, json={"error": {"code": "not_found", "message": path}})


async def one_turn(server: FakeServer, **options: Any) -> tuple[HttpTurnClient, list[Any]]:
    transport = httpx.MockTransport(server)
    async with await HttpTurnClient.connect(URL, "right", transport=transport, **options) as client:
        stream = await client.start("hi")
        await stream.result()
        return client, stream.events


def text_of(events: list[Any]) -> str:
    return "".join(e.text for e in events if isinstance(e, api.ContentDelta))


def test_a_dropped_stream_resumes_after_the_last_seq() -> None:
    """The first connection breaks after "ab" with half of the next event sent; the client reconnects with
    Last-Event-ID 3 and the server (which honours it) sends the rest: "abcd", nothing lost."""

    def connections(n: int, last: int | None) -> tuple[list[dict[str, Any]], bool]:
        if n == 1:
            return TURN_EVENTS[:3], True
        if last is None:  # a resume that does not say where: this server cannot continue it
            return [], True
        return [e for e in TURN_EVENTS if e["seq"] > last], False

    server = FakeServer(connections)
    client, events = run(one_turn(server, resume_within_s=2.0))
    assert text_of(events) == "abcd"
    assert [e.seq for e in events] == [1, 2, 3, 4, 5, 6]
    assert server.sse_headers[1]["last-event-id"] == "3"
    assert client.reconnects == 1


def test_a_replayed_event_is_not_delivered_twice() -> None:
    """A server that resumes from an older point (its replay buffer's start) re-sends "ab": dropped by seq."""

    def connections(n: int, last: int | None) -> tuple[list[dict[str, Any]], bool]:
        return (TURN_EVENTS[:3], True) if n == 1 else (TURN_EVENTS, False)

    _, events = run(one_turn(FakeServer(connections)))
    assert text_of(events) == "abcd"
    assert [e.seq for e in events] == [1, 2, 3, 4, 5, 6]


def test_a_stream_that_keeps_failing_gives_up_with_the_url() -> None:
    def connections(n: int, last: int | None) -> tuple[list[dict[str, Any]], bool]:
        return (TURN_EVENTS[:2], True) if n == 1 else ([], True)

    server = FakeServer(connections)

    async def main() -> str:
        transport = httpx.MockTransport(server)
        async with await HttpTurnClient.connect(URL, "right", transport=transport, resume_within_s=0.5) as client:
            stream = await client.start("hi")
            with pytest.raises(KernelGone):
                await stream.result()
            assert text_of(stream.events) == "a"
            return client.failure or ""

    failure = run(main())
    assert "lost the event stream of http://kernel.test:8080" in failure
    assert len(server.sse_headers) > 2  # it did retry


def test_a_refused_token_says_where_to_get_the_right_one() -> None:
    transport = httpx.MockTransport(FakeServer(lambda n, last: ([], False)))
    with pytest.raises(HologramError) as caught:
        run(HttpTurnClient.connect(URL, "wrong", transport=transport))
    assert caught.value.problems[0].message == TOKEN_REFUSED
    assert "wrong" not in caught.value.render()


def test_another_turn_api_version_is_named() -> None:
    transport = httpx.MockTransport(FakeServer(lambda n, last: ([], False), turn_api=3))
    with pytest.raises(HologramError) as caught:
        run(HttpTurnClient.connect(URL, "right", transport=transport))
    assert "speaks turn API version 3" in caught.value.render()
    assert "upgrade" in caught.value.render()
    transport = httpx.MockTransport(FakeServer(lambda n, last: ([], False), turn_api=None))
    with pytest.raises(HologramError) as caught:
        run(HttpTurnClient.connect(URL, "right", transport=transport))
    assert "does not say which turn API it speaks (an older Hologram?)" in caught.value.render()


def test_an_unreachable_url_is_named() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused")

    with pytest.raises(HologramError) as caught:
        run(HttpTurnClient.connect(URL, "right", transport=httpx.MockTransport(refuse)))
    assert f"cannot reach {URL}: connection refused" in caught.value.render()


def test_a_client_that_cannot_ask_refuses_approvals_of_its_turn() -> None:
    """The HTTP API starts turns able to ask; `approvals=False` (not on a terminal) answers no at once."""
    asked = event(2, "approval.requested", approval="ap1", call_id="c1", tool="guarded", plugin="p", summary="x")
    ended = event(3, "turn.ended", stop_reason="answer", output="ok")

    server = FakeServer(lambda n, last: ([TURN_EVENTS[0], asked, ended], False))
    run(one_turn(server, approvals=False))
    assert len(server.approvals) == 1 and server.approvals[0]["approved"] is False
    server = FakeServer(lambda n, last: ([TURN_EVENTS[0], asked, ended], False))
    run(one_turn(server, approvals=True))
    assert server.approvals == []  # the CLI's prompt answers; the client does not


@pytest.mark.parametrize("url", ["host:8080", "ftp://host", "http://", "http://[::1"])
def test_a_url_that_cannot_be_one_is_refused_with_an_example(url: str) -> None:
    with pytest.raises(HologramError) as caught:
        HttpTurnClient(url, "right")
    assert "e.g. http://host:8080" in caught.value.render()


def test_a_turns_stream_closes_at_its_end_and_the_next_turn_reads_anew() -> None:
    """A script that runs many turns does not keep one idle SSE connection per finished turn open; the next
    turn of the session opens its own, resuming after the last seq (the old turn is not shown again).
    Mutation check (done): `_wanted` ignoring ended turns → red (the first connection stays open and the
    second turn waits on it for events this server sends only to a new one)."""
    second = [{**e, "turn": "t2", "seq": e["seq"] + 10} for e in TURN_EVENTS]

    class TwoTurns(FakeServer):
        turns = 0

        async def __call__(self, request: httpx.Request) -> httpx.Response:
            if request.url.path == "/api/turns":
                TwoTurns.turns += 1
                return httpx.Response(200, json={"session": SESSION, "turn": f"t{TwoTurns.turns}"})
            return await super().__call__(request)

    def connections(n: int, last: int | None) -> tuple[list[dict[str, Any]], bool]:
        latest = TURN_EVENTS if n == 1 else second  # the server keeps the latest turn for a reconnect
        return [e for e in latest if last is None or e["seq"] > last], False

    server = TwoTurns(connections)

    async def main() -> tuple[list[Any], list[Any], int]:
        async with await HttpTurnClient.connect(URL, "right", transport=httpx.MockTransport(server)) as client:
            first = await client.start("one")
            await first.result()
            for _ in range(100):  # the reader ends right after delivering turn.ended
                if not client._readers:
                    break
                await asyncio.sleep(0.01)
            readers = len(client._readers)
            then = await client.start("two")
            await then.result()
            return first.events, then.events, readers

    one, two, readers = run(main())
    assert readers == 0
    assert text_of(one) == text_of(two) == "abcd"
    assert {e.turn for e in two} == {"t2"}
    assert server.sse_headers[1]["last-event-id"] == "6"
