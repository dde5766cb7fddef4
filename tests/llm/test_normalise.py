"""The history normaliser: orphans dropped, missing results synthesised, pairs kept together.

The property test sends normalised random histories to the strict mock's validator (the same rules the
server applies), so "the vendor would accept it" is checked, not assumed.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from mock_llm.validate import validate

from hologram.llm import (
    MISSING_RESULT,
    ChatRequest,
    Message,
    ProviderSettings,
    ToolCall,
    make_adapter_manager,
    normalise_history,
)
from hologram.llm.wire import build_body
from mock_llm import MockLLM
from tests.kit.loop import run
from tests.kit.providers import provider
from tests.llm.helpers import chain

U = Message.user("q")


def calls(*ids: str) -> Message:
    return Message.assistant(None, [ToolCall(i, "f", "{}") for i in ids])


def res(i: str, text: str = "ok") -> Message:
    return Message.tool(i, text)


def test_orphan_tool_messages_are_dropped() -> None:
    """Mutation check: appending tool messages that no call claimed (instead of skipping them) kept the
    orphan; this test and the property test below went red; restored."""
    notes: list[str] = []
    out = normalise_history([U, res("ghost"), calls("a"), res("a"), res("a", "dup"), Message.user("x")], notes)
    assert out == [U, calls("a"), res("a"), Message.user("x")]
    assert len(notes) == 2 and "orphan" in notes[0]


def test_unanswered_call_gets_a_synthetic_error_result() -> None:
    """Mutation check: skipping the synthetic result left call `b` unanswered (the strict mock's 400); this
    test and the property test below went red; restored."""
    out = normalise_history([U, calls("a", "b"), res("a"), Message.user("next")])
    assert out[3] == Message.tool("b", MISSING_RESULT, "f")
    assert MISSING_RESULT.startswith("error: ")


def test_results_are_moved_next_to_their_call_in_call_order() -> None:
    out = normalise_history([U, calls("a", "b"), Message.user("interrupt"), res("b"), res("a")])
    assert out == [U, calls("a", "b"), res("a"), res("b"), Message.user("interrupt")]


def test_reused_call_id_does_not_steal_a_later_result() -> None:
    out = normalise_history([U, calls("a"), Message.user("u"), calls("a"), res("a", "second")])
    assert out == [
        U,
        calls("a"),
        Message.tool("a", MISSING_RESULT, "f"),
        Message.user("u"),
        calls("a"),
        res("a", "second"),
    ]


def test_a_clean_history_is_unchanged() -> None:
    history = [Message.system("s"), U, calls("a", "b"), res("a"), res("b"), Message.assistant("done")]
    assert normalise_history(history) == history


def test_normalised_history_passes_the_strict_mock() -> None:
    broken = [U, res("zombie"), calls("a", "b"), res("b"), Message.user("later")]
    with MockLLM("openai") as mock:
        mock.script([{"content": "fine"}])

        async def go() -> str:
            async with chain(provider(mock)) as c:
                return (await c.complete(ChatRequest(broken))).content

        assert run(go()) == "fine" and mock.rejections == []


message = st.one_of(
    st.just(U),
    st.builds(lambda ids: calls(*ids), st.lists(st.sampled_from("abcd"), min_size=1, max_size=3, unique=True)),
    st.builds(res, st.sampled_from("abcde")),
    st.just(Message.assistant("text")),
)


def provider_settings(vendor: str) -> ProviderSettings:
    return ProviderSettings(name=vendor, kind=vendor, base_url="http://127.0.0.1:9/v1", model="m")


@settings(max_examples=300, deadline=None)
@given(st.lists(message, min_size=1, max_size=12))
def test_any_history_is_accepted_after_normalising(history: list[Message]) -> None:
    """Mutation check: dropping the synthetic result, and separately keeping orphans, made hypothesis find
    a history the mock's validator rejects; red both times, restored."""
    pm = make_adapter_manager()
    tools = [{"type": "function", "function": {"name": "f"}}]
    for vendor in ("openai", "deepseek"):
        body = build_body(pm, provider_settings(vendor), ChatRequest([U, *history], tools=tools))
        assert validate(body, vendor, thinking_default=True) is None, body
    out = normalise_history(history)
    called = [c.id for m in out for c in m.tool_calls]
    answered = [m.tool_call_id or "" for m in out if m.role == "tool"]
    assert sorted(called) == sorted(answered)
