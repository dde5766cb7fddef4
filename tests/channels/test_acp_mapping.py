"""The ACP adapter's translations, without a kernel: prompt blocks → input parts, stored events → the updates
`session/load` replays, live events → updates, kernel errors → ACP errors, and docs/channels.md's tables held
to the code (the e2e tests in tests/e2e/test_acp_e2e.py run them through `hologram acp`).

Mutation checks (done): `LiveTurn` sending the whole answer again at ``turn.ended`` (not only the
``before_output`` rest) turns test_a_hooks_addition_is_sent_once red; `replay` leaving a call ``in_progress``
(not its result's status) turns test_replay_draws_each_call_once_with_its_final_status red.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError
from acp.helpers import embedded_blob_resource, embedded_text_resource, image_block, resource_block, text_block
from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    AudioContentBlock,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    ResourceContentBlock,
    ToolCallProgress,
    ToolCallStart,
    UserMessageChunk,
)

from hologram.api import turn as api
from hologram.channels.acp.agent import request_error
from hologram.channels.acp.content import blocks_of, input_of
from hologram.channels.acp.updates import (
    DECISIONS,
    OUTPUT_TAIL,
    PERMISSION_OPTIONS,
    STOP_REASONS,
    LiveTurn,
    permission_options,
    replay,
)
from hologram.clients.errors import HologramError, Problem, RpcError

DOC = Path(__file__).resolve().parents[2] / "docs" / "channels.md"
PNG = "iVBORw0KGgo="


def test_one_text_block_is_a_text_turn_and_the_rest_are_parts() -> None:
    assert input_of([text_block("hello")]) == ("hello", None)
    text, parts = input_of(
        [
            text_block("what is in these?"),
            image_block(PNG, "image/png"),
            ImageContentBlock(type="image", data="", mime_type="image/png", uri="https://example.com/a.png"),
            resource_block(embedded_text_resource("file:///home/me/proj/notes%20a.md", "# notes", mime_type="text/markdown")),
            resource_block(embedded_blob_resource("file:///home/me/proj/a.bin", "AAEC")),
            ResourceContentBlock(type="resource_link", name="spec", uri="https://example.com/spec"),
        ]
    )  # fmt: skip
    assert text is None and parts == [
        {"type": "text", "text": "what is in these?"},
        {"type": "image", "mime": "image/png", "data": PNG},
        {"type": "image", "url": "https://example.com/a.png"},
        {"type": "file", "name": "/home/me/proj/notes a.md", "mime": "text/markdown", "data": "# notes",
         "encoding": "text"},
        {"type": "file", "name": "/home/me/proj/a.bin", "mime": "application/octet-stream", "data": "AAEC"},
        {"type": "text", "text": "[link spec: https://example.com/spec]"},
    ]  # fmt: skip


@pytest.mark.parametrize(
    "blocks",
    [[AudioContentBlock(type="audio", data="AAAA", mime_type="audio/wav")], [], [text_block("")]],
    ids=["audio", "empty", "empty-text"],
)
def test_what_the_turn_api_cannot_take_is_invalid_params(blocks: list[Any]) -> None:
    with pytest.raises(RequestError) as raised:
        input_of(blocks)
    assert raised.value.code == -32602


def test_stored_parts_come_back_as_the_blocks_they_were() -> None:
    _, parts = input_of(
        [
            text_block("see"),
            image_block(PNG, "image/png"),
            resource_block(embedded_text_resource("file:///a/b.md", "x")),
        ]
    )
    blocks = blocks_of({"text": "see …", "parts": parts})
    assert [type(b) for b in blocks] == [type(text_block("")), ImageContentBlock, EmbeddedResourceContentBlock]
    assert blocks[2].resource.uri == "file:///a/b.md" and blocks[2].resource.text == "x"
    assert blocks_of({"text": "as rewritten by a hook", "original": "as typed"})[0].text == "as typed"


def events(*rows: tuple[str, dict[str, Any], str | None]) -> list[dict[str, Any]]:
    return [{"seq": n + 1, "kind": k, "data": d, "call_id": c, "turn": "t1"} for n, (k, d, c) in enumerate(rows)]


def test_replay_draws_each_call_once_with_its_final_status() -> None:
    calls = [{"id": "a", "name": "lookup", "arguments": '{"w": 1}'}, {"id": "b", "name": "deploy", "arguments": "{}"}]
    updates = replay(
        events(
            ("input", {"text": "go"}, None),
            ("response", {"reasoning": "think", "content": "", "tool_calls": calls}, None),
            ("tool_result", {"name": "lookup", "content": "42", "status": "ok", "is_error": False}, "a"),
            ("tool_result", {"name": "deploy", "content": "not approved", "status": "denied", "is_error": True}, "b"),
            ("response", {"reasoning": None, "content": "done"}, None),
            ("output", {"text": "done", "ended_by": "answer"}, None),
        )
    )
    assert [type(u) for u in updates] == [
        UserMessageChunk, AgentThoughtChunk, ToolCallStart, ToolCallStart, AgentMessageChunk
    ]  # fmt: skip
    a, b = updates[2], updates[3]
    assert (a.tool_call_id, a.title, a.status, a.raw_input, a.content[0].content.text) == (
        "a", "lookup", "completed", {"w": 1}, "42"
    )  # fmt: skip
    assert (b.status, b.raw_output) == ("failed", {"status": "denied", "is_error": True})
    assert updates[4].content.text == "done", "the answer once: the output event added nothing"


def test_a_hooks_addition_is_sent_once() -> None:
    turn = LiveTurn()
    sent = [turn.updates(e) for e in (
        api.ItemStarted(session="s", turn="t", item={"id": "t.2", "type": "agent_message"}),
        api.ContentDelta(session="s", turn="t", text="the answer"),
        api.TurnEnded(session="s", turn="t", stop_reason="answer", output="the answer\n-- signed"),
    )]  # fmt: skip
    assert [u.content.text for batch in sent for u in batch] == ["the answer", "\n-- signed"]
    replayed = replay(
        events(("response", {"content": "the answer"}, None), ("output", {"text": "the answer\n-- signed"}, None))
    )
    assert [u.content.text for u in replayed] == ["the answer", "\n-- signed"], "load shows what live showed"
    rewritten = LiveTurn()
    rewritten.updates(api.ContentDelta(session="s", turn="t", text="raw"))
    assert rewritten.updates(api.TurnEnded(session="s", turn="t", output="REWRITTEN")) == [], "not sent twice"


def test_a_running_calls_output_is_its_tail() -> None:
    turn = LiveTurn()
    turn.updates(api.ToolOutput(session="s", turn="t", call_id="c", text="x" * OUTPUT_TAIL))
    [update] = turn.updates(api.ToolOutput(session="s", turn="t", call_id="c", text="END"))
    assert isinstance(update, ToolCallProgress) and update.status == "in_progress"
    shown = update.content[0].content.text
    assert len(shown) == OUTPUT_TAIL and shown.endswith("END")
    [done] = turn.updates(api.ToolResult(session="s", turn="t", call_id="c", content="ok", status="ok"))
    assert done.status == "completed" and "c" not in turn.outputs


def test_kernel_errors_become_acp_errors_without_reusing_codes() -> None:
    assert request_error(RpcError(3, "there is no session 'x'")).code == -32002  # NO_SUCH_SESSION: not found
    assert request_error(RpcError(-32602, "turn/start: input.0: …")).code == -32602
    not_ready = request_error(RpcError(-32002, "the kernel is stopping"))
    assert (not_ready.code, str(not_ready)) == (-32603, "the kernel is stopping"), "NOT_READY is not ACP's -32002"
    assert request_error(RpcError(-32000, "a tool failed")).code == -32603, "-32000 is ACP's auth_required"
    none = request_error(HologramError(Problem("no kernel is running with this data directory", hint="hologram up")))
    assert str(none) == "no kernel is running with this data directory (hologram up)"


def _table(heading: str) -> list[list[str]]:
    section = DOC.read_text(encoding="utf-8").split(heading, 1)[1].split("\n\n", 2)[1]
    rows = [r.strip().strip("|").split("|") for r in section.splitlines() if r.startswith("|")][2:]
    return [[cell.strip() for cell in row] for row in rows]


def test_the_docs_tables_are_the_code() -> None:
    stops = {re.findall(r"`(\w+)`", row[0])[0]: re.findall(r"`(\w+)`", row[1]) for row in _table("`stopReason`, from")}
    assert {k: v[0] for k, v in stops.items() if k != "error"} == STOP_REASONS
    assert stops["error"] == [] or stops["error"][0] not in STOP_REASONS.values()
    options = _table("Permission options → decisions")
    documented = {re.findall(r"`(\w+)`", row[0])[0]: re.findall(r"`(\w+)`", row[1])[0] for row in options[:-1]}
    assert documented == DECISIONS
    assert [(o.option_id, o.kind) for o in PERMISSION_OPTIONS] == [
        tuple(re.findall(r"`(\w+)`", row[0])[:2]) for row in options[:-1]
    ]


def test_the_permission_options_speak_the_users_language() -> None:
    chinese = permission_options({"LANG": "zh_CN.UTF-8"})
    assert [o.name for o in chinese] == ["允许一次", "始终允许", "拒绝", "始终拒绝"]
    assert permission_options({"LC_ALL": "en_US.UTF-8", "LANG": "zh_CN.UTF-8"})[0].name == "Allow once"
    assert [(o.option_id, o.kind) for o in chinese] == [(o.option_id, o.kind) for o in PERMISSION_OPTIONS]
