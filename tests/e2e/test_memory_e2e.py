"""Memory end to end: a real `hologram up` whose provider has a small context window, the strict mock as the
vendor, `hologram ask` as the client. History is pruned by relevance (not truncated), the model is told what
moved, `coldcontext_query` brings it back, and a vendor's context-length 400 goes through the same recovery.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hologram.sessions import SessionStore, pairing_problems
from mock_llm import MockLLM
from tests.memory.long_messages import FACT_QUESTION, many_topics, with_fact

from .kernel import E2EKernel, session_of

pytestmark = pytest.mark.slow

TOPICS = [
    "gardening tomatoes in clay soil needs compost and patience",
    "the history of the Hanseatic league and its trading cities",
    "how sourdough starters ferment flour with wild yeast",
    "repairing a bicycle chain with a quick link tool",
    "the migration routes of arctic terns across oceans",
    "tuning a violin by ear against an A at 440 hertz",
    "why lighthouses used Fresnel lenses to focus light",
    "brewing green tea at lower temperatures than black tea",
    "the rules of curling and why sweeping changes the path",
    "knitting a scarf with a simple garter stitch pattern",
    "the geology of basalt columns at the Giant's Causeway",
    "training a puppy to walk on a loose leash",
]


def filler(index: int) -> str:
    topic = TOPICS[index % len(TOPICS)]
    return f"Let me tell you about {topic}. " * 6


def kernel_with(root: Path, mock: MockLLM, context_window: int) -> E2EKernel:
    kernel = E2EKernel(root, [mock])
    settings = kernel.data / "settings.toml"
    settings.write_text(
        settings.read_text().replace("thinking = true\n", f"thinking = true\ncontext_window = {context_window}\n")
    )
    kernel.start()
    return kernel


@pytest.fixture
def small(tmp_path: Path) -> Iterator[tuple[E2EKernel, MockLLM]]:
    with MockLLM("deepseek") as mock:
        kernel = kernel_with(tmp_path, mock, context_window=1800)
        try:
            yield kernel, mock
        finally:
            kernel.stop()


def said(request_body: dict[str, object]) -> str:
    return json.dumps(request_body["messages"], ensure_ascii=False)


def test_relevant_history_survives_pruning_and_cold_context_is_recalled(small: tuple[E2EKernel, MockLLM]) -> None:
    kernel, mock = small
    mock.script([{"reasoning_content": "noted", "content": "I will remember it."}])
    first = kernel.ask("Please remember: my locker combination is 4-8-15-16.")
    assert first.returncode == 0, first.stderr
    session = session_of(first)
    since_fillers = len(mock.requests)
    for index in range(len(TOPICS)):
        mock.script([{"reasoning_content": "ok", "content": f"Thanks for topic {index}."}])
        result = kernel.ask(filler(index), "--session", session)
        assert result.returncode == 0, result.stderr
    mock.script([{"reasoning_content": "look it up", "content": "It is 4-8-15-16."}])
    asked = kernel.ask("What is my locker combination?", "--session", session)
    assert asked.returncode == 0, asked.stderr
    sent = said(mock.requests[-1].body)
    assert "4-8-15-16" in sent, "the relevant old turn was kept although it is the oldest"
    # not truncation: the oldest turn is in because it is relevant, older turns than the newest are out
    pruned = [t for t in TOPICS[:6] if t not in sent]
    assert pruned, "irrelevant turns were pruned, not the relevant oldest one"
    assert all(t in sent for t in TOPICS[-3:]), "the newest turns are kept"
    # The request that moved turns to L2 tells the model so — a filler's or the question's, as the ranking has it
    # (with the locker turn moved during the fillers, the question's request recalls it and moves nothing itself).
    told = [r for r in mock.requests[since_fillers:] if "moved to cold context" in said(r.body)]
    assert told and "coldcontext_query" in said(told[-1].body), "the model is told what moved and how to bring it back"
    # The model asks for a pruned conversation; it comes back as the tool result. The user's question names no
    # topic: a question naming it would bring it back by automatic recall already (then the tool finds others —
    # which budget a request has decides that, so the test would hang on a few tokens of tool schemas).
    target = pruned[0]
    mock.script(
        [
            {
                "reasoning_content": "recall",
                "tool_calls": [{"id": "cq1", "name": "coldcontext_query", "arguments": json.dumps({"query": target})}],
            },
            {"reasoning_content": "done", "content": "Found it."},
        ]
    )
    recalled = kernel.ask("Please look up what I told you earlier.", "--session", session)
    assert recalled.returncode == 0, recalled.stderr
    assert target not in said(mock.requests[-2].body), "the tool, not automatic recall, brings it back"
    tool_messages = [m for m in mock.requests[-1].body["messages"] if m["role"] == "tool"]
    assert any(target in str(m["content"]) for m in tool_messages), tool_messages
    assert mock.rejections == []
    store = SessionStore(kernel.data / "sessions.db")
    assert pairing_problems(store.events(session)) == []


def test_a_vendor_context_length_error_is_recovered_by_pruning(tmp_path: Path) -> None:
    """The kernel believes the window is large; the vendor's real limit is smaller and answers 400
    context_length_exceeded. The turn prunes through the overflow path and the retry succeeds.
    Mutation check (done): turning the provider's ContextOverflowError straight into a TurnError in
    agent/turn.py (no recovery) makes this test red."""
    with MockLLM("deepseek", max_context_tokens=1200) as mock:
        kernel = kernel_with(tmp_path, mock, context_window=8000)
        try:
            mock.script([{"reasoning_content": "ok", "content": "first"}])
            first = kernel.ask("Remember the password swordfish.")
            session = session_of(first)
            for index in range(10):
                mock.script([{"reasoning_content": "ok", "content": f"fine {index}"}])
                result = kernel.ask(filler(index) * 2, "--session", session)
                assert result.returncode == 0, result.stderr
            mock.script([{"reasoning_content": "r", "content": "The password is swordfish."}])
            result = kernel.ask("What was the password?", "--session", session)
            assert result.returncode == 0, result.stderr
            assert result.stdout.strip() == "The password is swordfish."
            statuses = [r.status for r in mock.requests]
            assert 400 in statuses, "the vendor refused a request over its real limit"
            refused = statuses.index(400)
            assert statuses[refused + 1] == 200, f"the same step was retried after pruning: {statuses}"
            assert "swordfish" in said(mock.requests[-1].body), "the relevant turn survived the recovery"
            store = SessionStore(kernel.data / "sessions.db")
            assert pairing_problems(store.events(session)) == []
        finally:
            kernel.stop()


def cold_row(data: Path, needle: str) -> tuple[int, float | None] | None:
    """(access_count, last_access) of the L2 event whose text holds `needle`, read-only beside the kernel."""
    db = sqlite3.connect(f"file:{data / 'cold.db'}?mode=ro", uri=True)
    try:
        row = db.execute(
            "SELECT e.access_count, e.last_access FROM cold_events e JOIN cold_blocks b ON b.event = e.id "
            "WHERE b.text LIKE ?",
            (f"%{needle}%",),
        ).fetchone()
    finally:
        db.close()
    return None if row is None else (int(row[0]), row[1])


def test_a_fact_said_in_passing_comes_back_with_no_tool_call(tmp_path: Path) -> None:
    """Issue 11: a fact inside a long many-topic message, pruned to L2 many turns earlier, is in the request
    the vendor receives when a later question needs it, with no tool call by the model; at its place in
    time; counted as an access in L2.

    Mutation check (done): scoring only L1 in SessionMemory._prepare (fit over ``~in_cold``) turns it red."""
    with MockLLM("deepseek") as mock:
        kernel = kernel_with(tmp_path, mock, context_window=2400)
        try:
            mock.script([{"reasoning_content": "ok", "content": "Noted."}])
            first = kernel.ask(with_fact(0))
            assert first.returncode == 0, first.stderr
            session = session_of(first)
            for i in range(1, 16):
                mock.script([{"reasoning_content": "ok", "content": f"Noted {i}."}])
                result = kernel.ask(many_topics(i), "--session", session)
                assert result.returncode == 0, result.stderr
            assert "ceramic frog" not in said(mock.requests[-1].body), "the fact had been pruned from the history"
            assert cold_row(kernel.data, "ceramic frog") == (0, None), "... to L2, never recalled since"

            before = len(mock.requests)
            mock.script([{"reasoning_content": "it is in the history", "content": "Under the blue ceramic frog."}])
            asked = kernel.ask(FACT_QUESTION, "--session", session)
            assert asked.returncode == 0, asked.stderr
            assert asked.stdout.strip() == "Under the blue ceramic frog."
            assert len(mock.requests) == before + 1, "one request: no tool call was needed"
            messages = mock.requests[-1].body["messages"]
            users = [str(m["content"]) for m in messages if m["role"] == "user"]
            holder = next(i for i, text in enumerate(users) if "ceramic frog" in text)
            assert users[-1] == FACT_QUESTION and holder < len(users) - 1
            assert users.index(next(u for u in users if "About the car (0)" in u)) == holder, "at its time position"
            assert any("Recalled from cold context" in str(m["content"]) for m in messages if m["role"] == "system")
            access = cold_row(kernel.data, "ceramic frog")
            assert access is not None and access[0] == 1 and access[1] is not None, "cooling sees the access"
            memory = kernel.status()["memory"]
            indexed = memory["sessions_indexed"] + memory["sessions_released"]  # idle 2 s: released (memory.md)
            assert memory["l2_events"] > 0 and indexed >= 1, memory
            shown = kernel.hologram("status", "--data", str(kernel.data))
            assert "events in cold context (L2)" in shown.stdout, shown.stdout
            assert mock.rejections == []
        finally:
            kernel.stop()


def test_an_idle_session_is_released_and_its_next_turn_has_its_history(tmp_path: Path) -> None:
    """Through `hologram up` (issue 41): once a session stays idle `[memory] release_idle_s`, the kernel holds
    nothing decoded of it (status: sessions_released, log_bytes 0), and its next turn reads it back from disk —
    the model is sent the earlier turn as before. Mutation check (done): `turn_ended` planning no release turns
    this red (the wait for sessions_released times out)."""
    with MockLLM("deepseek") as mock:
        kernel = E2EKernel(tmp_path, [mock])
        settings = kernel.data / "settings.toml"
        settings.write_text(settings.read_text() + "\n[memory]\nrelease_idle_s = 0.2\n")
        kernel.start()
        try:
            mock.script([{"reasoning_content": "noted", "content": "I will remember the locker."}])
            first = kernel.ask("Please remember: my locker combination is 4-8-15-16.")
            assert first.returncode == 0, first.stderr
            session = session_of(first)
            deadline = time.monotonic() + 60  # a bound for a broken kernel, not the wait itself
            while (memory := kernel.status()["memory"])["sessions_released"] < 1:
                assert time.monotonic() < deadline, memory
                time.sleep(0.05)
            assert memory["log_bytes"] == 0 and memory["sessions_indexed"] == 0, memory
            shown = kernel.hologram("status", "--data", str(kernel.data)).stdout
            assert "0 session(s) indexed in memory" in shown and "1 idle session(s) released so far" in shown, shown
            mock.script([{"reasoning_content": "look", "content": "It is 4-8-15-16."}])
            asked = kernel.ask("What is my locker combination?", "--session", session)
            assert asked.returncode == 0, asked.stderr
            sent = said(mock.requests[-1].body)
            assert "4-8-15-16" in sent and "I will remember the locker." in sent, sent
            assert mock.rejections == []
        finally:
            kernel.stop()


def test_older_inputs_reach_the_vendor_joined_and_the_strict_mock_accepts_them(tmp_path: Path) -> None:
    """Issue 39 item 1 (memory/joined.py): in a long session of short statements, the inputs ranking picked
    from before the recent window reach the vendor joined into user messages (a paragraph each), the recent
    window one message per event, every response (DeepSeek, with reasoning) a message of its own — and the
    strict mock, which checks the vendor's rules, accepts every request.

    Mutation check (done): ``JOIN_ROLES = ()`` in session_memory.py turns it red (no joined message)."""
    with MockLLM("deepseek") as mock:
        kernel = kernel_with(tmp_path, mock, context_window=1200)
        try:
            session = None
            for i in range(24):
                if i % 3 == 0:
                    text = f"In the garden today I planted {TOPICS[i // 3].split()[0]} seeds, row {i}."
                else:
                    text = f"News {i}: " + f"Let me tell you about {TOPICS[i % len(TOPICS)]}. " * 3
                mock.script([{"reasoning_content": "ok", "content": "Noted."}])
                args = ("--session", session) if session else ()
                result = kernel.ask(text, *args)
                assert result.returncode == 0, result.stderr
                session = session or session_of(result)
            assert session is not None
            mock.script([{"reasoning_content": "the garden rows", "content": "Seeds in rows 0 to 21."}])
            asked = kernel.ask("What did I plant in the garden?", "--session", session)
            assert asked.returncode == 0, asked.stderr
            messages = mock.requests[-1].body["messages"]
            users = [str(m["content"]) for m in messages if m["role"] == "user"]
            joined = [u for u in users if "\n\n" in u]
            assert joined and any(u.count("In the garden today") >= 2 for u in joined), users
            assert users[-1] == "What did I plant in the garden?", "the newest input is a message of its own"
            assert all("\n\n" not in str(m["content"]) for m in messages if m["role"] == "assistant")
            assert mock.rejections == []
        finally:
            kernel.stop()
