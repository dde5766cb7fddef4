"""The turn loop against the strict mock: tools concurrent and serial, the persisted invariant, limits,
cancellation, hooks, and reasoning that belongs to the step that produced it."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from hologram.agent import TurnError
from hologram.sessions import pairing_problems
from hologram.stages import FunctionHook, StageDispatcher
from mock_llm import MockLLM

from .helpers import Timeline, calls, make_agent, sleeper


def results_of(agent: Any, sid: str) -> list[tuple[str | None, str]]:
    return [(e.call_id, e.data["content"]) for e in agent.store.events(sid) if e.kind == "tool_result"]


def test_parallel_safe_batch_runs_concurrently_and_every_call_has_its_one_result(
    tmp_path: Path, deepseek: MockLLM
) -> None:
    """Concurrent path. Asserts real overlap (so the path was taken) and, on the *persisted* events, one real
    result per call, in call order.

    Mutation check (done): deleting the concurrent path's `record(p.call, p.outcome)` in executor.py turns
    this red — the answer still comes (the normaliser patches the request) but the results on disk are the
    turn's synthetic closures, not the tools' outputs.

    The four runs meet (``Timeline(together=4)``) before they sleep, so they overlap however slow the machine;
    run one by one they never meet, and the spans do not overlap."""
    timeline = Timeline(together=4)
    deepseek.script(
        [
            {
                "reasoning_content": "fan out",
                "tool_calls": calls(*((f"c{i}", "t", json.dumps({"x": i})) for i in range(4))),
            },
            {"reasoning_content": "sum", "content": "done"},
        ]
    )
    agent = make_agent(tmp_path, deepseek, tools=[sleeper("t", timeline, parallel_safe=True, delay=0.1)], thinking=True)
    result = asyncio.run(agent.run_turn("go"))
    assert result.output == "done" and result.ended_by == "answer"
    assert timeline.overlapped(), "the concurrent path did not run concurrently"
    assert results_of(agent, result.session_id) == [(f"c{i}", f"t:{i}") for i in range(4)]
    assert pairing_problems(agent.store.events(result.session_id)) == []
    assert deepseek.rejections == []


def test_a_batch_with_one_unsafe_tool_runs_serially_in_call_order(tmp_path: Path, deepseek: MockLLM) -> None:
    """Serial path: no overlap, results on disk in call order."""
    timeline = Timeline()
    deepseek.script(
        [
            {"tool_calls": calls(("a", "safe", '{"x": 1}'), ("b", "unsafe", '{"x": 2}'), ("c", "safe", '{"x": 3}'))},
            {"content": "ok"},
        ]
    )
    tools = [sleeper("safe", timeline, parallel_safe=True), sleeper("unsafe", timeline, parallel_safe=False)]
    agent = make_agent(tmp_path, deepseek, tools=tools)
    result = asyncio.run(agent.run_turn("go"))
    assert not timeline.overlapped()
    assert results_of(agent, result.session_id) == [("a", "safe:1"), ("b", "unsafe:2"), ("c", "safe:3")]
    assert pairing_problems(agent.store.events(result.session_id)) == []


def test_unknown_tools_and_bad_arguments_become_error_results_the_model_sees(tmp_path: Path, deepseek: MockLLM) -> None:
    timeline = Timeline()
    deepseek.script(
        [
            {
                "tool_calls": calls(
                    ("a", "nope", "{}"), ("b", "t", "{not json"), ("c", "t", '{"x": "one"}'), ("d", "t", '{"x": 1}')
                )
            },
            {"content": "sorry"},
        ]
    )
    agent = make_agent(tmp_path, deepseek, tools=[sleeper("t", timeline, parallel_safe=True)])
    result = asyncio.run(agent.run_turn("go"))
    assert result.output == "sorry"
    tool_messages = [m for m in deepseek.requests[-1].body["messages"] if m["role"] == "tool"]
    contents = {m["tool_call_id"]: m["content"] for m in tool_messages}
    assert "no tool named 'nope'" in contents["a"]
    assert "not valid JSON" in contents["b"]
    assert "x: 'one' is not of type 'integer'" in contents["c"]
    assert contents["d"] == "t:1"
    assert deepseek.rejections == []


def test_step_limit_tells_the_model_and_closes_its_last_calls(tmp_path: Path, deepseek: MockLLM) -> None:
    timeline = Timeline()
    deepseek.script(
        [
            {"tool_calls": calls(("a", "t", '{"x": 1}'))},
            {"content": "partial", "tool_calls": calls(("b", "t", '{"x": 2}'))},
        ]
    )
    agent = make_agent(tmp_path, deepseek, tools=[sleeper("t", timeline, parallel_safe=True)], max_steps=2)
    result = asyncio.run(agent.run_turn("go"))
    assert result.ended_by == "max_steps" and result.steps == 2 and result.output == "partial"
    last = deepseek.requests[-1].body
    assert last["tool_choice"] == "none"
    assert "Step limit reached" in last["messages"][-1]["content"]
    assert results_of(agent, result.session_id)[-1] == ("b", "not run: the step limit of 2 LLM calls was reached")
    assert pairing_problems(agent.store.events(result.session_id)) == []


def test_cancel_mid_call_leaves_a_valid_history_and_the_next_turn_is_accepted(
    tmp_path: Path, deepseek: MockLLM
) -> None:
    """Mutation check (done): removing the `close_calls` in `_Turn.run`'s finally turns this red: the
    persisted session then has two calls with 0 results."""
    timeline = Timeline()
    deepseek.script(
        [{"reasoning_content": "r", "tool_calls": calls(("a", "slow", '{"x": 1}'), ("b", "slow", '{"x": 2}'))}]
    )
    agent = make_agent(
        tmp_path, deepseek, tools=[sleeper("slow", timeline, parallel_safe=True, delay=30)], thinking=True
    )

    async def cancel_soon() -> str:
        task = asyncio.ensure_future(agent.run_turn("go", session_id="s1"))
        await timeline.wait_started(2)  # mid-call: both tool runs began (not "after 0.3 s", maybe still the LLM)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return "s1"

    sid = asyncio.run(cancel_soon())
    events = agent.store.events(sid)
    assert pairing_problems(events) == []
    assert [e.data["content"] for e in events if e.kind == "tool_result"] == [
        "error: the turn was cancelled before this call finished"
    ] * 2
    deepseek.script([{"reasoning_content": "r2", "content": "fine"}])
    assert asyncio.run(agent.run_turn("again", session_id=sid)).output == "fine"
    assert deepseek.rejections == []


def test_each_step_keeps_its_own_reasoning_and_a_final_step_inherits_none(tmp_path: Path, deepseek: MockLLM) -> None:
    """Incident: the final plain-text step was stored with the tool round's chain of thought.
    Mutation check (done): carrying the previous step's reasoning into a step that had none in
    `_persist_response` turns this red (['R1 plan', 'R1 plan'])."""
    timeline = Timeline()
    deepseek.script(
        [
            {"reasoning_content": "R1 plan", "tool_calls": calls(("a", "t", '{"x": 1}'))},
            {"content": "final, no reasoning"},
            {"reasoning_content": "R3", "content": "second turn"},
        ]
    )
    agent = make_agent(tmp_path, deepseek, tools=[sleeper("t", timeline, parallel_safe=True)], thinking=True)
    first = asyncio.run(agent.run_turn("one"))
    responses = [e.data for e in agent.store.events(first.session_id) if e.kind == "response"]
    assert [r["reasoning"] for r in responses] == ["R1 plan", None]
    asyncio.run(agent.run_turn("two", session_id=first.session_id))
    sent = [m for m in deepseek.requests[-1].body["messages"] if m["role"] == "assistant"]
    assert sent[0]["reasoning_content"] == "R1 plan"
    assert sent[1].get("reasoning_content", "") == ""  # "" (tools present) — never "R1 plan"
    assert deepseek.rejections == []


def test_every_call_denied_ends_the_loop_without_asking_the_model_again(tmp_path: Path, deepseek: MockLLM) -> None:
    timeline = Timeline()
    stages = StageDispatcher()
    stages.register("before_toolcall", "guard", FunctionHook("guard", "before_toolcall", lambda v: {"deny": "not now"}))
    deepseek.script([{"tool_calls": calls(("a", "t", '{"x": 1}'), ("b", "t", '{"x": 2}'))}, {"content": "never"}])
    agent = make_agent(tmp_path, deepseek, tools=[sleeper("t", timeline, parallel_safe=True)], stages=stages)
    result = asyncio.run(agent.run_turn("go"))
    assert result.ended_by == "denied" and len(deepseek.requests) == 1 and timeline.spans == {}
    assert results_of(agent, result.session_id) == [
        ("a", "denied by guard: not now"),
        ("b", "denied by guard: not now"),
    ]


def test_rewrite_is_revalidated_and_respond_short_circuits(tmp_path: Path, deepseek: MockLLM) -> None:
    timeline = Timeline()
    stages = StageDispatcher()
    stages.register(
        "before_toolcall",
        "fix",
        FunctionHook("fix", "before_toolcall", lambda v: {"arguments": {"x": v["tool_call"]["arguments"]["x"] * 10}}),
    )
    deepseek.script([{"tool_calls": calls(("a", "t", '{"x": 4}'))}, {"content": "ok"}])
    agent = make_agent(tmp_path, deepseek, tools=[sleeper("t", timeline, parallel_safe=True)], stages=stages)
    result = asyncio.run(agent.run_turn("go"))
    assert results_of(agent, result.session_id) == [("a", "t:40")]
    stages.register("on_input", "bot", FunctionHook("bot", "on_input", lambda v: {"respond": "we are closed"}))
    before = len(deepseek.requests)
    again = asyncio.run(agent.run_turn("hello?", session_id=result.session_id))
    assert again.output == "we are closed" and again.ended_by == "respond" and len(deepseek.requests) == before


def test_provider_errors_surface_as_turn_errors_with_the_vendor_message(tmp_path: Path, deepseek: MockLLM) -> None:
    deepseek.script([{"error": {"status": 400, "message": "bad shape"}}])
    agent = make_agent(tmp_path, deepseek)
    with pytest.raises(TurnError, match="bad shape"):
        asyncio.run(agent.run_turn("go"))


def test_deltas_stream_to_the_callback(tmp_path: Path, deepseek: MockLLM) -> None:
    deepseek.script([{"reasoning_content": "thinking hard", "content": "the answer"}])
    agent = make_agent(tmp_path, deepseek, thinking=True)
    seen: list[Any] = []
    asyncio.run(agent.run_turn("go", on_event=seen.append))
    text = "".join(e.text for e in seen if e.type == "content.delta")
    reasoning = "".join(e.text for e in seen if e.type == "reasoning.delta")
    assert (text, reasoning) == ("the answer", "thinking hard")
    assert sum(e.type == "content.delta" for e in seen) > 1  # streamed in pieces, not at the end


def test_no_provider_configured_says_what_to_put_in_settings(tmp_path: Path) -> None:
    from hologram.agent import Agent, ToolRegistry
    from hologram.config.settings import load_settings
    from hologram.sessions import SessionStore

    settings = load_settings(tmp_path)
    agent = Agent(
        llm=None,
        store=SessionStore(tmp_path / "s.db"),
        tools=ToolRegistry(),
        stages=StageDispatcher(),
        no_llm_message=settings.no_provider_message(),
    )
    with pytest.raises(TurnError, match=r"no LLM provider is configured; add a provider to .*settings.toml"):
        asyncio.run(agent.run_turn("hi"))


@pytest.mark.parametrize("parallel_safe", [True, False], ids=["concurrent", "serial"])
def test_a_kernel_tool_past_its_timeout_gets_an_error_result_and_the_others_theirs(
    tmp_path: Path, deepseek: MockLLM, parallel_safe: bool
) -> None:
    """The concurrent path has one deadline for the batch (executor.py); the serial path a timeout per call.
    Either way the slow call gets the timeout result and the fast ones their own, on disk.
    Mutation check (done): an `expire` that sets ``expired`` but cancels nothing turns [concurrent] red (the
    turn waits out the slow tool: results are its output, and the elapsed-time assert fails).
    The timeout (1 s) is 100 times the quick calls' 10 ms, and the slow call (60 s) is far past any bound,
    so neither a slow nor a fast machine changes which calls make it; the elapsed bound (30 s) is only there
    to catch a turn that waited the slow call out."""
    timeline = Timeline()
    deepseek.script(
        [
            {"tool_calls": calls(("a", "quick", '{"x": 1}'), ("b", "slow", '{"x": 2}'), ("c", "quick", '{"x": 3}'))},
            {"content": "ok"},
        ]
    )
    tools = [
        sleeper("quick", timeline, parallel_safe=parallel_safe, delay=0.01),
        sleeper("slow", timeline, parallel_safe=parallel_safe, delay=60.0),
    ]
    agent = make_agent(tmp_path, deepseek, tools=tools)
    agent.executor.timeout_s = 1.0
    started = time.monotonic()
    result = asyncio.run(agent.run_turn("go"))
    assert time.monotonic() - started < 30.0
    assert results_of(agent, result.session_id) == [
        ("a", "quick:1"),
        ("b", "error: slow did not answer within 1 s"),
        ("c", "quick:3"),
    ]
    assert timeline.overlapped() is parallel_safe  # the path the test claims to test
    assert pairing_problems(agent.store.events(result.session_id)) == []
