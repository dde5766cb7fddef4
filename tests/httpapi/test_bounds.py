"""Every buffer kept for a client is bounded in bytes (issue 41 item 1), over a real `hologram up` with the http plugin
and the strict mock: a browser stream that stops reading is dropped at ``[plugins.http] stream_queue_bytes`` and
resumes from its ``Last-Event-ID`` with nothing lost or repeated; a control client that stops reading is dropped at
``[delivery] client_queue_bytes``; what the kernel keeps for replay stays within ``[delivery] replay_turn_bytes``
and ``replay_idle_bytes`` however many long turns ran, and an idle session's turn leaves the running replay.

The bounds are small here (a long turn is a few hundred KB of events) so each is passed for certain; what the
kernel keeps is read from its status (``delivery``: `hologram.agent.hub.TurnHub.stats`), not from RSS.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest

from hologram.clients import TurnClient
from hologram.kernel.control import call
from hologram.kernel.control import connect as connect_control
from mock_llm import MockLLM
from tests.kit.wait import wait_until, wait_until_async

from .kernel import HttpKernel

pytestmark = pytest.mark.slow

REPLAY_TURN_BYTES = 1024 * 1024  # `kernel`: small replays, the other bounds at their defaults
REPLAY_IDLE_BYTES = 256 * 1024
STREAM_BYTES = 1024 * 1024  # `queues`: small queues, the replay at its default (16 MiB: every turn here whole)
CLIENT_QUEUE_BYTES = 8 * 1024 * 1024  # above the largest event here (a 3 MB answer's turn.ended)


SLEEPER_MANIFEST = """\
[plugin]
name = "sleeper"
version = "0.1.0"
description = "watches a session, stops reading its connection until told to wake, then resumes from its seq"
run = { module = "sleeper", env = { PYTHONPATH = "{path}", SLEEPER_LOG = "{root}/sleeper.jsonl", SLEEPER_WAKE = "{root}/wake" } }

[facilities]
requires = ["kernel.turns"]
"""

SLEEPER = """\
import asyncio, json, os, time
from hologram.sdk import Plugin

plugin = Plugin("sleeper")
SESSION = "dropped-1"
tasks = set()


def log(record):
    with open(os.environ["SLEEPER_LOG"], "a") as f:
        f.write(json.dumps(record) + "\\n")


@plugin.on_start
async def begin(ctx):
    await plugin.facility("kernel.turns").call("watch", session=SESSION)


@plugin.on_turn_event
def on_turn_event(event):
    log({"type": event["type"], "seq": event["seq"]})
    if event["type"] == "watch.dropped":
        async def again():
            answer = await plugin.facility("kernel.turns").call("watch", session=SESSION, after=event["seq"])
            log({"type": "rewatched", "seq": answer["replay_last"]})
        tasks.add(asyncio.get_running_loop().create_task(again()))
    elif event["type"] == "turn.started" and not tasks:  # stop reading (the loop sleeps) until the test says wake
        deadline = time.monotonic() + 120
        while not os.path.exists(os.environ["SLEEPER_WAKE"]) and time.monotonic() < deadline:
            time.sleep(0.05)


if __name__ == "__main__":
    plugin.run()
"""


def started(root: Any, mock: MockLLM, settings: str, plugins: dict[str, tuple[str, str]] | None = None) -> HttpKernel:
    k = HttpKernel(root, mock, plugins=plugins)
    path = k.data / "settings.toml"
    path.write_text(path.read_text() + settings)
    k.start()
    return k


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory, mock: MockLLM) -> Iterator[HttpKernel]:
    replays = f"\n[delivery]\nreplay_turn_bytes = {REPLAY_TURN_BYTES}\nreplay_idle_bytes = {REPLAY_IDLE_BYTES}\n"
    k = started(tmp_path_factory.mktemp("replays"), mock, replays)
    yield k
    k.stop()


@pytest.fixture(scope="module")
def queues(tmp_path_factory: pytest.TempPathFactory, mock: MockLLM) -> Iterator[HttpKernel]:
    settings = f"\n[delivery]\nclient_queue_bytes = {CLIENT_QUEUE_BYTES}\n\n[plugins.http]\nstream_queue_bytes = {STREAM_BYTES}\n"
    k = started(tmp_path_factory.mktemp("queues"), mock, settings, {"sleeper": (SLEEPER_MANIFEST, SLEEPER)})
    yield k
    k.stop()


def delivery(kernel: HttpKernel) -> dict[str, Any]:
    found: dict[str, Any] = call(kernel.data, "status")["delivery"]
    return found


def watch_answer(kernel: HttpKernel, session: str, after: int) -> dict[str, Any]:
    """``turn/watch`` with ``after`` on a control connection: the kernel's answer (what it replayed, and how much)."""

    async def go() -> dict[str, Any]:
        connection = await connect_control(kernel.data, name="test")
        serving = asyncio.ensure_future(connection.serve())
        try:
            answer: dict[str, Any] = await connection.request(
                "turn/watch", {"session": session, "after": after, "client": "test"}
            )
            return answer
        finally:
            connection.close()
            serving.cancel()

    return asyncio.run(go())


def events_of(lines: Iterator[str], stop: Any) -> list[dict[str, Any]]:
    """SSE ``data:`` events until ``stop(event)`` or the stream's end."""
    events: list[dict[str, Any]] = []
    for line in lines:
        if line.startswith("data: "):
            events.append(orjson.loads(line[6:]))
            if stop(events[-1]):
                break
    return events


def ended(event: dict[str, Any]) -> bool:
    return bool(event["type"] == "turn.ended")


def read_whole_turn(kernel: HttpKernel, session: str, out: list[dict[str, Any]], opened: threading.Event) -> None:
    """A client that reads as it should: the session's stream from now until the turn's end."""
    with kernel.client() as client, client.stream("GET", f"/api/sessions/{session}/events") as response:
        lines = response.iter_lines()
        for line in lines:
            if line == ": connected":
                opened.set()
                break
        out += events_of(lines, ended)


def test_a_browser_stream_that_stops_reading_is_dropped_and_resumes_with_nothing_lost_or_repeated(
    queues: HttpKernel, mock: MockLLM
) -> None:
    """The stream reads until the approval the turn waits on (so it is certainly live), then stops reading while a
    ~10 MB turn streams: its tiny receive window and the server's socket buffer (up to 4 MB) fill, then the plugin's
    queue for it passes 1 MiB and the plugin drops it. Once the turn is over the client reads on: what the sockets
    held, then the end of its stream, before turn.ended; it reconnects with Last-Event-ID and gets the rest —
    together every event of the turn as the kernel replays it whole, each once. Mutation checks (done): the
    plugin's queue without its bound (`Listener._enqueue`'s check) turns this red (never dropped); resuming one
    seq later (`Channel.open_stream` watching with ``after + 1``) turns it red (an event lost); no grace after a
    drop (`Channel.close_stream` not holding the session) turns it red (the session went idle with the turn's
    end, and the kernel kept only its idle tail: events lost)."""
    kernel = queues
    answer = "".join(f"part {i} of the answer; " for i in range(120000))[: 3 * 1024 * 1024]  # 256 a delta: ~12k
    call_ = {"id": "a1", "name": "deploy", "arguments": json.dumps({"target": "mark-slow"})}
    mock.script(
        [
            {"reasoning_content": "r", "tool_calls": [call_]},
            {"reasoning_content": "r", "content": answer, "chunk_chars": 256},
        ]
    )
    small = httpx.HTTPTransport(socket_options=[(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)])
    headers = {"authorization": f"Bearer {kernel.token}"}
    with (
        kernel.client() as client,
        httpx.Client(transport=small, base_url=kernel.url, headers=headers, timeout=60) as slow,
    ):
        started = client.post("/api/turns", json={"text": "deploy, then a long answer", "session": "slow-1"}).json()
        with slow.stream("GET", "/api/sessions/slow-1/events", params={"after": "0"}) as response:
            lines = response.iter_lines()
            first = events_of(lines, lambda e: e["type"] == "approval.requested")
            answered = client.post(f"/api/sessions/slow-1/approvals/{first[-1]['approval']}", json={"approved": True})
            assert answered.json() == {"accepted": True}
            dropped = f"fell more than {STREAM_BYTES} bytes behind"
            wait_until(  # the slow stream reads nothing meanwhile: the turn streams on without it
                lambda: dropped in kernel.logs(), timeout=120, what="the plugin dropping the stream", interval=0.2
            )
            wait_until(  # and it comes back only after the turn is over (its session no longer busy)
                lambda: call(kernel.data, "turn/read", {"session": "slow-1", "turn": started["turn"]})["status"],
                timeout=120,
                what="the turn's end",
                accept=lambda status: status == "ended",
                interval=0.5,
            )
            stream = response.extensions["network_stream"].get_extra_info("socket")
            stream.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 * 1024 * 1024)  # read what it holds quickly
            rest = events_of(lines, ended)  # what the sockets held, then the stream's end
        assert rest and rest[-1]["type"] != "turn.ended", "the stream was not dropped: it had the whole turn"
        last = (first + rest)[-1]["seq"]
        with client.stream("GET", "/api/sessions/slow-1/events", params={"after": "0"}) as response:
            whole = events_of(response.iter_lines(), ended)  # the kernel's replay of the whole turn
        with slow.stream("GET", "/api/sessions/slow-1/events", headers={"last-event-id": str(last)}) as response:
            resumed = events_of(response.iter_lines(), ended)
    got = first + rest + resumed
    seqs = [e["seq"] for e in got]
    assert len(seqs) == len(set(seqs)), "a seq came twice"
    assert got[0]["turn"] == started["turn"] and got[-1]["type"] == "turn.ended"
    deltas = "".join(e["text"] for e in got if e["type"] == "content.delta")
    assert deltas == answer == got[-1]["output"], "a delta was lost"
    assert seqs == [e["seq"] for e in whole], "not every event of the turn"


def long_turn(kernel: HttpKernel, mock: MockLLM, session: str, answer: str) -> list[dict[str, Any]]:
    """A turn of ~15k small events in ``session``, read live by a page that opened the stream first."""
    mock.script([{"reasoning_content": "r", "content": answer}])
    seen: list[dict[str, Any]] = []
    opened = threading.Event()
    reader = threading.Thread(target=read_whole_turn, args=(kernel, session, seen, opened))
    reader.start()
    assert opened.wait(30)
    with kernel.client() as client:
        client.post("/api/turns", json={"text": "a long answer", "session": session}).raise_for_status()
    reader.join(120)
    assert seen and seen[-1]["type"] == "turn.ended"
    return seen


def test_the_replay_stays_within_its_bounds_and_an_idle_session_releases_it(kernel: HttpKernel, mock: MockLLM) -> None:
    """Five sessions, a ~2 MB turn each (4-character deltas). While a turn runs its replay stays within
    replay_turn_bytes; once the page is gone and the turn over, the session is no longer in use (its replay
    left), and what the idle sessions keep all together stays within replay_idle_bytes: the latest session's tail,
    ending with turn.ended, the older ones nothing. Mutation checks (done): `IdlePool.put` not evicting turns this
    red (idle over the bound); the hub keeping an idle session in use (`_forget_if_idle` a no-op) and the plugin
    never unwatching (`Channel._maybe_unwatch` a no-op) each turn it red (the session still in use, its replay
    kept, after the turn)."""
    answer = "".join(f"w{i} 字{i} " for i in range(6000))  # ~60k characters: ~15k deltas of 4
    sizes = []
    for i in range(5):
        seen = long_turn(kernel, mock, f"long-{i}", answer)
        assert "".join(e["text"] for e in seen if e["type"] == "content.delta") == answer
        sizes.append(sum(len(orjson.dumps(e)) for e in seen))
        stats = wait_until(
            lambda: delivery(kernel), timeout=30, what="the session left idle", accept=lambda d: d["sessions"] == 0
        )
        assert stats["replay_bytes"] == 0
        assert stats["idle_bytes"] <= REPLAY_IDLE_BYTES, stats
        assert stats["queued_bytes"] == 0
    assert min(sizes) > REPLAY_TURN_BYTES, "the turns were not long enough to pass the bound"
    latest = watch_answer(kernel, "long-4", 0)
    assert latest["gap"] and 0 < latest["replay_bytes"] <= REPLAY_IDLE_BYTES, latest
    oldest = watch_answer(kernel, "long-0", 0)
    assert oldest["replayed"] == 0, oldest  # nothing kept of it at all
    # the page reconnecting to the latest gets its tail, to the turn's end
    with (
        kernel.client() as client,
        client.stream("GET", "/api/sessions/long-4/events", params={"after": 0}) as response,
    ):
        tail = events_of(response.iter_lines(), ended)
    assert tail[0]["type"] != "turn.started" and tail[-1]["type"] == "turn.ended"
    assert sum(len(orjson.dumps(e)) for e in tail) <= REPLAY_IDLE_BYTES


def test_the_running_replay_is_bounded_while_the_turn_runs(kernel: HttpKernel, mock: MockLLM) -> None:
    """A long turn held at an approval after ~2 MB of events: what the kernel keeps of it is within
    replay_turn_bytes (plus the newest event), and a client resuming from its start is told of the gap.
    Mutation check (done): `Replay.add` not trimming turns this red."""
    chatter = "".join(f"w{i} 字{i} " for i in range(6000))
    call_ = {"id": "b1", "name": "deploy", "arguments": json.dumps({"target": "mark-bounded"})}
    mock.script(
        [
            {"reasoning_content": chatter, "tool_calls": [call_]},
            {"reasoning_content": "r", "content": "done"},
        ]
    )
    with kernel.client() as client:
        client.post("/api/turns", json={"text": "think a lot, then deploy", "session": "held-1"}).raise_for_status()
        with client.stream("GET", "/api/sessions/held-1/events", params={"after": "0"}) as response:
            lines = response.iter_lines()
            asked = events_of(lines, lambda e: e["type"] == "approval.requested")[-1]
            stats = delivery(kernel)
            assert 0 < stats["replay_max_bytes"] <= REPLAY_TURN_BYTES + len(orjson.dumps(asked)), stats
            resumed = watch_answer(kernel, "held-1", 0)
            assert resumed["gap"] and resumed["replay_bytes"] <= REPLAY_TURN_BYTES + len(orjson.dumps(asked))
            client.post(f"/api/sessions/held-1/approvals/{asked['approval']}", json={"approved": True})
            assert events_of(lines, ended)[-1]["stop_reason"] == "answer"


def test_a_control_client_that_stops_reading_is_dropped_at_its_queue_bound(queues: HttpKernel, mock: MockLLM) -> None:
    """A control connection starts a turn of ~15 MB of events and reads nothing: once 8 MiB wait for it, the
    kernel drops it — its queue released, its connection closed — and the kernel keeps serving. Mutation check
    (done): `Watcher.put` without its bound turns this red (the connection stays open, the queue grows)."""
    kernel = queues
    answer = "x" * (5 * 1024 * 1024)
    mock.script([{"reasoning_content": "r", "content": answer, "chunk_chars": 1024}])
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(str(kernel.data / "hologram.sock"))
    try:
        hello = {"protocol_version": 2, "client": {"name": "stuck", "version": "0"}, "capabilities": {}}
        for i, (method, params) in enumerate(
            [("initialize", hello), ("turn/start", {"text": "a long answer", "session": "stuck-1"})]
        ):
            sock.sendall(orjson.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + b"\n")
        wait_until(
            lambda: "client stuck stopped reading" in kernel.logs(), timeout=60, what="the kernel dropping the client"
        )
        assert delivery(kernel)["queued_bytes"] < CLIENT_QUEUE_BYTES  # released
        sock.settimeout(60)
        while sock.recv(1 << 16):  # what the socket held, then the end: the kernel closed the connection
            pass
    finally:
        sock.close()
    with kernel.client() as client:  # the kernel serves on
        assert client.get("/api/sessions").status_code == 200


def test_a_plugin_that_stops_reading_is_dropped_told_and_resumes_from_its_seq(
    queues: HttpKernel, mock: MockLLM
) -> None:
    """The sleeper plugin watches a session and, at its turn's start, stops reading its connection while ~12 MB of
    events come (the largest 2 MB: a reading client never has more than two such waiting). Past 8 MiB waiting for it the kernel drops it; woken, it reads what its pipe held, then a
    ``watch.dropped`` naming the last seq it was sent, watches again with that as ``after``, and gets the rest:
    every event of the turn once, in order, as the terminal watching beside it saw them. Mutation checks (done):
    no notice to a dropped plugin (`TurnService.plugin_watcher`'s ``dropped`` a no-op) turns this red (it never
    learns, and misses the rest); the notice's seq one too low (``watcher.sent_seq - 1``) turns it red (an event
    twice)."""
    kernel = queues
    log = kernel.root / "sleeper.jsonl"
    text = "y" * (2 * 1024 * 1024)  # reasoning and answer: ~12 MB of events, none over 2 MB
    mock.script([{"reasoning_content": text, "content": text, "chunk_chars": 256}])

    async def terminal() -> list[int]:
        async with await TurnClient.connect(kernel.data, client="terminal") as client:
            turn = await client.start("a long answer", session="dropped-1", on_disconnect="continue")
            await wait_until_async(
                lambda: "client sleeper stopped reading" in kernel.logs(), timeout=120, what="the sleeper dropped"
            )
            (kernel.root / "wake").touch()
            async with asyncio.timeout(120):
                async for _ in turn:
                    pass
            await wait_until_async(  # the terminal stays until the sleeper has it all (the replay is kept meanwhile)
                lambda: json.loads(log.read_text().splitlines()[-1])["type"],
                timeout=120,
                what="the sleeper resuming to the turn's end",
                accept=lambda kind: kind == "turn.ended",
                retry_on=(ValueError,),  # a line half written
            )
            return [event.seq for event in turn.events]

    seqs = asyncio.run(terminal())
    records = [json.loads(line) for line in log.read_text().splitlines()]
    kinds = [r["type"] for r in records]
    assert "watch.dropped" in kinds and "rewatched" in kinds, kinds[-5:]
    notice = records[kinds.index("watch.dropped")]
    before = [r["seq"] for r in records[: kinds.index("watch.dropped")]]
    assert notice["seq"] == before[-1], "the notice names the last seq the plugin was sent"
    got = [r["seq"] for r in records if r["type"] not in ("watch.dropped", "rewatched")]
    assert got == seqs, "every event of the turn once, in order"
