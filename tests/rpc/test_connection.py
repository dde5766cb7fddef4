"""JSON-RPC over a real child process's stdin/stdout (fork/exec, asyncio on both sides)."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import pytest

from hologram.rpc import (
    APPLICATION_ERROR,
    INTERNAL_ERROR,
    MESSAGE_TOO_LARGE,
    METHOD_NOT_FOUND,
    ConnectionClosed,
    RequestTimeout,
    RpcError,
)
from tests.kit.loop import run
from tests.kit.wait import wait_until_async

from .helpers import spawn_child

pytestmark = pytest.mark.slow


def test_round_trip_and_clean_exit_on_stdin_close() -> None:
    async def main() -> int:
        async with spawn_child() as child:
            params = {"text": "héllo\nworld ✓", "n": [1, 2.5, None, True], "nested": {"a": {"b": []}}}
            assert await child.conn.request("echo", params) == params
            assert await child.conn.request("echo", [1, 2]) == [1, 2]
            assert await child.conn.request("echo") is None
            with pytest.raises(TypeError):
                await child.conn.request("echo", "bare")
            proc = child.proc
        return await proc.wait()

    assert run(main()) == 0  # the child saw EOF on stdin, its serve() returned, it exited cleanly


def test_concurrent_requests_are_matched_by_id() -> None:
    async def main() -> None:
        async with spawn_child() as child:
            n = 20
            answered: list[int] = []

            async def one(i: int) -> Any:
                result = await child.conn.request("last_first", {"n": n, "value": i})
                answered.append(i)
                return result

            # the child holds every request until all n are open, then answers the last one first: the answers
            # come back in reverse order however fast either side runs, and only if the requests really overlap
            results = await asyncio.gather(*(one(i) for i in range(n)))
            assert results == list(range(n))
            assert answered == list(reversed(range(n))), "the answers did not come back out of order"
            assert await child.conn.request("max_active") == n  # the child really ran them all at once

    run(main())


def test_requests_in_both_directions_at_once() -> None:
    async def main() -> None:
        async with spawn_child() as child:
            active = 0
            peak = 0

            all_in = asyncio.Event()

            async def add(params: Any) -> Any:
                nonlocal active, peak
                active += 1
                peak = max(peak, active)
                if active == 10:
                    all_in.set()
                # held until all ten nested requests are in: overlap by construction, not by a 50 ms sleep that a
                # slow child might not fill (a kernel running them one at a time fails here, after the bound)
                await asyncio.wait_for(all_in.wait(), 20)
                active -= 1
                return params["a"] + params["b"]

            child.conn.register("parent/add", add)
            calls = [
                child.conn.request("call_back", {"method": "parent/add", "params": {"a": i, "b": 100}})
                for i in range(10)
            ]
            assert await asyncio.gather(*calls) == [i + 100 for i in range(10)]
            assert peak == 10  # the child's nested requests overlapped in the kernel's handlers

    run(main())


def test_handler_errors_become_error_responses_and_the_connection_lives() -> None:
    async def main() -> None:
        async with spawn_child() as child:
            with pytest.raises(RpcError) as rpc_err:
                await child.conn.request("fail", {"kind": "rpc"})
            assert (rpc_err.value.code, rpc_err.value.message) == (APPLICATION_ERROR, "tool said no")
            assert rpc_err.value.data == {"why": "test"}
            with pytest.raises(RpcError) as internal:
                await child.conn.request("fail", {"kind": "other"})
            assert internal.value.code == INTERNAL_ERROR and "ValueError: boom" in internal.value.message
            with pytest.raises(RpcError) as missing:
                await child.conn.request("no/such/method")
            assert missing.value.code == METHOD_NOT_FOUND

            async def unserialisable(params: Any) -> Any:
                return object()

            child.conn.register("parent/bad", unserialisable)
            with pytest.raises(RpcError) as bad:
                await child.conn.request("call_back", {"method": "parent/bad"})
            assert bad.value.code == INTERNAL_ERROR and "not JSON-serialisable" in bad.value.message
            assert await child.conn.request("echo", ["still alive"]) == ["still alive"]

    run(main())


GARBAGE = [
    "garbage\n",
    '{"jsonrpc":"2.0","id":\n',  # half JSON
    '{"jsonrpc":"1.0","method":"x","id":5}\n',  # wrong version
    '{"jsonrpc":"2.0","id":999999,"result":1}\n',  # answer to a request never sent
    "[1,2]\n",  # batch
    "\xff\xfe\n",  # not UTF-8
]


def test_garbage_from_the_child_is_counted_and_reading_continues() -> None:
    async def main() -> None:
        async with spawn_child() as child:
            assert await child.conn.request("raw", {"data": "".join(GARBAGE)}) == "ok"
            assert child.conn.malformed_count == len(GARBAGE)
            reasons = [reason for _, reason in child.malformed]
            assert any(r.startswith("not JSON") for r in reasons)
            assert any("jsonrpc must be '2.0'" in r for r in reasons)
            assert any("unknown id 999999" in r for r in reasons)
            assert any("batch" in r for r in reasons)
            assert child.malformed[0][0] == "garbage"
            assert await child.conn.request("echo", [1]) == [1]

    run(main())


def test_garbage_to_the_child_is_answered_with_parse_errors() -> None:
    async def main() -> None:
        async with spawn_child() as child:
            child.stdin.write(b"not json\n{half\n")
            assert await child.conn.request("echo", ["x"]) == ["x"]
            assert (await child.conn.request("stats"))["malformed"] == 2
            # the child answered each parse error with an id-null error: we count them, not as garbage
            assert child.conn.peer_error_count == 2
            assert child.conn.malformed_count == 0

    run(main())


def test_oversized_lines_are_dropped_in_both_directions() -> None:
    async def main() -> None:
        async with spawn_child(max_line=1024 * 1024) as child:
            # child → kernel: 2 MiB line against a 1 MiB limit
            assert await child.conn.request("raw", {"data": "x", "repeat": 2 * 1024 * 1024, "tail": "\n"}) == "ok"
            assert child.conn.malformed_count == 1
            assert "exceeds" in child.malformed[0][1]
            # kernel → child: a 17 MiB line against the child's default 16 MiB limit
            child.stdin.write(b"y" * (17 * 1024 * 1024) + b"\n")
            assert await child.conn.request("echo", ["after"]) == ["after"]
            assert (await child.conn.request("stats"))["malformed"] == 1
            assert child.conn.peer_error_count == 1
            # our own oversized message is refused before it is sent
            with pytest.raises(RpcError) as too_big:
                await child.conn.request("echo", ["z" * (2 * 1024 * 1024)])
            assert too_big.value.code == MESSAGE_TOO_LARGE
            assert await child.conn.request("echo", ["still fine"]) == ["still fine"]

    run(main(), timeout=60)


def test_eof_fails_pending_requests() -> None:
    # a "plugin" that reads one request and exits without answering
    silent = [sys.executable, "-c", "import sys; sys.stdin.readline()"]

    async def main() -> None:
        async with spawn_child(argv=silent) as child:
            with pytest.raises(ConnectionClosed):
                await child.conn.request("echo", [1], timeout=10)
            await asyncio.wait_for(child.serve, 5)  # serve() returned normally on EOF
            assert child.conn.closed and child.conn.pending_count == 0
            with pytest.raises(ConnectionClosed):
                await child.conn.request("echo", [2])

    run(main())


def test_timeout_and_late_answer_is_not_garbage() -> None:
    async def main() -> None:
        async with spawn_child() as child:
            with pytest.raises(RequestTimeout):
                await child.conn.request("sleep", {"s": 0.3, "value": 1}, timeout=0.05)
            assert child.conn.pending_count == 0
            # the child answers `idle` only after its sleep ended, and it wrote the late answer first: by the time
            # `idle` is answered, the late answer has been read (not merely "probably, after 0.5 s")
            assert await child.conn.request("idle") == "idle"
            assert await child.conn.request("echo", [2]) == [2]
            assert child.conn.malformed_count == 0

    run(main())


def test_close_after_eof_still_cancels_the_handlers_of_the_peer_that_left() -> None:
    """The control server closes a client's connection when it reaches EOF; a handler still working for that
    client (a long turn) must be cancelled then. Mutation check (done): returning early from close() when
    EOF had already marked the connection closed leaves the handler running and turns this red."""
    from hologram.rpc import Connection
    from hologram.rpc.memory_pipe import memory_pipe_pair

    async def scenario() -> None:
        (server_reader, server_writer), (client_reader, client_writer) = memory_pipe_pair()
        server = Connection(server_reader, server_writer, name="server")
        started, cancelled = asyncio.Event(), asyncio.Event()

        async def slow(params: object) -> None:
            started.set()
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                cancelled.set()
                raise

        server.register("slow", slow)
        serving = asyncio.ensure_future(server.serve())
        client_writer.write(b'{"jsonrpc": "2.0", "id": 1, "method": "slow"}\n')
        await asyncio.wait_for(started.wait(), 5)
        client_writer.close()  # the client goes away: EOF on the server's side
        await asyncio.wait_for(serving, 5)
        assert server.closed
        server.close()
        await asyncio.wait_for(cancelled.wait(), 5)
        del client_reader

    run(scenario())


async def _counts_until(child: Any, key: str, want: int, timeout: float = 20) -> dict[str, int]:
    """Ask the child for its stoppable counters until `key` reaches `want` (a slow machine just takes longer)."""

    async def counts() -> dict[str, int]:
        answer: dict[str, int] = await child.conn.request("stoppable/counts")
        return answer

    return await wait_until_async(
        counts, accept=lambda c: c[key] >= want, timeout=timeout, what=f"the child's {key} count to reach {want}"
    )


def test_a_cancelled_request_cancels_its_handler_in_the_peer() -> None:
    """Cancelling the caller of `request` sends `$/cancel`; the peer cancels that request's handler task, and
    the peer's late "cancelled" answer is not counted as garbage. The handler really was running first
    (its start is counted by the child), so the cancel is what stopped it.
    Mutation check (done): not calling `_cancel_remote` in `Connection.request` leaves the child's handler
    sleeping (cancelled stays 0); an `_on_cancel` that finds no task does the same."""

    async def main() -> None:
        async with spawn_child() as child:
            call = asyncio.ensure_future(child.conn.request("stoppable", {"s": 120}))
            assert (await _counts_until(child, "started", 1))["started"] == 1
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
            assert (await _counts_until(child, "cancelled", 1))["cancelled"] == 1
            assert await child.conn.request("echo", [3]) == [3]  # the answer to the cancel has arrived by now
            assert child.conn.malformed_count == 0 and child.conn.pending_count == 0

    run(main())


def test_a_timed_out_request_is_cancelled_and_its_final_answer_comes_within_the_grace() -> None:
    """After a timeout the peer gets `$/cancel`; its reply to the cancel (a tool's "stopped: …") arrives as
    `RequestTimeout.answer` when it comes within `grace`; without a grace it is dropped, quietly.
    Mutation check (done): `_final_answer` returning None at once (no grace wait) turns the first assertion red;
    no `$/cancel` on timeout leaves the child's handler running (cancelled stays 0)."""

    async def main() -> None:
        async with spawn_child() as child:
            with pytest.raises(RequestTimeout) as caught:
                await child.conn.request("stoppable", {"s": 120, "answer": True}, timeout=0.2, grace=20)
            assert caught.value.answer == {"stopped": True}
            assert (await _counts_until(child, "cancelled", 1))["cancelled"] == 1
            with pytest.raises(RequestTimeout) as caught:
                await child.conn.request("stoppable", {"s": 120, "answer": True}, timeout=0.2)
            assert caught.value.answer is None
            assert (await _counts_until(child, "cancelled", 2))["cancelled"] == 2
            assert await child.conn.request("echo", [4]) == [4]
            assert child.conn.malformed_count == 0 and child.conn.pending_count == 0

    run(main())


def test_cancel_of_an_answered_or_unknown_request_is_ignored() -> None:
    """`$/cancel` and the answer may cross on the wire: a cancel for an id with no running handler is
    dropped without an answer (it is a notification), and the connection goes on."""

    async def main() -> None:
        async with spawn_child() as child:
            assert await child.conn.request("echo", [1]) == [1]
            await child.conn.notify("$/cancel", {"id": 1})
            await child.conn.notify("$/cancel", {"id": "nope"})
            await child.conn.notify("$/cancel", [])
            assert await child.conn.request("echo", [2]) == [2]
            assert child.conn.peer_error_count == 0 and child.conn.malformed_count == 0

    run(main())


def test_a_cancel_read_in_the_same_chunk_as_its_request_still_reaches_the_handler() -> None:
    """A request and its `$/cancel` often arrive in one read (a slow peer, a cancel right after sending). The
    request's first step runs eagerly, then its Task is cancelled before that Task's first step: the cancel
    must still be thrown into the handler, which answers. Mutation check (done): the old `_Resumed`, an
    `async def run(): await self` wrapper, is cancelled before it starts and leaves the handler suspended
    forever — `cancelled` never gets set and no answer comes (this test's first wait times out)."""
    from hologram.rpc import Connection
    from hologram.rpc.memory_pipe import memory_pipe_pair

    async def scenario() -> None:
        (server_reader, server_writer), (client_reader, client_writer) = memory_pipe_pair()
        server = Connection(server_reader, server_writer, name="server")
        client = Connection(client_reader, client_writer, name="client")
        started, cancelled = asyncio.Event(), asyncio.Event()

        async def slow(params: object) -> str:
            started.set()
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                cancelled.set()
                return "stopped"
            return "finished"

        server.register("slow", slow)
        serving = [asyncio.ensure_future(c.serve()) for c in (server, client)]
        answers: asyncio.Queue[Any] = asyncio.Queue()
        client._on_response = lambda line, response: answers.put_nowait(response)  # type: ignore[method-assign]
        client_writer.write(
            b'{"jsonrpc": "2.0", "id": 1, "method": "slow"}\n{"jsonrpc": "2.0", "method": "$/cancel", "params": {"id": 1}}\n'
        )
        await asyncio.wait_for(cancelled.wait(), 10)
        assert started.is_set()
        response = await asyncio.wait_for(answers.get(), 10)
        assert (response.id, response.result) == (1, "stopped")
        for c in (server, client):
            c.close()
        for task in serving:
            task.cancel()

    run(scenario())
