"""The loop guard and a turn's limits beyond the step limit (issue 40 item 8), through the strict mock: a model that
repeats one call (or alternates two) is told once and then stopped with ``loop``; a model that varies its arguments,
or whose repeated call makes progress, runs to the step limit; ``max_tool_calls`` and ``max_turn_s`` make the next
LLM call the last. Each history is one the strict mock accepts on the next turn."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from hologram.agent import KernelTool, ToolInvocation
from hologram.agent.loop_guard import LoopGuard, call_key
from hologram.config.settings import AgentSettings
from hologram.llm import ToolCall
from hologram.sessions import pairing_problems
from mock_llm import MockLLM

from .helpers import OBJ, calls, make_agent


class Counted:
    """A kernel tool that counts its runs; ``progress``: each run answers differently (a terminal being polled)."""

    def __init__(self, name: str, *, progress: bool = False) -> None:
        self.name = name
        self.runs: list[dict[str, Any]] = []
        self.progress = progress

    def tool(self) -> KernelTool:
        async def handler(arguments: dict[str, Any], inv: ToolInvocation) -> str:
            self.runs.append(arguments)
            return f"{self.name}:{arguments['x']}" + (f" (run {len(self.runs)})" if self.progress else "")

        return KernelTool(self.name, f"echo x ({self.name})", handler, OBJ, parallel_safe=True)


def results(agent: Any, sid: str) -> dict[str, str]:
    return {str(e.call_id): e.data["content"] for e in agent.store.events(sid) if e.kind == "tool_result"}


def tool_messages(request: Any) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in request.body["messages"] if m["role"] == "tool"}


def next_turn_is_accepted(agent: Any, sid: str, mock: MockLLM) -> None:
    assert pairing_problems(agent.store.events(sid)) == []
    mock.script([{"content": "fine"}])
    assert asyncio.run(agent.run_turn("again", session_id=sid)).output == "fine"
    assert mock.rejections == []


def test_a_repeating_model_is_told_at_the_count_then_stopped_with_loop(tmp_path: Path, deepseek: MockLLM) -> None:
    """Mutation checks (done): `screen` never refusing (no `_repeat`) turns this red (the tool runs 4 times, the
    turn ends at max_steps); ending the turn on the first repeat (no `warned`) turns it red too (the model is
    never told: steps 3)."""
    t = Counted("t")
    same = '{"x": 1}'
    deepseek.script([{"tool_calls": calls((cid, "t", same))} for cid in ("a", "b", "c", "d")])
    agent = make_agent(tmp_path, deepseek, tools=[t.tool()], max_steps=8, agent_settings={"loop_repeats": 3})
    result = asyncio.run(agent.run_turn("go"))
    assert result.ended_by == "loop" and result.steps == 4
    assert len(t.runs) == 2  # the third call was refused, the fourth ended the turn
    got = results(agent, result.session_id)
    assert got["a"] == got["b"] == "t:1"
    assert got["c"].startswith("not run: loop guard: you called t with the same arguments 2 times")
    assert got["d"] == "not run: the loop guard ended the turn (the model kept calling t with the same arguments)"
    assert tool_messages(deepseek.requests[3])["c"] == got["c"]  # the model was told before its fourth call
    assert "kept calling t" in result.output
    next_turn_is_accepted(agent, result.session_id, deepseek)


def test_alternating_between_two_calls_is_a_loop(tmp_path: Path, deepseek: MockLLM) -> None:
    a, b = Counted("a"), Counted("b")
    script = [("1", "a"), ("2", "b"), ("3", "a"), ("4", "b"), ("5", "a"), ("6", "b")]
    deepseek.script([{"tool_calls": calls((cid, name, '{"x": 7}'))} for cid, name in script])
    agent = make_agent(tmp_path, deepseek, tools=[a.tool(), b.tool()], max_steps=10)  # loop_repeats: default 3
    result = asyncio.run(agent.run_turn("go"))
    assert result.ended_by == "loop" and result.steps == 6
    got = results(agent, result.session_id)
    assert got["5"].startswith("not run: loop guard: you called a and b in turn with the same arguments")
    assert got["6"].startswith("not run: the loop guard ended the turn")
    assert (len(a.runs), len(b.runs)) == (2, 2)
    next_turn_is_accepted(agent, result.session_id, deepseek)


def test_a_model_varying_its_arguments_runs_to_the_step_limit(tmp_path: Path, deepseek: MockLLM) -> None:
    t = Counted("t")
    deepseek.script([{"tool_calls": calls((f"c{i}", "t", json.dumps({"x": i})))} for i in range(6)])
    agent = make_agent(tmp_path, deepseek, tools=[t.tool()], max_steps=6, agent_settings={"loop_repeats": 2})
    result = asyncio.run(agent.run_turn("go"))
    assert result.ended_by == "max_steps" and result.steps == 6
    assert [r["x"] for r in t.runs] == [0, 1, 2, 3, 4]
    next_turn_is_accepted(agent, result.session_id, deepseek)


def test_a_repeated_call_whose_result_changes_is_progress_not_a_loop(tmp_path: Path, deepseek: MockLLM) -> None:
    """Polling (a terminal's screen while a build runs): same call, new answer each time."""
    t = Counted("t", progress=True)
    deepseek.script([{"tool_calls": calls((f"c{i}", "t", '{"x": 1}'))} for i in range(6)])
    agent = make_agent(tmp_path, deepseek, tools=[t.tool()], max_steps=6)
    result = asyncio.run(agent.run_turn("go"))
    assert result.ended_by == "max_steps" and len(t.runs) == 5


def test_repeats_within_one_response_are_refused_too(tmp_path: Path, deepseek: MockLLM) -> None:
    t = Counted("t")
    same = '{"x": 1}'
    deepseek.script([{"tool_calls": calls(("a", "t", same), ("b", "t", same), ("c", "t", same))}, {"content": "ok"}])
    agent = make_agent(tmp_path, deepseek, tools=[t.tool()])
    result = asyncio.run(agent.run_turn("go"))
    assert result.ended_by == "answer" and len(t.runs) == 2
    assert results(agent, result.session_id)["c"].startswith("not run: loop guard")


def test_the_tool_call_limit_makes_the_next_step_the_last(tmp_path: Path, deepseek: MockLLM) -> None:
    t = Counted("t")
    deepseek.script(
        [
            {"tool_calls": calls(("a", "t", '{"x": 1}'), ("b", "t", '{"x": 2}'))},
            {"tool_calls": calls(("c", "t", '{"x": 3}'), ("d", "t", '{"x": 4}'))},
            {"content": "enough", "tool_calls": calls(("e", "t", '{"x": 5}'))},
        ]
    )
    agent = make_agent(tmp_path, deepseek, tools=[t.tool()], agent_settings={"max_tool_calls": 3})
    result = asyncio.run(agent.run_turn("go"))
    assert result.ended_by == "max_tool_calls" and result.steps == 3 and result.output == "enough"
    assert [r["x"] for r in t.runs] == [1, 2, 3]
    got = results(agent, result.session_id)
    assert got["d"] == got["e"] == "not run: the limit of 3 tool calls in one turn was reached"
    last = deepseek.requests[-1].body
    assert last["tool_choice"] == "none" and "Tool call limit reached" in last["messages"][-1]["content"]
    next_turn_is_accepted(agent, result.session_id, deepseek)


def test_the_wall_time_limit_makes_the_next_step_the_last(tmp_path: Path, deepseek: MockLLM) -> None:
    """The turn's clock is the agent's seam: the tool moves it past ``max_turn_s``, no real time passes."""
    now = [1000.0]

    async def slow(arguments: dict[str, Any], inv: ToolInvocation) -> str:
        now[0] += 61
        return "done"

    deepseek.script(
        [{"tool_calls": calls(("a", "slow", '{"x": 1}'))}, {"tool_calls": calls(("b", "slow", '{"x": 2}'))}]
    )
    agent = make_agent(
        tmp_path, deepseek, tools=[KernelTool("slow", "takes a minute", slow, OBJ)], agent_settings={"max_turn_s": 60}
    )
    agent.clock = lambda: now[0]
    result = asyncio.run(agent.run_turn("go"))
    assert result.ended_by == "max_time" and result.steps == 2
    assert results(agent, result.session_id)["b"] == "not run: the turn's time limit of 60 s was reached"
    last = deepseek.requests[-1].body
    assert last["tool_choice"] == "none" and "Time limit reached" in last["messages"][-1]["content"]
    next_turn_is_accepted(agent, result.session_id, deepseek)


def test_call_keys_ignore_key_order_and_spacing() -> None:
    assert call_key(ToolCall("1", "t", '{"a": 1, "b": [2]}')) == call_key(ToolCall("2", "t", '{"b":[2],"a":1}'))
    assert call_key(ToolCall("1", "t", "not json")) == ("t", "not json")


def test_zero_turns_the_repetition_check_off() -> None:
    guard = LoopGuard(0, 100)
    for i in range(10):
        refused, looping = guard.screen((ToolCall(str(i), "t", "{}"),))
        guard.finished(str(i), "same")
        assert refused == {} and looping is None


def test_loop_repeats_of_one_is_refused_with_the_fix() -> None:
    with pytest.raises(ValueError, match="use 2 or more, or 0"):
        AgentSettings(loop_repeats=1)


def test_a_long_turn_keeps_only_the_calls_a_repeat_can_look_back_to() -> None:
    """400 distinct calls (a long turn): the guard holds the last 2 x (repeats - 1) calls and their results, not
    all of them, and still catches a loop and an alternation at the end; off, it holds none (issue 41)."""
    guard = LoopGuard(3, 1000)
    for i in range(400):
        refused, looping = guard.screen((ToolCall(str(i), "t", json.dumps({"x": i})),))
        guard.finished(str(i), f"result {i}")
        assert refused == {} and looping is None
    assert len(guard.ran) == 4 and guard.by_id == {}
    assert {r.result for r in guard.ran} == {f"result {i}" for i in range(396, 400)}
    for i in range(400, 402):  # A A: the third A is the repeat
        guard.screen((ToolCall(str(i), "t", '{"x": "a"}'),))
        guard.finished(str(i), "same")
    refused, looping = guard.screen((ToolCall("402", "t", '{"x": "a"}'),))
    assert "402" in refused and looping is None
    alternating = LoopGuard(3, 1000)
    for i in range(400):
        alternating.screen((ToolCall(str(i), "t", json.dumps({"x": i})),))
        alternating.finished(str(i), "r")
    for i, x in enumerate("abab", start=400):  # A B A B, then A: the repeat of an alternation
        alternating.screen((ToolCall(str(i), "t", json.dumps({"x": x})),))
        alternating.finished(str(i), x)
    refused, _ = alternating.screen((ToolCall("404", "t", '{"x": "a"}'),))
    assert "404" in refused
    off = LoopGuard(0, 1000)
    for i in range(400):
        off.screen((ToolCall(str(i), "t", "{}"),))
        off.finished(str(i), "same")
    assert off.ran == [] and off.by_id == {} and off.count == 400
