"""A turn's input is bounded before it costs memory, on every path (issue 42: 10 MB of text over the control
socket took the kernel to 23 GB until the OOM killer ended it, with nothing printed).

Through a real `hologram up` (http plugin, strict mock). The kernel runs under a watchdog that kills it past
``GUARD_MB`` over its idle RSS, so a regression fails these tests instead of taking the machine down; the
memory *target* (+200 MB) is `tools/bench/input_rss.py`'s.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from hologram.clients import TurnClient
from hologram.rpc import RpcError
from hologram.rpc.errors import INVALID_PARAMS
from mock_llm import MockLLM

from .kernel import HttpKernel

HUGE = 10 * 1024 * 1024
ACCEPTED = 190_000
GUARD_MB = 1500


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) / 1024 for line in status if line.startswith("VmRSS:"))


class Watchdog(threading.Thread):
    """Kills ``pid`` when its RSS passes ``limit_mb`` (and says so)."""

    def __init__(self, pid: int, limit_mb: float) -> None:
        super().__init__(daemon=True)
        self.pid, self.limit_mb, self.fired, self.stop = pid, limit_mb, False, threading.Event()

    def run(self) -> None:
        import os
        import signal

        while not self.stop.wait(0.01):
            try:
                if rss_mb(self.pid) > self.limit_mb:
                    self.fired = True
                    os.kill(self.pid, signal.SIGKILL)
                    return
            except (OSError, StopIteration):
                return


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory, mock: MockLLM) -> Iterator[HttpKernel]:
    k = HttpKernel(tmp_path_factory.mktemp("limits"), mock)
    k.start()
    assert k.process is not None
    dog = Watchdog(k.process.pid, rss_mb(k.process.pid) + GUARD_MB)
    dog.start()
    k.watchdog = dog  # type: ignore[attr-defined]
    yield k
    dog.stop.set()
    k.stop()
    assert not dog.fired, f"the kernel passed +{GUARD_MB} MB and was killed"


def text_of(size: int) -> str:
    unit = "Revenue grew this quarter. 季度收入增长。 "
    return (unit * (size // len(unit) + 1))[:size]


async def _start(data: Path, text: str) -> str:
    async with await TurnClient.connect(data, client="limits") as client:
        turn = await client.start(text)
        ended = await asyncio.wait_for(turn.result(), 120)
        assert ended.stop_reason == "answer", ended
        return turn.session


def test_ten_megabytes_over_the_control_socket_is_refused_naming_the_limit(kernel: HttpKernel, mock: MockLLM) -> None:
    mock.reset()
    with pytest.raises(RpcError) as refused:
        asyncio.run(_start(kernel.data, text_of(HUGE)))
    assert refused.value.code == INVALID_PARAMS
    assert "10,485,760 characters, over the limit of 200,000 ([agent] max_input_chars" in refused.value.message
    assert mock.requests == [], "a refused input reached the model"
    assert kernel.status()["plugins"], "the kernel stopped serving"


def test_ten_megabytes_over_http_is_refused(kernel: HttpKernel, mock: MockLLM) -> None:
    mock.reset()
    with kernel.client() as http:
        response = http.post("/api/turns", json={"text": text_of(HUGE)})
        assert response.status_code in (400, 413), response.text
        assert "at most" in response.json()["error"]["message"]
        v1 = http.post(
            "/v1/chat/completions", json={"model": "hologram", "messages": [{"role": "user", "content": text_of(HUGE)}]}
        )
        assert v1.status_code in (400, 413), v1.text
    assert mock.requests == []


def test_a_long_input_under_the_limit_is_answered_and_stored_whole(kernel: HttpKernel, mock: MockLLM) -> None:
    mock.reset()
    mock.script([{"content": "Read it."}] * 2)
    text = text_of(ACCEPTED)
    session = asyncio.run(_start(kernel.data, text))
    stored = kernel.events(session)["events"]
    assert [e["data"]["text"] for e in stored if e["kind"] == "input"] == [text]
    assert text in str(mock.requests[0].body["messages"][-1]["content"])
    with kernel.client() as http:
        response = http.post("/api/turns", json={"text": text})
        assert response.status_code == 200, response.text
        with http.stream("GET", f"/api/sessions/{response.json()['session']}/events") as events:
            for line in events.iter_lines():
                if line.startswith("data: ") and '"turn.ended"' in line:
                    break
    assert not kernel.watchdog.fired  # type: ignore[attr-defined]


def test_http_and_v1_are_held_to_the_kernels_one_limit(kernel: HttpKernel, mock: MockLLM) -> None:
    """Under the HTTP body limit but over ``[agent] max_input_chars``: the kernel's refusal, as a 400 naming the
    setting, on the web API and on /v1 alike (there is no second limit of the http plugin's own)."""
    mock.reset()
    text = text_of(250_000)
    with kernel.client() as http:
        web = http.post("/api/turns", json={"text": text})
        v1 = http.post(
            "/v1/chat/completions", json={"model": "hologram", "messages": [{"role": "user", "content": text}]}
        )
    for response in (web, v1):
        assert response.status_code == 400, response.text
        assert "over the limit of 200,000 ([agent] max_input_chars" in response.json()["error"]["message"]
    assert mock.requests == []
