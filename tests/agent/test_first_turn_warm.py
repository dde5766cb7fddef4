"""`hologram up` does the first turn's one-time set-ups before "ready" (hologram/agent/first_turn.py, issue 39
item 9): after `warm`, a first turn reserves no event numbers (no write and fsync), starts no thread, compiles no
tool's argument check and builds no provider transport — each of which it does without `warm` (the same turn,
so the spies are shown to see them). A real `TurnService`, agent and SQLite store, the strict mock over real
HTTP on loopback.

Mutation checks (done): `warm` without any one of its steps — the event numbers, the checkpoint thread, the
tool checks, the provider transport — turns ``test_after_warm_a_first_turn_does_no_one_time_set_up[True]`` red
(the turn does it); `executor_threads` submitting one job turns ``test_executor_threads_start_that_many_workers``
red (one worker).
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from hologram.agent import KernelTool, ToolInvocation
from hologram.agent import tools as tools_module
from hologram.agent.first_turn import executor_threads, warm
from hologram.agent.sequence import SeqCounter
from hologram.agent.service import TurnService
from hologram.llm import transport
from mock_llm import MockLLM
from tests.kit.loop import run

from .helpers import OBJ, make_agent
from .test_sessions_append import wait_idle


def echo() -> KernelTool:
    async def handler(arguments: dict[str, Any], inv: ToolInvocation) -> str:
        return "echo"

    return KernelTool("echo", "echo", handler, OBJ, parallel_safe=True)


@pytest.mark.parametrize("warmed", [True, False])
def test_after_warm_a_first_turn_does_no_one_time_set_up(
    tmp_path: Path, mock_llm: MockLLM, monkeypatch: pytest.MonkeyPatch, warmed: bool
) -> None:
    service = TurnService(make_agent(tmp_path, mock_llm, tools=[echo()]), seq_file=tmp_path / "turn-seq")
    mock_llm.script([{"content": "hello back"}])
    seen: dict[str, list[Any]] = {"threads": [], "reserved": [], "checks": [], "transports": []}
    start, reserve, compile_check, context = (
        threading.Thread.start, SeqCounter._reserve, tools_module.compile_check, transport._fail_closed_context
    )  # fmt: skip

    loop_thread = threading.current_thread()  # the loop's (`run` runs it here); the mock serves from threads of its own

    def spy_start(thread: threading.Thread) -> None:
        if threading.current_thread() is loop_thread:
            seen["threads"].append(thread.name)
        start(thread)

    def spy_reserve(counter: SeqCounter, ceiling: int) -> None:
        seen["reserved"].append(ceiling)
        reserve(counter, ceiling)

    def spy_check(schema: dict[str, Any]) -> Any:
        seen["checks"].append(schema)
        return compile_check(schema)

    def spy_context() -> Any:
        seen["transports"].append("http")
        return context()

    async def go() -> list[str]:
        try:
            if warmed:
                await warm(service)
            with monkeypatch.context() as spies:
                spies.setattr(threading.Thread, "start", spy_start)
                spies.setattr(SeqCounter, "_reserve", spy_reserve)
                spies.setattr(tools_module, "compile_check", spy_check)
                spies.setattr(transport, "_fail_closed_context", spy_context)
                started = await service.start(None, {"text": "hello"}, channel="cli")
                await wait_idle(service, started["session"])
            events = service.agent.store.events(started["session"])
            return [str(e.data.get("content")) for e in events if e.kind == "response"]
        finally:
            await service.aclose()

    assert run(go()) == ["hello back"]
    assert service.hub.last_seq > 0, "the turn's events were numbered (the counter was on the path)"
    assert (tmp_path / "turn-seq").exists()
    if warmed:
        assert seen == {"threads": [], "reserved": [], "checks": [], "transports": []}
    else:
        assert seen["reserved"] and seen["checks"] and seen["transports"]
        assert "hologram-wal-checkpoint" in seen["threads"]


def test_executor_threads_start_that_many_workers() -> None:
    async def go() -> tuple[int, int]:
        before = {t.ident for t in threading.enumerate()}
        await executor_threads(2)
        workers = [t for t in threading.enumerate() if t.ident not in before]
        seen: set[int | None] = set()
        for _ in range(4):  # later jobs find idle workers: none started
            seen.add(await asyncio.to_thread(lambda: threading.get_ident()))
        after = [t for t in threading.enumerate() if t.ident not in before]
        return len(workers), len(after)

    workers, after = run(go())
    assert workers == 2
    assert after == 2
