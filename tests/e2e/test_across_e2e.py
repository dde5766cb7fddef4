"""Memory across sessions end to end (issue 39 item 2, Done means): a fact told in one session reaches a new
session's request with no tool call, after a kernel restart — asserted on the request the strict mock received.
A real `hologram up`, `hologram ask` as the client, the kernel's own embedder.

Mutation check (done): `SessionMemory._across_hits` returning [] turns it red (the new session's request
carries no note from the other session).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mock_llm import MockLLM

from .kernel import E2EKernel, session_of

pytestmark = pytest.mark.slow

FACT = "By the way, my car's licence plate is 沪B62817 — the white BYD, not the old Corolla."
QUESTION = "Remind me, what's the registration number on my car?"


def test_a_fact_told_in_one_session_reaches_a_new_session_after_a_restart(tmp_path: Path) -> None:
    with MockLLM("deepseek") as mock:
        kernel = E2EKernel(tmp_path, [mock])
        kernel.start()
        try:
            mock.script([{"reasoning_content": "ok", "content": "Noted."}])
            told = kernel.ask(FACT)
            assert told.returncode == 0, told.stderr
            first = session_of(told)
            mock.script([{"reasoning_content": "ok", "content": "Sure."}])
            assert kernel.ask("Write a haiku about autumn.", "--session", first).returncode == 0
        finally:
            kernel.stop()
        assert (kernel.data / "across.db").exists()

        kernel.start()  # a restart: nothing of the first session is in memory
        try:
            before = len(mock.requests)
            mock.script([{"reasoning_content": "it is in the note", "content": "沪B62817."}])
            asked = kernel.ask(QUESTION)
            assert asked.returncode == 0, asked.stderr
            assert session_of(asked) != first, "a new session"
            assert asked.stdout.strip() == "沪B62817."
            assert len(mock.requests) == before + 1, "one request: no tool call was needed"
            messages = mock.requests[-1].body["messages"]
            notes = [str(m["content"]) for m in messages if m["role"] == "system"]
            note = next((n for n in notes if "other conversations" in n), "")
            assert "沪B62817" in note and f"session {first}" in note, json.dumps(messages, ensure_ascii=False)
            assert "haiku" not in note, "a request made there is not something the person told"
            assert all("沪B62817" not in str(m["content"]) for m in messages if m["role"] != "system")
            assert mock.rejections == []
            assert kernel.status()["memory"]["across_inputs"] >= 1  # the statements held (not the requests)
        finally:
            kernel.stop()
