"""End to end: a real `hologram up` (plugins as real processes, one in-process), the strict DeepSeek mock on
loopback as both providers, and `hologram ask` as a real client process."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hologram.sessions import SessionStore, pairing_problems
from mock_llm import MockLLM
from tests.kit.wait import wait_until

from .kernel import E2EKernel, as_json, session_of

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def mocks() -> Iterator[tuple[MockLLM, MockLLM]]:
    with MockLLM("deepseek") as a, MockLLM("deepseek") as b:
        yield a, b


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory, mocks: tuple[MockLLM, MockLLM]) -> Iterator[E2EKernel]:
    k = E2EKernel(tmp_path_factory.mktemp("e2e"), list(mocks))
    k.start()
    yield k
    k.stop()


@pytest.fixture(autouse=True)
def fresh(mocks: tuple[MockLLM, MockLLM]) -> None:
    for mock in mocks:
        mock.reset()


def lookups(*xs: int, prefix: str = "c") -> list[dict[str, str]]:
    return [{"id": f"{prefix}{x}", "name": "lookup", "arguments": json.dumps({"x": x})} for x in xs]


def test_deepseek_thinking_session_with_parallel_calls_over_many_turns_never_draws_a_400(
    kernel: E2EKernel, mocks: tuple[MockLLM, MockLLM]
) -> None:
    """Incident rules covered: reasoning replayed on every assistant turn (with or without tool calls),
    call/result pairs kept together, results in call order.
    Mutation check (done): making `response_message` (sessions/history.py) drop the stored reasoning turns
    this red — the adapter then sends "" for every earlier step, which the assertion on the replayed
    reasoning catches (the mock itself accepts "", as DeepSeek does)."""
    a, _ = mocks
    session = None
    for turn in range(4):
        a.script(
            [
                {"reasoning_content": f"plan {turn}", "tool_calls": lookups(1, 2, 3, prefix=f"t{turn}a")},
                {"reasoning_content": f"more {turn}", "tool_calls": lookups(4, 5, prefix=f"t{turn}b")},
                {"reasoning_content": f"answer {turn}", "content": f"turn {turn} done"},
            ]
        )
        result = kernel.ask(f"question {turn}", *(["--session", session] if session else []))
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == f"turn {turn} done"
        assert f"answer {turn}" in result.stderr  # reasoning streamed (stderr when stdout is not a tty)
        session = session_of(result)
    assert a.rejections == []
    assert len(a.requests) == 12
    last = a.requests[-1].body["messages"]
    assert sum(m["role"] == "tool" for m in last) == 20
    assert [m.get("reasoning_content") for m in last if m["role"] == "assistant"][:3] == [
        "plan 0",
        "more 0",
        "answer 0",
    ]
    assert session is not None
    store = SessionStore(kernel.data / "sessions.db")
    assert pairing_problems(store.events(session)) == []


def test_a_provider_answering_500_falls_back_to_the_second(kernel: E2EKernel, mocks: tuple[MockLLM, MockLLM]) -> None:
    a, b = mocks
    a.script([{"error": {"status": 500, "message": "internal trouble"}}])
    b.script([{"reasoning_content": "r", "content": "from the second"}])
    result = kernel.ask("hello")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "from the second"
    assert len(a.requests) == 1 and len(b.requests) == 1


def test_a_400_fails_fast_with_the_vendors_message(kernel: E2EKernel, mocks: tuple[MockLLM, MockLLM]) -> None:
    """Fail-fast rule (llm/chain.py, mutation-checked in tests/llm): here through the whole stack — exit 1,
    the vendor's message on stderr, no traceback, and the second provider never asked."""
    a, b = mocks
    a.script([{"error": {"status": 400, "message": "Invalid parameter: something the vendor hates"}}])
    kernel.wait_providers_healthy()  # the fallback test before this one left p1 cooling for a moment
    result = kernel.ask("hello")
    assert result.returncode == 1
    assert "Invalid parameter: something the vendor hates" in result.stderr
    assert "Traceback" not in result.stderr
    assert len(a.requests) == 1 and b.requests == []


def test_stage_hooks_deny_rewrite_and_short_circuit(kernel: E2EKernel, mocks: tuple[MockLLM, MockLLM]) -> None:
    a, _ = mocks
    a.script(
        [
            {"reasoning_content": "r", "tool_calls": lookups(13, 7, 2)},
            {"reasoning_content": "r2", "content": "sign me"},
        ]
    )
    result = kernel.ask("hooks")
    assert result.returncode == 0, result.stderr
    assert "sign me [signed in pid" in result.stdout  # the in-process before_output hook ran in the kernel
    tools = {m["tool_call_id"]: m["content"] for m in a.requests[-1].body["messages"] if m["role"] == "tool"}
    assert tools == {"c13": "denied by e2e-tools: 13 is unlucky", "c7": "v70", "c2": "v2"}
    before = len(a.requests)
    pong = kernel.ask("ping")
    assert pong.returncode == 0 and pong.stdout.strip() == "pong" and len(a.requests) == before
    # an on_input respond is the turn's answer, and before_output still runs on it (docs/authoring.md, "Stages")
    signed = kernel.ask("answer for me")
    assert signed.returncode == 0 and "sign me [signed in pid" in signed.stdout and len(a.requests) == before


def test_a_plugin_dying_mid_call_gives_that_call_an_error_result(
    kernel: E2EKernel, mocks: tuple[MockLLM, MockLLM]
) -> None:
    a, _ = mocks
    a.script(
        [
            {"reasoning_content": "r", "tool_calls": [{"id": "k1", "name": "crash", "arguments": '{"x": 1}'}]},
            {"reasoning_content": "r2", "content": "it crashed"},
        ]
    )
    result = kernel.ask("crash it")
    assert result.returncode == 0, result.stderr
    tools = [m for m in a.requests[-1].body["messages"] if m["role"] == "tool"]
    assert "plugin e2e-tools stopped while running crash" in tools[-1]["content"]
    # the terminal says why under the call's line, not only the model (issue 36's reader saw no error text)
    assert '[tool crash {"x": 1}]\n[tool crash error: plugin e2e-tools stopped while running crash' in result.stderr
    store = SessionStore(kernel.data / "sessions.db")
    assert pairing_problems(store.events(session_of(result))) == []
    kernel.wait_ready("e2e-tools")


def test_a_session_written_without_reasoning_by_an_older_version_keeps_working(
    kernel: E2EKernel, mocks: tuple[MockLLM, MockLLM]
) -> None:
    """Older rows: no `reasoning`, no `usage`, tool calls without reasoning — in thinking mode the adapter
    must send `reasoning_content: ""` for them (the adapter's rule, mutation-checked in tests/llm), and the
    store must read rows that lack the newer fields. Red when `messages_from_events` requires `reasoning`."""
    db = sqlite3.connect(kernel.data / "sessions.db")
    old = [
        ("legacy", "input", 1.0, json.dumps({"text": "old question"})),
        (
            "legacy",
            "response",
            2.0,
            json.dumps({"content": None, "tool_calls": [{"id": "o1", "name": "lookup", "arguments": '{"x": 1}'}]}),
        ),
        ("legacy", "tool_result", 3.0, json.dumps({"call_id": "o1", "content": "v1"})),
        ("legacy", "response", 4.0, json.dumps({"content": "old answer"})),
    ]
    db.executemany("INSERT INTO events (session, kind, ts, data) VALUES (?, ?, ?, ?)", old)
    seqs = [r[0] for r in db.execute("SELECT seq FROM events WHERE session='legacy' ORDER BY seq")]
    db.execute("UPDATE events SET call_of=?, call_id='o1' WHERE seq=?", (seqs[1], seqs[2]))
    db.commit()
    db.close()
    a, _ = mocks
    a.script(
        [{"reasoning_content": "new", "tool_calls": lookups(9)}, {"reasoning_content": "n2", "content": "new answer"}]
    )
    result = kernel.ask("new question", "--session", "legacy")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "new answer"
    assert a.rejections == []
    sent = a.requests[0].body["messages"]
    assert [m["role"] for m in sent[:5]] == ["system", "user", "assistant", "tool", "assistant"]
    assert sent[2]["reasoning_content"] == ""


def test_a_session_survives_a_kernel_restart(kernel: E2EKernel, mocks: tuple[MockLLM, MockLLM]) -> None:
    a, _ = mocks
    a.script([{"reasoning_content": "r", "content": "remember 42"}])
    first = kernel.ask("remember the number 42")
    session = session_of(first)
    kernel.stop()
    kernel.start()
    a.script([{"reasoning_content": "r", "content": "it was 42"}])
    second = kernel.ask("what was it?", "--session", session)
    assert second.returncode == 0, second.stderr
    contents = [m["content"] for m in a.requests[-1].body["messages"]]
    assert "remember the number 42" in contents and "remember 42" in contents


def test_no_kernel_running_is_a_clear_error(tmp_path: Path, kernel: E2EKernel) -> None:
    result = kernel.hologram("ask", "--data", str(tmp_path), "hi")
    assert result.returncode == 1
    assert "no kernel is running with this data directory" in result.stderr


def test_ask_json_reports_the_turn(kernel: E2EKernel, mocks: tuple[MockLLM, MockLLM]) -> None:
    a, _ = mocks
    a.script([{"reasoning_content": "r", "content": "json please", "usage": {"cached_tokens": 3}}])
    data = as_json(kernel.ask("hi", "--json"))
    assert data["output"] == "json please" and data["ended_by"] == "answer"
    assert data["usage"][0]["cached_tokens"] == 3
    assert time.time() > 0


def test_the_kernel_freezes_its_start_up_heap_once_models_are_loaded(kernel: E2EKernel) -> None:
    """hologram/base/_heap.py: after the Chinese segmenter and the embedding model load, full collections skip
    the start-up heap (one took 22 ms with jieba's dictionary loaded). Mutation check (done): not starting
    `_settle_heap` in up_cmd.py turns this red."""
    wait_until(
        lambda: kernel.status()["kernel"]["heap_frozen"], timeout=120, what="the start-up heap frozen", interval=0.2
    )
    assert kernel.status()["kernel"]["heap_frozen"] > 10_000  # numpy, onnxruntime, the kernel itself
