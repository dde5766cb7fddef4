"""A new session is titled from its first input by the kernel (issue 41), so every client's list shows it: the
title rule, and `TurnService.start` against a real `SessionStore` (a turn without a provider still creates its
session; the title is set when the session is, before the turn runs).

Mutation checks (done): `TurnService.start` creating the session without ``title=`` turns
``test_the_first_turn_titles_a_new_session_and_later_turns_do_not`` red (the read's title is ""); titling the
session from every turn's input (``rename_session`` on each start) turns it red too (``'another question'``).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from hologram.agent import Agent, ToolRegistry
from hologram.agent.service import TurnService
from hologram.sessions import SessionStore
from hologram.sessions.title import TITLE_CHARS, title_from_input
from hologram.stages import StageDispatcher

LONG = "Please summarise the quarterly report and list every open question the finance team raised"


@pytest.mark.parametrize(
    ("text", "parts", "title"),
    [
        ("hello", None, "hello"),
        ("\n\n   plan   my\ttrip to Lisbon  \nsecond line", None, "plan my trip to Lisbon"),
        (LONG, None, "Please summarise the quarterly report and list every open…"),
        (
            "帮我" + "整理一下这个季度的财务报告" * 8,
            None,
            ("帮我" + "整理一下这个季度的财务报告" * 8)[:TITLE_CHARS] + "…",
        ),
        ("x" * 100, None, "x" * TITLE_CHARS + "…"),
        (
            None,
            [{"type": "text", "text": "  "}, {"type": "text", "text": "what is in this file?"}],
            "what is in this file?",
        ),
        (None, [{"type": "file", "name": "notes.md", "data": "a", "encoding": "text"}], "notes.md"),
        (None, [{"type": "image", "url": "https://example.org/a.png"}], ""),
        ("   \n ", None, ""),
    ],
)
def test_the_title_rule(text: str | None, parts: list[dict[str, Any]] | None, title: str) -> None:
    got = title_from_input(text, parts)
    assert got == title
    assert len(got) <= TITLE_CHARS + 1


def test_the_first_turn_titles_a_new_session_and_later_turns_do_not(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions.db")
    service = TurnService(Agent(llm=None, store=store, tools=ToolRegistry(), stages=StageDispatcher()))

    async def go() -> dict[str, str]:
        try:
            first = await service.start(None, {"text": "Trip to Lisbon\nwith details"})
            sid = first["session"]
            await service.start(None, {"text": "another question", "session": sid})
            named = await service.start(None, {"text": "名字来自第一句话", "session": "chosen-id"})
            assert named["session"] == "chosen-id"
            await service.rename_session({"session": "chosen-id", "title": "Renamed"})
            await service.start(None, {"text": "not a title", "session": "chosen-id"})
            parts = [{"type": "text", "text": "from a part"}]
            by_parts = (await service.start(None, {"input": parts}))["session"]
            read = await service.read_session({"session": sid})
            assert read["title"] == "Trip to Lisbon"
            listed = (await service.list_sessions({}))["sessions"]
            titles = {s["id"]: s["title"] for s in listed}
            return {"first": titles[sid], "named": titles["chosen-id"], "parts": titles[by_parts]}
        finally:
            await service.aclose()

    assert asyncio.run(go()) == {"first": "Trip to Lisbon", "named": "Renamed", "parts": "from a part"}
