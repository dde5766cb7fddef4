"""Many SSE clients at once against a real `hologram up` and the strict mock: 20 clients on 20 sessions,
each running a turn at the same time, and 5 clients watching one session. Every client must get every
event of its session exactly once and in order — counted, not timed (the machine may be slow or busy).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest

from mock_llm import MockLLM

from .kernel import HttpKernel

pytestmark = pytest.mark.slow

ANSWER = "".join(f"part{i} 段{i} " for i in range(25))  # ~50 deltas of 4 characters each
SESSIONS = 20
WATCHERS = 5


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory, mock: MockLLM) -> Iterator[HttpKernel]:
    k = HttpKernel(tmp_path_factory.mktemp("load"), mock)
    k.start()
    yield k
    k.stop()


async def watch(client: httpx.AsyncClient, session: str, connected: asyncio.Event) -> list[dict[str, Any]]:
    """One SSE client: the events of ``session`` up to its turn's end; ``connected`` once the stream is open."""
    events: list[dict[str, Any]] = []
    async with client.stream("GET", f"/api/sessions/{session}/events") as response:
        assert response.status_code == 200
        async for line in response.aiter_lines():
            if line == ": connected":
                connected.set()
            elif line.startswith("data: "):
                events.append(orjson.loads(line[6:]))
                if events[-1]["type"] == "turn.ended":
                    break
    return events


def check(events: list[dict[str, Any]]) -> None:
    """Exactly one turn's events, once each, in order, its deltas adding up to the answer."""
    seqs = [e["seq"] for e in events]
    assert seqs == sorted(set(seqs)), seqs  # in order, none twice (the kernel's seq is shared by all sessions)
    assert [e["type"] for e in events].count("turn.started") == 1 == [e["type"] for e in events].count("turn.ended")
    assert events[0]["type"] == "turn.started" and events[-1]["type"] == "turn.ended"
    assert "".join(e["text"] for e in events if e["type"] == "reasoning.delta") == "thinking"
    assert "".join(e["text"] for e in events if e["type"] == "content.delta") == ANSWER == events[-1]["output"]


def test_many_clients_each_get_every_event_of_their_session_once_in_order(kernel: HttpKernel, mock: MockLLM) -> None:
    mock.reset()
    mock.script([], default={"reasoning_content": "thinking", "content": ANSWER})

    async def go() -> tuple[dict[str, list[dict[str, Any]]], list[list[dict[str, Any]]]]:
        limits = httpx.Limits(max_connections=SESSIONS + WATCHERS + 10)
        headers = {"authorization": f"Bearer {kernel.token}"}
        async with httpx.AsyncClient(base_url=kernel.url, headers=headers, limits=limits, timeout=120) as client:
            names = [f"load-{i}" for i in range(SESSIONS)]
            opened = {name: asyncio.Event() for name in [*names, *(f"shared-{j}" for j in range(WATCHERS))]}
            own = {n: asyncio.create_task(watch(client, n, opened[n])) for n in names}
            shared = [asyncio.create_task(watch(client, "shared", opened[f"shared-{j}"])) for j in range(WATCHERS)]
            async with asyncio.timeout(120):
                await asyncio.gather(*(e.wait() for e in opened.values()))  # every stream is open: then start
                starts = [client.post("/api/turns", json={"text": f"go {n}", "session": n}) for n in names]
                starts.append(client.post("/api/turns", json={"text": "go shared", "session": "shared"}))
                for response in await asyncio.gather(*starts):
                    assert response.status_code == 200, response.text
                results = {n: await t for n, t in own.items()}
                return results, [await t for t in shared]

    per_session, watchers = asyncio.run(go())
    assert len(per_session) == SESSIONS and len(watchers) == WATCHERS
    for name, events in per_session.items():
        check(events)
        assert {e["session"] for e in events} == {name}
    for events in watchers:
        check(events)
        assert events == watchers[0]  # all five saw the same events
    assert len(mock.requests) == SESSIONS + 1 and mock.rejections == []
