"""A task is a turn: the mapping between the turn API and A2A's tasks, messages, parts and artifacts.

Nothing here keeps state. A task's id names its turn and its session (``SESSION/TURN``: a session id never holds
a ``/``), its ``contextId`` is the session, and everything a task says is read from the kernel — ``turn/read``
(while the turn runs, from its events; afterwards, also after a restart, from the session's store) or the
turn's live events. States, from the turn:

| turn | A2A task state |
|---|---|
| queued behind the session's running turn | ``submitted`` |
| running | ``working`` |
| running, an approval request open | ``input-required`` (the next message answers it) |
| ended: ``answer``, ``respond``, ``denied``, ``loop``, ``max_*`` | ``completed`` |
| ended: ``cancelled`` | ``canceled`` |
| ended: ``error`` | ``failed`` |

A tool result's images (a browser screenshot: ``tool.result``'s ``images``, read with ``media/read``) are artifacts
of their own, ``image.<id>``, one part each with the bytes and their media type — in the task and, live, as an
artifact update when the result comes.

The types are the ``a2a-sdk``'s (protocol buffers of A2A 1.0); its JSON-RPC layer writes them as v1.0 JSON, or
as v0.3 JSON for a v0.3 client.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from a2a.types import a2a_pb2 as pb
from google.protobuf import struct_pb2

ANSWER = "answer"  # the artifact that holds a task's answer
DONE = {"answer", "respond", "denied", "loop", "max_steps", "max_tool_calls", "max_time"}
IMAGE_MIMES = ("image/png", "image/jpeg", "image/gif", "image/webp")
DECISION_WORDS = {
    "approve_once": ("yes", "y", "ok", "okay", "approve", "approved", "allow", "once", "是", "好", "允许", "同意"),
    "approve_for_session": ("session",),
    "always": ("always", "始终"),
    "deny": ("no", "n", "deny", "denied", "reject", "refuse", "否", "不", "拒绝"),
    "cancel": ("cancel", "stop", "取消"),
}


class BadTask(ValueError):
    """A task id or message the agent cannot use; the message says why."""


def task_id(session: str, turn: str) -> str:
    return f"{session}/{turn}"


def split_task_id(value: str) -> tuple[str, str]:
    session, _, turn = value.rpartition("/")
    if not session or not turn:
        raise BadTask(f"{value!r} is not a task id of this agent (they look like SESSION/TURN)")
    return session, turn


# -- from A2A: a message's parts as the turn's input -------------------------------------------------------


def input_of(message: pb.Message) -> dict[str, Any]:
    """``turn/start``'s ``text`` (one text part) or ``input`` (typed parts: files, data, images)."""
    parts = list(message.parts)
    if not parts:
        raise BadTask("message.parts: empty; send at least one part (text, a file, data)")
    if len(parts) == 1 and parts[0].WhichOneof("content") == "text":
        if not parts[0].text.strip():
            raise BadTask("message.parts[0].text: empty; send what to ask")
        return {"text": parts[0].text}
    return {"input": [_input_part(i, part) for i, part in enumerate(parts)]}


def _input_part(i: int, part: pb.Part) -> dict[str, Any]:
    kind = part.WhichOneof("content")
    mime = part.media_type
    if kind == "text":
        return {"type": "text", "text": part.text}
    if kind == "raw":
        data = base64.b64encode(part.raw).decode("ascii")
        if mime in IMAGE_MIMES:
            return {"type": "image", "mime": mime, "data": data}
        return {"type": "file", "name": part.filename or f"file-{i + 1}", "mime": mime or "application/octet-stream",
                "data": data}  # fmt: skip
    if kind == "url":
        if mime in IMAGE_MIMES:
            return {"type": "image", "url": part.url}
        return {"type": "text", "text": f"[file {part.filename or ''} at {part.url}]".replace("file  at", "file at")}
    if kind == "data":
        text = json.dumps(_value(part.data), ensure_ascii=False, indent=1)
        return {"type": "file", "name": part.filename or f"data-{i + 1}.json", "mime": "application/json",
                "encoding": "text", "data": text}  # fmt: skip
    raise BadTask(f"message.parts[{i}]: empty part; give text, raw, url or data")


def decision_of(message: pb.Message) -> tuple[str, str]:
    """The answer to an open approval a message gives: (decision, reason). A data part
    ``{"decision": "approve_once" | "approve_for_session" | "always" | "deny" | "cancel"}`` says it exactly; else
    the text's first word (yes, session, always, no, cancel; 是, 拒绝, …); any other text is a denial whose
    reason is the text (the model reads it)."""
    text = ""
    for part in message.parts:
        kind = part.WhichOneof("content")
        if kind == "data":
            value = _value(part.data)
            if isinstance(value, dict) and value.get("decision") in DECISION_WORDS:
                return str(value["decision"]), str(value.get("reason") or "")
        elif kind == "text":
            text += part.text
    words = text.strip().lower().replace(",", " ").replace(".", " ").replace("!", " ").split()
    first = words[0] if words else ""
    for decision, said in DECISION_WORDS.items():
        if first in said or (text.strip() in said):
            return decision, text.strip() if len(words) > 1 else ""
    return "deny", text.strip()[:2000]


def _value(value: struct_pb2.Value) -> Any:
    from google.protobuf import json_format

    return json_format.MessageToDict(value)


# -- to A2A: a turn as a task ------------------------------------------------------------------------------


def text_message(message_id: str, role: Any, text: str, session: str, task: str) -> pb.Message:
    return pb.Message(message_id=message_id, role=role, parts=[pb.Part(text=text)], context_id=session, task_id=task)


def open_approval(items: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The approval item a running turn waits on (no status yet), if any."""
    for item in items:
        if item.get("type") == "approval" and "status" not in item:
            return item
    return None


def approval_text(tool: str, summary: str = "") -> str:
    what = f"{tool}: {summary}" if summary else tool
    return (
        f"Approval needed to run {what}. Answer in this task with yes (once), session (for this session), always, "
        "or no (deny)."
    )


def state_of(read: dict[str, Any]) -> Any:
    status = read.get("status")
    if status == "queued":
        return pb.TASK_STATE_SUBMITTED
    if status == "running":
        return pb.TASK_STATE_INPUT_REQUIRED if open_approval(read.get("items") or []) else pb.TASK_STATE_WORKING
    reason = read.get("stop_reason")
    if reason in DONE:
        return pb.TASK_STATE_COMPLETED
    if reason == "cancelled":
        return pb.TASK_STATE_CANCELED
    return pb.TASK_STATE_FAILED


Images = dict[str, tuple[str, bytes]]  # a media id → (mime, bytes), as ``media/read`` answered


def image_refs(items: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """``(tool, reference)`` of every image the turn's tool calls returned, in order."""
    return [
        (str(item.get("tool") or ""), ref)
        for item in items
        if item.get("type") == "tool_call"
        for ref in item.get("images") or []
        if isinstance(ref, dict) and isinstance(ref.get("id"), str)
    ]


def image_artifact(tool: str, media_id: str, mime: str, data: bytes) -> pb.Artifact:
    """One image a tool returned, as an artifact of its own (a client saves or shows the file part)."""
    name = f"{tool or 'tool'}-{media_id[:12]}.{mime.rsplit('/', 1)[-1]}"
    part = pb.Part(raw=data, media_type=mime, filename=name)
    return pb.Artifact(artifact_id=f"image.{media_id[:16]}", name=name, parts=[part])


def image_update(session: str, turn: str, artifact: pb.Artifact) -> pb.TaskArtifactUpdateEvent:
    return pb.TaskArtifactUpdateEvent(
        task_id=task_id(session, turn), context_id=session, artifact=artifact, append=False, last_chunk=True
    )


def task_of(read: dict[str, Any], history_length: int | None = None, images: Images | None = None) -> pb.Task:
    """``turn/read``'s answer as a Task: its state, the user's and the agent's messages as history, the answer
    as the ``answer`` artifact, each image of ``images`` its tool calls returned as an ``image.<id>`` one."""
    session, turn = str(read["session"]), str(read["turn"])
    tid = task_id(session, turn)
    items = list(read.get("items") or [])
    state = state_of(read)
    history: list[pb.Message] = []
    answer = ""
    for item in items:
        if item.get("type") == "user_message":
            history.append(user_message(item, session, tid))
        elif item.get("type") == "agent_message" and item.get("text"):
            history.append(text_message(str(item["id"]), pb.ROLE_AGENT, str(item["text"]), session, tid))
            answer += str(item["text"])
    if read.get("status") == "ended" and read.get("output") is not None:
        answer = str(read.get("output") or "")
    status = pb.TaskStatus(state=state)
    status.timestamp.GetCurrentTime()
    pending = open_approval(items) if state == pb.TASK_STATE_INPUT_REQUIRED else None
    if pending is not None:
        tool = next(
            (str(i.get("tool")) for i in items if i.get("call_id") == pending.get("call_id") and i.get("tool")),
            "a tool",
        )
        status.message.CopyFrom(text_message(f"{pending['id']}.ask", pb.ROLE_AGENT, approval_text(tool), session, tid))
    elif state == pb.TASK_STATE_FAILED:
        why = str(read.get("error") or "the turn failed (no provider answered, or the kernel stopped mid-turn)")
        status.message.CopyFrom(text_message(f"{turn}.error", pb.ROLE_AGENT, why, session, tid))
    task = pb.Task(id=tid, context_id=session, status=status, history=history)
    if answer:
        task.artifacts.append(pb.Artifact(artifact_id=ANSWER, name=ANSWER, parts=[pb.Part(text=answer)]))
    for tool, ref in image_refs(items):
        found = (images or {}).get(ref["id"])
        if found is not None:
            task.artifacts.append(image_artifact(tool, ref["id"], *found))
    if history_length is not None and history_length >= 0:
        del task.history[: max(0, len(task.history) - history_length)]
    return task


def user_message(item: dict[str, Any], session: str, tid: str) -> pb.Message:
    parts: list[pb.Part] = []
    for part in item.get("parts") or []:
        kind = part.get("type")
        if kind == "text":
            parts.append(pb.Part(text=str(part.get("text", ""))))
        elif kind == "file" and part.get("encoding") == "text":
            parts.append(pb.Part(raw=str(part.get("data", "")).encode(), filename=str(part.get("name", "")),
                                 media_type=str(part.get("mime", ""))))  # fmt: skip
        elif kind in ("file", "image") and part.get("data"):
            raw = base64.b64decode(str(part["data"]))
            parts.append(pb.Part(raw=raw, filename=str(part.get("name", "")), media_type=str(part.get("mime", ""))))
        elif kind == "image" and part.get("url"):
            parts.append(pb.Part(url=str(part["url"])))
    if not parts:
        parts = [pb.Part(text=str(item.get("text", "")))]
    return pb.Message(
        message_id=str(item.get("id", "")), role=pb.ROLE_USER, parts=parts, context_id=session, task_id=tid
    )


def started_task(session: str, turn: str, queued: bool, message: pb.Message) -> pb.Task:
    """The task as a stream's first event: submitted or working, with the message that started it."""
    tid = task_id(session, turn)
    state = pb.TASK_STATE_SUBMITTED if queued else pb.TASK_STATE_WORKING
    user = pb.Message()
    user.CopyFrom(message)
    user.context_id, user.task_id = session, tid
    status = pb.TaskStatus(state=state)
    status.timestamp.GetCurrentTime()
    return pb.Task(id=tid, context_id=session, status=status, history=[user])


def status_update(
    session: str, turn: str, state: Any, text: str = "", message_id: str = ""
) -> pb.TaskStatusUpdateEvent:
    tid = task_id(session, turn)
    status = pb.TaskStatus(state=state)
    status.timestamp.GetCurrentTime()
    if text:
        status.message.CopyFrom(text_message(message_id or f"{turn}.status", pb.ROLE_AGENT, text, session, tid))
    return pb.TaskStatusUpdateEvent(task_id=tid, context_id=session, status=status)


def answer_chunk(session: str, turn: str, text: str, *, append: bool, last: bool) -> pb.TaskArtifactUpdateEvent:
    artifact = pb.Artifact(artifact_id=ANSWER, name=ANSWER, parts=[pb.Part(text=text)] if text else [])
    return pb.TaskArtifactUpdateEvent(
        task_id=task_id(session, turn), context_id=session, artifact=artifact, append=append, last_chunk=last
    )


def end_state(stop_reason: str) -> Any:
    if stop_reason in DONE:
        return pb.TASK_STATE_COMPLETED
    if stop_reason == "cancelled":
        return pb.TASK_STATE_CANCELED
    return pb.TASK_STATE_FAILED
