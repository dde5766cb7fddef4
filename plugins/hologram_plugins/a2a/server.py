"""The A2A methods on the turn API: the ``a2a-sdk``'s `RequestHandler`, implemented with ``kernel.turns`` only.

The SDK's JSON-RPC layer (`create_jsonrpc_routes`, v0.3 methods on the same endpoint) parses and checks each
request, answers malformed ones with the protocol's error codes, writes the answers as v1.0 or v0.3 JSON and
SSE; this handler turns each method into turn API calls:

- ``SendMessage`` / ``message/send``: a new message starts a turn in its ``contextId``'s session (a new session
  without one); a message naming a task that waits for input answers its approval. The answer comes when the
  turn settles (ends, or asks for approval: ``input-required``), or at once with ``returnImmediately``.
- ``SendStreamingMessage`` / ``message/stream``: the same, the task's updates as SSE: the task, the answer as
  chunks of the ``answer`` artifact, and the final (or ``input-required``) status.
- ``GetTask`` / ``tasks/get``: ``turn/read``, also after a kernel restart (it reads the session's store).
- ``CancelTask`` / ``tasks/cancel``: ``turn/cancel``; ``SubscribeToTask``: the running turn's updates.

The plugin watches a session with ``approvals: true`` while a turn it started runs there (the kernel asks it,
and it says ``input-required``) — a client that disconnects leaves the turn running (a task outlives its
connection: read it with GetTask, or subscribe again).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

from a2a.server.context import ServerCallContext
from a2a.server.request_handlers.request_handler import RequestHandler
from a2a.types import a2a_pb2 as pb
from a2a.utils.errors import (
    InternalError,
    InvalidParamsError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)

from hologram.sdk import RpcError
from hologram_plugins.a2a import tasks
from hologram_plugins.a2a.events import Listener, Sessions

log = logging.getLogger("hologram_plugins.a2a")

Turns = Callable[..., Awaitable[Any]]  # kernel.turns: (method, **params) → result
CLIENT = "a2a"
SETTLE_POLL_S = 5.0  # while waiting on events, the turn is read again this often (an event missed: a restart)
CANCEL_WAIT_S = 30.0
NO_SESSION = 3  # the turn API's NO_SESSION code (docs/protocol.md §2)
INVALID_PARAMS = -32602


class TurnTasks(RequestHandler):
    """A2A's request handler over the turn API (module docstring)."""

    def __init__(self, turns: Turns, sessions: Sessions) -> None:
        self.turns = turns
        self.sessions = sessions

    # -- reading ------------------------------------------------------------------------------------------

    async def read(self, task_id: str) -> dict[str, Any]:
        try:
            session, turn = tasks.split_task_id(task_id)
            result: dict[str, Any] = await self.turns("read", session=session, turn=turn)
            return result
        except tasks.BadTask as exc:
            raise TaskNotFoundError(message=str(exc)) from None
        except RpcError as exc:
            if exc.code in (NO_SESSION, INVALID_PARAMS):
                raise TaskNotFoundError(message=f"there is no task {task_id!r}") from None
            raise InternalError(message=exc.message) from None

    async def _task(self, read: dict[str, Any], history_length: int | None = None) -> pb.Task:
        """The task of ``read``, with the images its tool calls returned (each read with ``media/read``)."""
        session = str(read.get("session") or "")
        refs = [ref for _, ref in tasks.image_refs(list(read.get("items") or []))]
        return tasks.task_of(read, history_length, await self._images(session, refs))

    async def _images(self, session: str, refs: list[dict[str, Any]]) -> tasks.Images:
        """The bytes of each reference; one the kernel no longer has (pruned, deleted) is left out."""
        import base64

        found: tasks.Images = {}
        for ref in refs:
            try:
                answer = await self.turns("media_read", session=session, id=str(ref.get("id")))
            except RpcError:
                continue
            found[str(answer["id"])] = (str(answer.get("mime")), base64.b64decode(str(answer.get("data") or "")))
        return found

    async def on_get_task(self, params: pb.GetTaskRequest, context: ServerCallContext) -> pb.Task | None:
        length = params.history_length if params.HasField("history_length") else None
        return await self._task(await self.read(params.id), length)

    async def on_list_tasks(self, params: pb.ListTasksRequest, context: ServerCallContext) -> pb.ListTasksResponse:
        raise UnsupportedOperationError(message="ListTasks is not offered; GetTask reads a task by its id")

    # -- sending ------------------------------------------------------------------------------------------

    async def on_message_send(self, params: pb.SendMessageRequest, context: ServerCallContext) -> pb.Task | pb.Message:
        message = params.message
        session = await self._session_of(message)
        with self.sessions.listen(session) as listener:
            turn, _ = await self._begin(session, message)
            if not params.configuration.return_immediately:
                await self._settle(listener, session, turn)
        return await self._task(await self.read(tasks.task_id(session, turn)))

    async def on_message_send_stream(
        self, params: pb.SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Any]:
        message = params.message
        session = await self._session_of(message)
        with self.sessions.listen(session) as listener:
            turn, queued = await self._begin(session, message)
            if message.task_id:  # an answer to input-required: the task as it is now, then its updates
                yield await self._task(await self.read(message.task_id))
            else:
                yield tasks.started_task(session, turn, queued, message)
            async for update in self._updates(listener, session, turn):
                yield update

    async def on_subscribe_to_task(
        self, params: pb.SubscribeToTaskRequest, context: ServerCallContext
    ) -> AsyncGenerator[Any]:
        session, turn = self._ids(params.id)
        with self.sessions.listen(session) as listener:
            read = await self.read(params.id)
            if read.get("status") == "ended":
                raise UnsupportedOperationError(message=f"task {params.id} has ended; GetTask reads it")
            await self.turns("watch", session=session, approvals=True, client=CLIENT)
            yield await self._task(await self.read(params.id))
            async for update in self._updates(listener, session, turn):
                yield update

    async def on_cancel_task(self, params: pb.CancelTaskRequest, context: ServerCallContext) -> pb.Task | None:
        session, turn = self._ids(params.id)
        with self.sessions.listen(session) as listener:
            read = await self.read(params.id)
            if read.get("status") == "ended":
                state = pb.TaskState.Name(tasks.state_of(read))
                raise TaskNotCancelableError(message=f"task {params.id} has ended ({state})")
            await self.turns("cancel", session=session, turn=turn)
            await self._settle(listener, session, turn, until_end=True, timeout=CANCEL_WAIT_S)
        return await self._task(await self.read(params.id))

    # -- the steps ----------------------------------------------------------------------------------------

    def _ids(self, task_id: str) -> tuple[str, str]:
        try:
            return tasks.split_task_id(task_id)
        except tasks.BadTask as exc:
            raise TaskNotFoundError(message=str(exc)) from None

    async def _session_of(self, message: pb.Message) -> str:
        """The message's session: its task's, its context's, or a new one (made now, so the request can listen
        on it before the turn starts)."""
        if message.task_id:
            session, _ = self._ids(message.task_id)
            if message.context_id and message.context_id != session:
                raise InvalidParamsError(message=f"task {message.task_id} is not in context {message.context_id}")
            return session
        if message.context_id:
            if "/" in message.context_id or len(message.context_id) > 200 or not message.context_id.isprintable():
                raise InvalidParamsError(message="message.contextId: 1-200 printable characters without '/'")
            return message.context_id
        created = await self.turns("sessions_create")
        return str(created["session"])

    async def _begin(self, session: str, message: pb.Message) -> tuple[str, bool]:
        """Start the message's turn — or, for a message to a task waiting for input, answer its approval —
        and say (turn, queued)."""
        if message.task_id:
            return await self._answer(session, message), False
        try:
            given = tasks.input_of(message)
        except tasks.BadTask as exc:
            raise InvalidParamsError(message=str(exc)) from None
        try:
            started = await self.turns(
                "start", session=session, client=CLIENT, approvals=True, watch=True, on_disconnect="continue", **given
            )
        except RpcError as exc:
            if exc.code == INVALID_PARAMS:
                raise InvalidParamsError(message=exc.message) from None
            raise InternalError(message=exc.message) from None
        return str(started["turn"]), started.get("status") == "queued"

    async def _answer(self, session: str, message: pb.Message) -> str:
        read = await self.read(message.task_id)
        turn = str(read["turn"])
        state = tasks.state_of(read)
        if read.get("status") == "ended":
            name = pb.TaskState.Name(state)
            raise InvalidParamsError(
                message=f"task {message.task_id} is in a terminal state ({name}); send a new message with its "
                "contextId to continue the conversation"
            )
        pending = tasks.open_approval(read.get("items") or [])
        if pending is None:
            raise InvalidParamsError(message=f"task {message.task_id} is not waiting for input; it is working")
        decision, reason = tasks.decision_of(message)
        await self.turns("watch", session=session, approvals=True, client=CLIENT)  # the answer must come from a watcher
        answer = await self.turns(
            "approve", session=session, approval=str(pending["approval"]), decision=decision, reason=reason
        )
        if not answer.get("accepted"):
            log.info("a2a: approval %s of task %s was decided already", pending["approval"], message.task_id)
        return turn

    async def _settle(
        self, listener: Listener, session: str, turn: str, *, until_end: bool = False, timeout: float | None = None
    ) -> None:
        """Until the turn ends, or (unless ``until_end``) asks for approval."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while deadline is None or loop.time() < deadline:
            event = await listener.next(SETTLE_POLL_S)
            if event is None:  # nothing for a while: the turn as the kernel has it (an event may have been missed)
                read = await self.read(tasks.task_id(session, turn))
                if read.get("status") == "ended" or (
                    not until_end and tasks.state_of(read) == pb.TASK_STATE_INPUT_REQUIRED
                ):
                    return
                continue
            if event.get("turn") != turn:
                continue
            if event.get("type") == "turn.ended" or (not until_end and event.get("type") == "approval.requested"):
                return

    async def _updates(self, listener: Listener, session: str, turn: str) -> AsyncGenerator[Any]:
        """The turn's updates as A2A stream events, until it ends or asks for approval."""
        streamed = False
        failure = ""
        while True:
            event = await listener.next(SETTLE_POLL_S)
            if event is None:
                read = await self.read(tasks.task_id(session, turn))
                state = tasks.state_of(read)
                if read.get("status") == "ended" or state == pb.TASK_STATE_INPUT_REQUIRED:
                    yield await self._task(read)  # missed the end: the task as it is (the client takes the latest)
                    return
                continue
            if event.get("turn") != turn:
                continue
            kind = event.get("type")
            if kind == "content.delta" and event.get("text"):
                yield tasks.answer_chunk(session, turn, str(event["text"]), append=streamed, last=False)
                streamed = True
            elif kind == "tool.result" and event.get("images"):  # a screenshot: an artifact of its own, now
                refs = [r for r in event["images"] if isinstance(r, dict)]
                images = await self._images(session, refs)
                for ref in refs:
                    if ref.get("id") in images:
                        artifact = tasks.image_artifact(str(event.get("tool") or ""), ref["id"], *images[ref["id"]])
                        yield tasks.image_update(session, turn, artifact)
            elif kind == "approval.requested":
                text = tasks.approval_text(str(event.get("tool") or "a tool"), str(event.get("summary") or ""))
                yield tasks.status_update(session, turn, pb.TASK_STATE_INPUT_REQUIRED, text, f"{event.get('item')}.ask")
                return
            elif kind == "turn.error":
                failure = str(event.get("message") or "")
            elif kind == "turn.ended":
                if streamed:
                    yield tasks.answer_chunk(session, turn, "", append=True, last=True)
                reason = str(event.get("stop_reason") or "")
                state = tasks.end_state(reason)
                yield tasks.status_update(session, turn, state, failure if state == pb.TASK_STATE_FAILED else "")
                return

    # -- not offered -------------------------------------------------------------------------------------

    async def on_create_task_push_notification_config(self, params: Any, context: ServerCallContext) -> Any:
        raise PushNotificationNotSupportedError

    async def on_get_task_push_notification_config(self, params: Any, context: ServerCallContext) -> Any:
        raise PushNotificationNotSupportedError

    async def on_list_task_push_notification_configs(self, params: Any, context: ServerCallContext) -> Any:
        raise PushNotificationNotSupportedError

    async def on_delete_task_push_notification_config(self, params: Any, context: ServerCallContext) -> Any:
        raise PushNotificationNotSupportedError

    async def on_get_extended_agent_card(self, params: Any, context: ServerCallContext) -> Any:
        raise UnsupportedOperationError(message="there is no extended agent card")
