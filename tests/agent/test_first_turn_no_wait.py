"""The first turn after `hologram up` does not wait for the embedding model: `attach_agent` takes the model
from `hologram.kernel.preload` (which loads it beside the kernel), and a turn that arrives before it is there is
answered with BM25 alone (docs/performance.md, "up → first answer").

Real objects: `Kernel` (not run), `attach_agent` with the kernel's settings, the turn loop with an instant
LLM; `_preload`'s loader is replaced by one that blocks until the test releases it — a model that never
finishes loading during the turn.

Mutation check (done): making `SessionMemory.prepare` wait for the model (``await
asyncio.to_thread(self.embedder_ready.wait)`` at its top) turns ``test_a_turn_is_answered_while_the_model_still_loads``
red (the turn times out instead of answering)."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from hologram.agent import attach_agent
from hologram.kernel import Kernel
from hologram.kernel import preload as _preload
from hologram.llm import ChatRequest, ChatResult
from hologram.plan.lock import LOCK_VERSION, Lock


class Instant:
    def __init__(self) -> None:
        self.requests: list[ChatRequest] = []

    async def complete(self, request: ChatRequest, on_delta: Any = None) -> ChatResult:
        self.requests.append(request)
        return ChatResult("hello back", None, (), None, "stop")


def test_a_turn_is_answered_while_the_model_still_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    release, asked = threading.Event(), threading.Event()

    def loading() -> None:
        asked.set()  # memory asked the preload for the model...
        release.wait(30)  # ...which is still loading until the test is done
        return None

    monkeypatch.setattr(_preload, "started", lambda: True)
    monkeypatch.setattr(_preload, "released", lambda: True)  # loads under way, not held: attach holds nothing
    monkeypatch.setattr(_preload, "loaded_embedder", loading)
    data = {"lock-version": LOCK_VERSION, "content-hash": "h", "plugin": [{"name": "kernel"}]}
    kernel = Kernel(Lock.from_data(tmp_path / "hologram.lock", data), tmp_path)

    async def scenario() -> tuple[Any, bool]:
        service = attach_agent(kernel)  # in the loop, as `up` runs it (the L3 cooling job is a task)
        llm = Instant()
        service.agent.llm = llm  # type: ignore[assignment]
        memory = service.agent.memory
        assert memory is not None
        try:
            assert await asyncio.to_thread(asked.wait, 30)  # the load is under way (the path claimed)
            result = await asyncio.wait_for(service.agent.run_turn("hello", session_id="s"), 20)
            assert len(llm.requests) == 1
            return result, memory.embedder_ready.is_set()
        finally:
            release.set()
            assert await asyncio.to_thread(memory.embedder_ready.wait, 30)
            await service.aclose()

    try:
        result, model_there = asyncio.run(scenario())
    finally:
        release.set()
        kernel.ring.close()
    assert result.ended_by == "answer" and result.output == "hello back"
    assert not model_there  # answered before the model was there
