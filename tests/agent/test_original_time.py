"""An imported message keeps its original time (issue 39 item 3): ``turn/start`` and ``sessions/append`` take an
optional ``at`` (ISO 8601, naive = UTC, or epoch seconds) stored as the input event's time — what memory's time
cues, dates and cross-session notes read; a value that is no time, or lies in the future, is refused naming the
field and the forms it takes. A real `TurnService` and agent on the strict mock and a real SQLite store.

Mutation check (done): `_Turn._persist_input` without ``ts=self.at`` turns
``test_a_turns_input_keeps_its_original_time`` red.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from hologram.agent.service import TurnService
from hologram.rpc import RpcError
from mock_llm import MockLLM
from tests.kit.loop import run

from .helpers import make_agent
from .test_sessions_append import wait_idle

WHEN = datetime(2026, 1, 5, 1, 30, tzinfo=timezone.utc).timestamp()


def test_a_turns_input_keeps_its_original_time(tmp_path: Path, mock_llm: MockLLM) -> None:
    service = TurnService(make_agent(tmp_path, mock_llm))
    mock_llm.script([{"content": "ok"}])

    async def go() -> list[Any]:
        try:
            await service.start(None, {"text": "the boiler broke", "session": "imp", "at": "2026-01-05T09:30:00+08:00"},
                                channel="cli")  # fmt: skip
            await wait_idle(service, "imp")
            appended = await service.append("cli", {"session": "imp", "text": "fixed now", "at": WHEN + 86400})
            assert appended["status"] == "stored"
            return service.agent.store.events("imp")
        finally:
            await service.aclose()

    started = time.time()
    events = run(go())
    said, later = [e for e in events if e.kind == "input"]
    answer = next(e for e in events if e.kind == "response")
    assert said.ts == WHEN, "the original time, not the import's"
    assert answer.ts >= started - 1, "the answer happened now"
    assert later.ts == WHEN + 86400


@pytest.mark.parametrize(
    ("at", "says"),
    [("yesterday", "is not a time"), (-5, "after 1970"), (time.time() + 86400, "in the future"), (True, "not a time")],
)
def test_a_bad_time_is_refused_naming_the_field(tmp_path: Path, mock_llm: MockLLM, at: object, says: str) -> None:
    service = TurnService(make_agent(tmp_path, mock_llm))

    async def go() -> None:
        try:
            for call in (
                service.start(None, {"text": "x", "at": at}, channel="cli"),
                service.append("cli", {"session": "s", "text": "x", "at": at}),
            ):
                with pytest.raises(RpcError) as info:
                    await call
                assert ": at:" in info.value.message and says in info.value.message, info.value.message
        finally:
            await service.aclose()

    run(go())
    assert mock_llm.requests == []
