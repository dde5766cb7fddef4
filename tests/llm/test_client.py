"""Streaming, tool-call accumulation, usage, and the transport seam, against the strict mock on loopback."""

from __future__ import annotations

import json

import httpx

from hologram.llm import (
    ChatRequest,
    ChatResult,
    Delta,
    Done,
    Message,
    ProviderChain,
    ProviderSettings,
    StreamEvent,
    ToolCall,
    Usage,
)
from mock_llm import MockLLM
from tests.kit.loop import run
from tests.kit.providers import provider
from tests.llm.helpers import chain

TOOLS = [{"type": "function", "function": {"name": "read", "parameters": {"type": "object"}}}]
ARGS_A = '{"path": "/etc/hosts", "note": "ünïcode ✓"}'
ARGS_B = '{"dir": "/tmp"}'
TWO_CALLS = {
    "content": "Reading both.",
    "tool_calls": [
        {"id": "call_a", "name": "read", "arguments": ARGS_A},
        {"id": "call_b", "name": "ls", "arguments": ARGS_B},
    ],
    "usage": {"prompt_tokens": 50, "completion_tokens": 20, "cached_tokens": 32, "reasoning_tokens": 0},
}


def ask(mock: MockLLM, req: ChatRequest, deltas: list[Delta] | None = None, **settings: object) -> ChatResult:
    async def go() -> ChatResult:
        async with chain(provider(mock, **settings)) as c:  # type: ignore[arg-type]
            return await c.complete(req, deltas.append if deltas is not None else None)

    return run(go())


def test_streamed_content_and_tool_calls_accumulate(mock_llm: MockLLM) -> None:
    mock_llm.script([TWO_CALLS])
    deltas: list[Delta] = []
    result = ask(mock_llm, ChatRequest([Message.user("hi")], tools=TOOLS), deltas)
    assert result.content == "Reading both."
    assert result.tool_calls == (ToolCall("call_a", "read", ARGS_A), ToolCall("call_b", "ls", ARGS_B))
    assert result.finish_reason == "tool_calls"
    assert len(deltas) > 1 and "".join(d.text for d in deltas) == "Reading both."
    assert result.usage == Usage(prompt_tokens=50, completion_tokens=20, total_tokens=70, cached_tokens=32)
    sent = mock_llm.requests[0]
    assert sent.body["stream"] is True and sent.body["stream_options"] == {"include_usage": True}
    assert sent.headers["accept"] == "text/event-stream"


def test_tool_calls_keyed_by_id_when_server_reuses_index_zero() -> None:
    """Mutation check: looking a delta up by index before id in `add_tool_delta` glued both calls into one
    call `call_a` with arguments ARGS_A+ARGS_B; this test went red, then the code was restored."""
    with MockLLM("openai", reuse_index_zero=True) as mock:
        mock.script([TWO_CALLS])
        result = ask(mock, ChatRequest([Message.user("hi")], tools=TOOLS))
    assert result.tool_calls == (ToolCall("call_a", "read", ARGS_A), ToolCall("call_b", "ls", ARGS_B))
    assert all(json.loads(c.arguments) for c in result.tool_calls)


def test_reasoning_deltas_and_usage_from_deepseek() -> None:
    with MockLLM("deepseek") as mock:
        mock.script(
            [
                {
                    "reasoning_content": "  step one\n\tstep two  ",
                    "content": "42",
                    "usage": {"reasoning_tokens": 7, "cached_tokens": 5},
                }
            ]
        )
        deltas: list[Delta] = []
        result = ask(mock, ChatRequest([Message.user("q")]), deltas)
    assert result.reasoning == "  step one\n\tstep two  ", "byte-exact, whitespace included"
    assert deltas[0].kind == "reasoning" and deltas[-1].kind == "content"
    assert "".join(d.text for d in deltas if d.kind == "reasoning") == result.reasoning
    assert result.usage is not None
    assert (result.usage.reasoning_tokens, result.usage.cached_tokens) == (7, 5)


def test_non_streaming(mock_llm: MockLLM) -> None:
    mock_llm.script([TWO_CALLS])
    result = ask(mock_llm, ChatRequest([Message.user("hi")], tools=TOOLS, stream=False))
    assert result.tool_calls[1] == ToolCall("call_b", "ls", ARGS_B)
    assert result.usage is not None and result.usage.cached_tokens == 32
    assert "stream_options" not in mock_llm.requests[0].body


def test_async_iterator(mock_llm: MockLLM) -> None:
    mock_llm.script([{"content": "hello there, general"}])

    async def go() -> list[StreamEvent]:
        async with chain(provider(mock_llm)) as c:
            return [ev async for ev in c.stream(ChatRequest([Message.user("hi")]))]

    events = run(go())
    assert isinstance(events[-1], Done) and events[-1].result.content == "hello there, general"
    assert "".join(e.text for e in events if isinstance(e, Delta)) == "hello there, general"


def test_api_key_sent_from_env_and_never_in_repr() -> None:
    with MockLLM("openai", api_key="sk-secret-abcd") as mock:
        mock.script([{"content": "ok"}])
        s = ProviderSettings(name="p", base_url=mock.base_url, model="m", api_key_env="MY_KEY")

        async def go() -> ChatResult:
            async with ProviderChain([s], env={"MY_KEY": "sk-secret-abcd"}) as c:
                return await c.complete(ChatRequest([Message.user("hi")]))

        assert run(go()).content == "ok"
        keyed = ProviderSettings(name="p", base_url=mock.base_url, model="m", api_key="sk-secret-abcd")
        assert "sk-secret" not in repr(keyed) and "sk-secret" not in str(keyed.model_dump())


def test_transport_seam_needs_no_network() -> None:
    """Users can test against a fake transport; the chain passes it to httpx untouched."""
    seen: list[dict[str, object]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        body = {"choices": [{"message": {"role": "assistant", "content": "fake"}, "finish_reason": "stop"}]}
        return httpx.Response(200, json=body)

    s = ProviderSettings(name="p", base_url="https://llm.invalid/v1", model="m")

    async def go() -> ChatResult:
        async with ProviderChain([s], transport=httpx.MockTransport(handler)) as c:
            return await c.complete(ChatRequest([Message.user("hi")], stream=False))

    assert run(go()).content == "fake"
    assert seen[0]["model"] == "m"


def test_the_request_body_is_one_compact_utf8_json_with_its_headers() -> None:
    """The body goes out as one bytes object encoded once (orjson: no spaces, UTF-8 unescaped; the build's dict is
    not kept through the streamed answer, issue 41), with its JSON content type and length. (httpx's own ``json=``
    writes the same bytes since 0.28: what this guards is the wire form, the memory is tools/bench's.)"""
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        body = {"choices": [{"message": {"role": "assistant", "content": "好"}, "finish_reason": "stop"}]}
        return httpx.Response(200, json=body)

    s = ProviderSettings(name="p", base_url="https://llm.invalid/v1", model="m")

    async def go() -> ChatResult:
        async with ProviderChain([s], transport=httpx.MockTransport(handler)) as c:
            return await c.complete(ChatRequest([Message.user("你好, world")], stream=False))

    assert run(go()).content == "好"
    raw = seen[0].content
    assert "你好, world".encode() in raw and b'","' in raw and b'", "' not in raw
    assert json.loads(raw)["messages"][-1]["content"] == "你好, world"
    assert seen[0].headers["content-type"] == "application/json"
    assert int(seen[0].headers["content-length"]) == len(raw)
