"""The turn API's events as ACP ``session/update`` notifications, live (`LiveTurn`) and replayed (`replay`).

- ``content.delta`` → ``agent_message_chunk``; ``reasoning.delta`` → ``agent_thought_chunk``;
- ``tool.call`` → ``tool_call`` (``in_progress``; ``rawInput``: the arguments as they will run — the
  ``item.started`` just before it has none);
- ``tool.output`` → ``tool_call_update`` with the call's output so far;
- ``approval.resolved`` approved → ``tool_call_update`` ``in_progress`` (the request itself is
  ``session/request_permission``, `agent`);
- ``tool.result`` → ``tool_call_update`` ``completed`` or ``failed``, with the result; one that carried images
  (a browser screenshot) → a second ``tool_call_update`` with the text and the images (`with_images`: their
  bytes come from ``media/read``, a round trip the text does not wait for);
- ``turn.ended`` → what a ``before_output`` hook added to the answer; then the prompt's ``stopReason``.

Both directions give the editor the same picture: `replay` turns the stored events of ``sessions/read`` into
what `LiveTurn` sent while the turn ran, each tool call once with its final status. `LiveTurn` keeps only what
drawing needs (a running call's output so far, the last message's streamed text); the turn itself is the
kernel's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from acp.helpers import (
    image_block,
    start_tool_call,
    text_block,
    tool_content,
    update_agent_message_text,
    update_agent_thought_text,
    update_tool_call,
    update_user_message,
)
from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    PermissionOption,
    PermissionOptionKind,
    StopReason,
    ToolCallProgress,
    ToolCallStart,
    ToolCallStatus,
    UserMessageChunk,
)

from hologram.api import turn as api
from hologram.channels.acp.content import blocks_of

Update = UserMessageChunk | AgentMessageChunk | AgentThoughtChunk | ToolCallStart | ToolCallProgress
OUTPUT_TAIL = 8_000  # characters of a running call's output the editor is sent (each update replaces the last)

# turn.ended's stop_reason → the prompt's stopReason (docs/channels.md). `error` is not a stop reason in ACP:
# the prompt answers with a JSON-RPC error carrying turn.error's message. `denied` (every call of a step was
# refused) is a finished turn whose history the next prompt reads, so it is not ACP's `refusal`, which tells
# the editor that the prompt and what followed will not be in the next prompt.
STOP_REASONS: dict[str, StopReason] = {
    "answer": "end_turn",
    "respond": "end_turn",
    "denied": "end_turn",
    "loop": "max_turn_requests",
    "max_steps": "max_turn_requests",
    "max_tool_calls": "max_turn_requests",
    "max_time": "max_turn_requests",
    "cancelled": "cancelled",
}

# the options of session/request_permission (id, kind, label in English and Chinese), and the turn API decision
# each one is (docs/protocol.md §9)
_OPTIONS: list[tuple[str, PermissionOptionKind, str, str]] = [
    ("approve_once", "allow_once", "Allow once", "允许一次"),
    ("always", "allow_always", "Always allow", "始终允许"),
    ("deny", "reject_once", "Reject", "拒绝"),
    ("deny_always", "reject_always", "Always reject", "始终拒绝"),
]
DECISIONS = {"approve_once": "approve_once", "always": "always", "deny": "deny", "deny_always": "deny"}


def permission_options(environ: Mapping[str, str]) -> list[PermissionOption]:
    """The options an editor shows, labelled in the user's language: ACP's ``initialize`` carries no locale,
    so it is the one the editor gave this process (``LC_ALL``, ``LC_MESSAGES``, ``LANG``): Chinese for
    ``zh*``, else English."""
    locale = next((environ[k] for k in ("LC_ALL", "LC_MESSAGES", "LANG") if environ.get(k)), "")
    chinese = locale.lower().startswith("zh")
    return [PermissionOption(option_id=o, kind=kind, name=zh if chinese else en) for o, kind, en, zh in _OPTIONS]


PERMISSION_OPTIONS = permission_options({})  # English: the labels docs/channels.md shows

_RESULT_STATUS: dict[str, ToolCallStatus] = {"ok": "completed", "answered": "completed"}  # the rest: failed


def result_status(status: str, is_error: bool) -> ToolCallStatus:
    """A ``tool.result``'s status as ACP's: ``ok`` and ``answered`` (a stage hook answered) completed; an
    error, a denied, invalid, unknown or skipped call failed."""
    return "failed" if is_error else _RESULT_STATUS.get(status, "failed")


def arguments_of(raw: Any) -> Any:
    """A stored call's arguments (the model's JSON text) as an object for ``rawInput``; the text if not JSON."""
    if not isinstance(raw, str):
        return raw
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def remainder(streamed: str, output: str) -> str:
    """What a ``before_output`` hook appended to the streamed answer (the editor already has the rest); a
    rewritten answer is not sent twice (the session stores it)."""
    return output[len(streamed) :] if output.startswith(streamed) else ""


def _result(call_id: str, status: str, is_error: bool, content: str) -> ToolCallProgress:
    return update_tool_call(
        call_id,
        status=result_status(status, is_error),
        content=[tool_content(text_block(content))] if content else None,
        raw_output={"status": status, "is_error": is_error},
    )


def with_images(
    call_id: str, status: str, is_error: bool, content: str, images: list[tuple[str, str]]
) -> ToolCallProgress:
    """A result's update again, its text followed by its images (``(base64, mime)`` each) as image blocks: a
    ``tool_call_update``'s content replaces the call's, so the text is sent with them."""
    done = _result(call_id, status, is_error, content)
    blocks = [*(done.content or []), *(tool_content(image_block(data, mime)) for data, mime in images)]
    return done.model_copy(update={"content": blocks})


def stored_images(events: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any], list[dict[str, Any]]]]:
    """The stored tool results that carried images: ``(call_id, data, images)`` each, for a replay to add them."""
    out = []
    for event in events:
        data = event.get("data")
        if event.get("kind") == "tool_result" and isinstance(data, dict) and isinstance(data.get("images"), list):
            out.append((str(event.get("call_id")), data, [i for i in data["images"] if isinstance(i, dict)]))
    return out


class LiveTurn:
    """The updates of one running turn, event by event."""

    def __init__(self) -> None:
        self.outputs: dict[str, str] = {}  # call_id → its output so far (the tail the editor shows)
        self.streamed = ""  # the current agent message's text: a before_output hook's addition is the rest

    def updates(self, event: Any) -> list[Update]:
        if isinstance(event, api.ContentDelta):
            self.streamed += event.text
            return [update_agent_message_text(event.text)] if event.text else []
        if isinstance(event, api.ReasoningDelta):
            return [update_agent_thought_text(event.text)] if event.text else []
        if isinstance(event, api.ItemStarted) and event.item.get("type") == "agent_message":
            self.streamed = ""
            return []
        if isinstance(event, api.ToolCallStarted):
            return [start_tool_call(event.call_id, event.tool, status="in_progress", raw_input=event.arguments)]
        if isinstance(event, api.ToolOutput):
            shown = self.outputs[event.call_id] = (self.outputs.get(event.call_id, "") + event.text)[-OUTPUT_TAIL:]
            return [update_tool_call(event.call_id, status="in_progress", content=[tool_content(text_block(shown))])]
        if isinstance(event, api.ApprovalResolved) and event.approved:
            return [update_tool_call(event.call_id, status="in_progress")]
        if isinstance(event, api.ToolResult):
            self.outputs.pop(event.call_id, None)
            return [_result(event.call_id, event.status, event.is_error, event.content)]
        if isinstance(event, api.TurnEnded) and event.stop_reason != "cancelled":
            rest = remainder(self.streamed, event.output)
            return [update_agent_message_text(rest)] if rest else []
        return []


def replay(events: list[dict[str, Any]]) -> list[Update]:
    """A session's stored events (``sessions/read``, oldest first) as the updates that draw it: the user's
    messages, reasoning, answers, and each tool call once, with its final status and result."""
    out: list[Update] = []
    open_calls: dict[str, int] = {}  # call_id → the index of its tool_call in `out`, until its result
    streamed = ""
    for event in events:
        kind, data = event.get("kind"), event.get("data")
        if not isinstance(data, dict):
            continue
        if kind == "input":
            out.extend(update_user_message(block) for block in blocks_of(data))
        elif kind == "response":
            if data.get("reasoning"):
                out.append(update_agent_thought_text(str(data["reasoning"])))
            streamed = str(data.get("content") or "")
            if streamed:
                out.append(update_agent_message_text(streamed))
            for call in data.get("tool_calls") or []:
                if isinstance(call, dict):
                    call_id = str(call.get("id", ""))
                    open_calls[call_id] = len(out)
                    out.append(start_tool_call(call_id, str(call.get("name", "")), status="in_progress",
                                               raw_input=arguments_of(call.get("arguments"))))  # fmt: skip
        elif kind == "tool_result":
            at = open_calls.pop(str(event.get("call_id")), None)
            if at is not None:
                done = _result(str(event.get("call_id")), str(data.get("status") or "ok"), bool(data.get("is_error")),
                               str(data.get("content") or "")[:2000])  # fmt: skip
                started = out[at]
                assert isinstance(started, ToolCallStart)
                out[at] = started.model_copy(
                    update={"status": done.status, "content": done.content, "raw_output": done.raw_output}
                )
        elif kind == "output":
            rest = remainder(streamed, str(data.get("text") or ""))
            if rest and data.get("ended_by") != "cancelled":
                out.append(update_agent_message_text(rest))
            streamed = ""
    return out
