"""The person's people by more than one name end to end (issue 39 item 3, memory/across/aliases.py): who "my wife" is
told in one session, a fact about "my wife" in another, and after a kernel restart a new session asks by her
name — the fact is in that request, with no tool call. A real `hologram up`, `hologram ask` as the client,
the strict mock as the model, the kernel's own embedder.

Mutation check (done): `aliases.expansion` returning "" turns it red (the note carries the person's own food
statements, which match "can't eat" better, not the shellfish).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mock_llm import MockLLM

from .kernel import E2EKernel, session_of

pytestmark = pytest.mark.slow

WHO = "We're repainting the hall this weekend, my wife Elena picked a dark green."
FACT = "Note for the party: my wife is allergic to shellfish, so no prawns on the menu."
# the person's own statements about food and eating: without the alias they match "can't eat" better
FILLER = [
    "I can't stand coriander, it tastes like soap to me.",
    "We ate at the new ramen place downtown, the broth was great.",
    "I've stopped eating sugar after eight in the evening.",
    "My brother can't eat gluten, so I bake him a separate loaf.",
    "I had porridge with blueberries for breakfast again.",
    "The canteen at work only does pasta on Fridays.",
    "I finally fixed the squeaky hinge on the garden gate.",
]
QUESTION = "Is there anything Elena can't eat?"


def test_a_fact_about_my_wife_reaches_a_question_by_her_name_after_a_restart(tmp_path: Path) -> None:
    with MockLLM("deepseek") as mock:
        kernel = E2EKernel(tmp_path, [mock])
        kernel.start()
        try:
            sessions = []
            for text in (WHO, FACT):
                mock.script([{"reasoning_content": "ok", "content": "Noted."}])
                told = kernel.ask(text)
                assert told.returncode == 0, told.stderr
                sessions.append(session_of(told))
                for filler in FILLER[: 2 if text == WHO else None]:
                    mock.script([{"reasoning_content": "ok", "content": "Okay."}])
                    assert kernel.ask(filler, "--session", sessions[-1]).returncode == 0
            assert sessions[0] != sessions[1]
        finally:
            kernel.stop()

        kernel.start()  # a restart: the alias is read back from across.db
        try:
            before = len(mock.requests)
            mock.script([{"reasoning_content": "it is in the note", "content": "Shellfish."}])
            asked = kernel.ask(QUESTION)
            assert asked.returncode == 0, asked.stderr
            assert session_of(asked) not in sessions, "a new session"
            assert len(mock.requests) == before + 1, "one request: no tool call was needed"
            messages = mock.requests[-1].body["messages"]
            notes = [str(m["content"]) for m in messages if m["role"] == "system"]
            note = next((n for n in notes if "other conversations" in n), "")
            assert "shellfish" in note and f"session {sessions[1]}" in note, json.dumps(messages, ensure_ascii=False)
            assert mock.rejections == []
        finally:
            kernel.stop()
