"""DeepSeek reasoning replay and thinking mode, and the OpenAI adapter's stripping, against the strict mock.

The strict mock answers 400 to an assistant tool-call turn without `reasoning_content` in thinking mode,
to `thinking` inside `extra_body`, and (OpenAI) to any `reasoning_content` field, as the vendors do.
"""

from __future__ import annotations

from typing import Any

from hologram.llm import ChatRequest, ChatResult, Message, ProviderChain, ToolCall, make_adapter_manager
from hologram.llm.wire import build_body
from mock_llm import MockLLM
from tests.kit.loop import run
from tests.kit.providers import provider
from tests.llm.helpers import chain

TOOLS = [{"type": "function", "function": {"name": "read", "parameters": {"type": "object"}}}]
R1 = "I should read both files.\n  First /a, then /b. "
R2 = "Now compare them…\t(unicode ✓)"


def call(i: str, name: str = "read") -> dict[str, str]:
    return {"id": f"call_{i}", "name": name, "arguments": f'{{"path": "/{i}"}}'}


def assistants(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in body["messages"] if m["role"] == "assistant"]


def test_multi_step_thinking_session_replays_reasoning_and_never_draws_a_400() -> None:
    """Two turns, parallel tool calls, thinking enabled; every request is checked by the strict mock.

    Mutation checks: (1) dropping `reasoning_content` from DeepSeek's accepted message fields sent `""`
    instead of R1/R2 on request 3 (replay lost) and this went red; (2) removing the `""` filler for turns
    without reasoning left the final answer of turn 1 without the field on request 4 and this went red.
    Both were restored.
    """
    with MockLLM("deepseek") as mock:
        mock.script(
            [
                {"reasoning_content": R1, "tool_calls": [call("a"), call("b")]},
                {"reasoning_content": R2, "content": "Checking one more.", "tool_calls": [call("c")]},
                {"content": "They differ in line 3."},  # final step: no reasoning streamed
                {"reasoning_content": "turn two thinking", "tool_calls": [call("d")]},
                {"reasoning_content": "", "content": "Done."},
            ]
        )
        history: list[Message] = [Message.user("compare /a and /b")]
        results: list[ChatResult] = []

        async def step(c: ProviderChain) -> ChatResult:
            result = await c.complete(ChatRequest(history, tools=TOOLS))
            results.append(result)
            history.append(result.to_message())
            for tc in result.tool_calls:  # parallel results, finalised in call order
                history.append(Message.tool(tc.id, f"contents of {tc.id}", tc.name))
            return result

        async def go() -> None:
            async with chain(provider(mock, thinking=True)) as c:
                while (await step(c)).tool_calls:
                    pass
                history.append(Message.user("and /d?"))
                while (await step(c)).tool_calls:
                    pass

        run(go())
        assert mock.rejections == [], [r.body for r in mock.rejections]
        bodies = [r.body for r in mock.requests]
    assert len(bodies) == 5
    assert all(b["thinking"] == {"type": "enabled"} and "extra_body" not in b for b in bodies)
    assert [r.reasoning for r in results] == [R1, R2, None, "turn two thinking", ""]
    # request 3 replays both tool rounds byte-exact
    assert [m.get("reasoning_content") for m in assistants(bodies[2])] == [R1, R2]
    # request 4 (next user turn): the final answer of turn 1 had no reasoning -> "" because tools are sent
    assert [m.get("reasoning_content") for m in assistants(bodies[3])] == [R1, R2, ""]
    assert assistants(bodies[3])[2]["content"] == "They differ in line 3."
    assert [m.get("reasoning_content") for m in assistants(bodies[4])] == [R1, R2, "", "turn two thinking"]


def test_final_step_never_inherits_the_tool_rounds_reasoning() -> None:
    """The original stored the last tool round's response and passed its chain of thought off as the
    final step's. Here the final step streams no reasoning, so its result (and stored message) has none.

    Mutation check: carrying the previous call's reasoning over in `ProviderChain.complete` when a result
    had none (`result = replace(result, reasoning=self._last_reasoning)`) made `final.reasoning == R1` and
    the replayed final turn carry R1; this test went red, then the code was restored."""
    with MockLLM("deepseek") as mock:
        mock.script([{"reasoning_content": R1, "tool_calls": [call("a")]}, {"content": "final"}, {"content": "x"}])

        async def go() -> tuple[ChatResult, ChatResult]:
            async with chain(provider(mock, thinking=True)) as c:
                first = await c.complete(ChatRequest([Message.user("q")], tools=TOOLS))
                history = [Message.user("q"), first.to_message(), Message.tool("call_a", "1")]
                final = await c.complete(ChatRequest(history, tools=TOOLS))
                history += [final.to_message(), Message.user("next")]
                await c.complete(ChatRequest(history))  # no tools: no "" filler either
                return first, final

        first, final = run(go())
        last_body = mock.requests[-1].body
    assert first.reasoning == R1
    assert final.reasoning is None and final.to_message().reasoning_content is None
    assert [m.get("reasoning_content", "<absent>") for m in assistants(last_body)] == [R1, "<absent>"]


def test_old_turn_without_reasoning_gets_empty_string_only_with_tools_and_real_values_survive() -> None:
    """A session written by an older version: assistant tool-call turns without reasoning fields.

    Mutation checks: (1) removing the `""` filler drew the strict mock's 400 "Missing `reasoning_content`
    field in the assistant message at message index 1" and went red; (2) writing `""` whenever tools are
    sent (overwriting) replaced "kept" by "" and went red. Both restored."""
    old = [
        Message.from_dict({"role": "user", "content": "q"}),
        Message.from_dict({"role": "assistant", "tool_calls": [{"id": "call_o", "name": "read", "arguments": "{}"}]}),
        Message.from_dict({"role": "tool", "tool_call_id": "call_o", "content": "1"}),
        Message.assistant("kept one", reasoning_content="kept"),
        Message.user("again"),
    ]
    with MockLLM("deepseek") as mock:
        mock.script([{"content": "ok"}, {"content": "ok"}])

        async def go() -> None:
            async with chain(provider(mock, thinking=True)) as c:
                await c.complete(ChatRequest(old, tools=TOOLS))
                await c.complete(ChatRequest(old[3:]))

        run(go())
        assert mock.rejections == []
        with_tools, without_tools = (r.body for r in mock.requests)
    assert [m.get("reasoning_content") for m in assistants(with_tools)] == ["", "kept"]
    assert [m.get("reasoning_content", "<absent>") for m in assistants(without_tools)] == ["kept"]


def test_thinking_at_top_level_and_extra_body_merged() -> None:
    pm = make_adapter_manager()
    with MockLLM("deepseek") as mock:
        on, off, unset = (provider(mock, thinking=v) for v in (True, False, None))
        req = ChatRequest([Message.user("q")])
        assert build_body(pm, on, req)["thinking"] == {"type": "enabled"}
        assert build_body(pm, off, req)["thinking"] == {"type": "disabled"}
        assert "thinking" not in build_body(pm, unset, req)
        sdk_style = ChatRequest([Message.user("q")], extra={"extra_body": {"thinking": {"type": "enabled"}}})
        body = build_body(pm, unset, sdk_style)
        assert body["thinking"] == {"type": "enabled"} and "extra_body" not in body
        mock.script([{"content": "ok"}])
        assert run(_complete(mock, sdk_style)).content == "ok" and mock.rejections == []


async def _complete(mock: MockLLM, req: ChatRequest) -> ChatResult:
    async with chain(provider(mock)) as c:
        return await c.complete(req)


def test_openai_adapter_strips_reasoning_content() -> None:
    """A history produced by DeepSeek, sent to an OpenAI endpoint (a fallback mid-session).

    Mutation check: adding "reasoning_content" to the OpenAI adapter's accepted fields made the strict
    mock answer 400 "Additional properties are not allowed ('reasoning_content' was unexpected)"; the test
    went red, then the code was restored."""
    history = [
        Message.user("q"),
        Message.assistant(None, [ToolCall("call_a", "read", "{}")], reasoning_content=R1),
        Message.tool("call_a", "1"),
        Message.assistant("done", reasoning_content=R2),
        Message.user("more"),
    ]
    with MockLLM("openai") as mock:
        mock.script([{"content": "ok"}])
        assert run(_complete(mock, ChatRequest(history, tools=TOOLS))).content == "ok"
        assert mock.rejections == []
        assert "reasoning_content" not in str(mock.requests[0].body)
        assert "thinking" not in mock.requests[0].body
