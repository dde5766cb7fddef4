"""The request body as sent (`hologram.llm.wire.encode_body`): the same bytes as `build_body`'s dict encoded at
once, for every shape of request, while no more than `ENCODE_BATCH` messages' dicts are alive at once (a long
turn's request is ~440 messages: issue 41, docs/memory.md "Sixth round")."""

from __future__ import annotations

import sys
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st
from mock_llm.validate import validate

from hologram.base import _fastjson
from hologram.llm import ChatRequest, Message, ProviderSettings, ToolCall, make_adapter_manager
from hologram.llm.hookspecs import hookimpl
from hologram.llm.wire import ENCODE_BATCH, build_body, encode_body

TOOLS = [{"type": "function", "function": {"name": "files_list", "parameters": {"type": "object"}}}]


def settings_of(vendor: str, **extra: Any) -> ProviderSettings:
    return ProviderSettings(name=vendor, kind=vendor, base_url="http://127.0.0.1:9", model=f"{vendor}-model", **extra)


def long_history(steps: int) -> list[Message]:
    """A long turn's history: `steps` responses of ten calls each, and their results (English and Chinese)."""
    out = [Message.system("you are 助手"), Message.user("a long task 长任务")]
    for step in range(steps):
        calls = [ToolCall(f"c{step}_{i}", "files_list", '{"path": "."}') for i in range(10)]
        out.append(Message.assistant(None, calls, reasoning_content=f"step {step}"))
        out += [Message.tool(c.id, f"a.txt\nb 文件 {c.id}\n" * 3) for c in calls]
    return out


def test_the_body_is_the_dicts_bytes_for_every_request_shape() -> None:
    pm = make_adapter_manager()
    history = long_history(13)  # 145 messages: more than two batches, the last one partial
    assert len(history) > 2 * ENCODE_BATCH and len(history) % ENCODE_BATCH
    requests = [
        ChatRequest(history, tools=TOOLS),
        ChatRequest(history, tools=TOOLS, stream=False, tool_choice="none", temperature=0.2, max_tokens=99),
        ChatRequest(history[:2], extra={"extra_body": {"top_k": 3}, "seed": 7}),
        ChatRequest(history[:ENCODE_BATCH]),  # exactly one batch
        ChatRequest([Message("user", "看图", images=("data:image/png;base64,AAAA",))]),
        ChatRequest([], extra={"messages": [{"role": "user", "content": "from extra"}]}),  # replaces them, as before
    ]
    for vendor, extra in (("openai", {}), ("deepseek", {"thinking": True}), ("deepseek", {})):
        for request in requests:
            body = encode_body(pm, settings_of(vendor, **extra), request)
            assert body == _fastjson.dumps_bytes(build_body(pm, settings_of(vendor, **extra), request))
            assert orjson.loads(body) == build_body(pm, settings_of(vendor, **extra), request)
    sent = orjson.loads(encode_body(pm, settings_of("deepseek"), ChatRequest(history, tools=TOOLS)))
    assert validate(sent, "deepseek", thinking_default=True) is None
    assert len(sent["messages"]) == len(history)


def test_a_plugins_request_hook_reads_every_message_and_may_replace_them() -> None:
    """The contract (docs/providers.md): a third party's request hook sees the whole body. Mutation check (done):
    `_third_party_request_hooks` answering False hands it ``[]`` and turns this red."""
    seen: list[int] = []

    class Replacing:
        @hookimpl
        def llm_transform_request(self, kind: str, settings: Any, request: Any, body: dict[str, Any]) -> None:
            seen.append(len(body["messages"]))
            body["messages"] = [{"role": "user", "content": "replaced"}]
            body["vendor_mode"] = "fast"

    pm = make_adapter_manager(Replacing())
    sent = orjson.loads(encode_body(pm, settings_of("openai"), ChatRequest(long_history(2))))
    assert sent["messages"] == [{"role": "user", "content": "replaced"}] and sent["vendor_mode"] == "fast"
    assert seen == [len(long_history(2))]


def test_a_long_requests_dicts_are_not_all_alive_at_once() -> None:
    """The pymalloc blocks alive while the body is made, seen from the adapters' message hook: bounded by a batch,
    not by the ~1,300 dicts and lists of the request's 440 messages (mutation-checked: ENCODE_BATCH at 10,000 —
    every message's dicts at once, as `build_body` makes them — fails)."""
    seen: list[int] = []

    class Watching:
        @hookimpl
        def llm_transform_message(self, kind: str, settings: Any, message: Any, wire: Any, has_tools: bool) -> None:
            seen.append(sys.getallocatedblocks())

    pm = make_adapter_manager(Watching())
    request = ChatRequest(long_history(40), tools=TOOLS)  # 442 messages, 400 results
    s = settings_of("openai")
    encode_body(pm, s, request)  # warm: first-use caches
    seen.clear()
    start = sys.getallocatedblocks()
    body = encode_body(pm, s, request)
    grown = max(seen) - start
    seen.clear()
    start = sys.getallocatedblocks()
    whole = build_body(pm, s, request)
    grown_whole = max(seen) - start
    assert grown_whole > 1_000, grown_whole  # the dicts of every message at once: what the test would catch
    assert grown < grown_whole / 3, (grown, grown_whole)
    assert body == _fastjson.dumps_bytes(whole)


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 3 * ENCODE_BATCH), st.booleans())
def test_any_length_encodes_as_the_dict(n: int, stream: bool) -> None:
    pm = make_adapter_manager()
    history = [Message.user(f"q{i} 问{i}") if i % 2 else Message.assistant(f"a{i}") for i in range(n)]
    request = ChatRequest(history, stream=stream)
    assert encode_body(pm, settings_of("openai"), request) == _fastjson.dumps_bytes(
        build_body(pm, settings_of("openai"), request)
    )
