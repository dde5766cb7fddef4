"""The OpenAI-compatible API: ``GET /v1/models`` and ``POST /v1/chat/completions`` (streamed and not).

Any OpenAI client can use Hologram as a model, but Hologram is an agent, not a completion endpoint: each
request runs one real turn (memory, tools, stage hooks) whose input is the LAST user message; the history
lives in Hologram's own session, not in the request's ``messages``. The session is named by the
``X-Hologram-Session`` header, else the ``user`` field, else a fresh one; the answer carries
``X-Hologram-Session`` so a client can continue it. ``model``, ``temperature``, ``tools`` and the other
sampling fields are accepted and ignored (the kernel's provider chain and tools decide).

Nobody can be asked to approve a tool call here, so turns start with ``approvals=False``: an approval-needing
tool (shell, code) is denied at once, the reason in its tool result, and the model answers with that. (If a
browser has the same session open, the page is asked instead — a person is there.)

Errors use OpenAI's shape, ``{"error": {"message", "type", "code"}}``, so the SDKs raise their own exception
types (a wrong token: ``openai.AuthenticationError``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from typing import Any

import orjson

from hologram.rpc import RpcError
from hologram_plugins.http.asgi import Request, Response, Route, StreamingResponse
from hologram_plugins.http.channel import Channel
from hologram_plugins.http.events import Listener
from hologram_plugins.http.responses import RPC_STATUS, BadRequest, json_response, read_object

log = logging.getLogger("hologram_plugins.http")

MODEL = "hologram"
SESSION_HEADER = "x-hologram-session"
CLIENT = "openai"
MAX_BODY = 8 * 1_048_576  # clients send the whole conversation every time; only the last message is used
FINISH = {
    "answer": "stop",
    "max_steps": "length",
    "max_tool_calls": "length",
    "max_time": "length",
    "loop": "stop",
    "cancelled": "stop",
    "denied": "stop",
    "respond": "stop",
}


def _error(status: int, message: str, kind: str = "invalid_request_error", code: str | None = None) -> Response:
    return json_response({"error": {"message": message, "type": kind, "code": code}}, status)


def _rpc_error(exc: RpcError) -> Response:
    status, code = RPC_STATUS.get(exc.code, (502, "upstream"))  # type: ignore[call-overload]
    kind = "invalid_request_error" if status < 500 else "api_error"
    return _error(status, exc.message, kind, code)


Handler = Callable[[Request, Channel], Awaitable[Response | StreamingResponse]]


def _guarded(handler: Handler) -> Callable[[Request], Awaitable[Response | StreamingResponse]]:
    async def endpoint(request: Request) -> Response | StreamingResponse:
        try:
            return await handler(request, request.app.channel)
        except BadRequest as exc:
            return _error(exc.status, exc.message, code=exc.code)
        except RpcError as exc:
            return _rpc_error(exc)

    endpoint.__doc__ = handler.__doc__
    return endpoint


async def models(request: Request, channel: Channel) -> Response:
    return json_response({"object": "list", "data": [_model()]})


async def model(request: Request, channel: Channel) -> Response:
    if request.path_params["model"] != MODEL:
        return _error(404, f"there is no model {request.path_params['model'][:100]!r}; the one model is {MODEL!r}")
    return json_response(_model())


def _model() -> dict[str, Any]:
    return {"id": MODEL, "object": "model", "created": 0, "owned_by": "hologram"}


def last_user_text(data: dict[str, Any]) -> str:
    """The turn's input: the last ``user`` message's text (a string, or the text parts of a list)."""
    messages = data.get("messages")
    if not isinstance(messages, list) or not messages:
        raise BadRequest("messages: must be a non-empty list of {role, content} objects")
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise BadRequest(f"messages[{i}]: must be an object with a role (system, user, assistant, tool)")
    users = [(i, m) for i, m in enumerate(messages) if m["role"] == "user"]
    if not users:
        raise BadRequest("messages: no user message; the last user message is what Hologram answers")
    i, message = users[-1]
    content = message.get("content")
    if isinstance(content, list):
        parts = []
        for j, part in enumerate(content):
            if not isinstance(part, dict) or part.get("type") != "text" or not isinstance(part.get("text"), str):
                raise BadRequest(f"messages[{i}].content[{j}]: only text parts ({{type: text, text}}) are supported")
            parts.append(part["text"])
        content = "\n".join(parts)
    if not isinstance(content, str):
        raise BadRequest(f"messages[{i}].content: must be a string or a list of text parts")
    if not content.strip():
        raise BadRequest(f"messages[{i}].content: empty; send what to ask")
    return content


def session_of(request: Request, data: dict[str, Any]) -> str:
    """``X-Hologram-Session``, else ``user``, else a fresh id."""
    raw = request.headers.get(SESSION_HEADER)
    name = "the X-Hologram-Session header"
    if raw is None:
        raw, name = data.get("user"), "user"
    if raw is None:
        return secrets.token_hex(6)
    if not isinstance(raw, str) or not raw or len(raw) > 200 or not raw.isprintable() or "/" in raw:
        raise BadRequest(f"{name}: must be a session id (1-200 printable characters, no '/')")
    return raw


async def completions(request: Request, channel: Channel) -> Response | StreamingResponse:
    data = await read_object(request, MAX_BODY)
    text = last_user_text(data)
    stream = data.get("stream", False)
    if not isinstance(stream, bool):
        raise BadRequest("stream: must be true or false")
    options = data.get("stream_options")
    include_usage = isinstance(options, dict) and options.get("include_usage") is True
    session = session_of(request, data)
    listener = channel.listen(session)  # before the start: no event can come before we listen
    try:
        started = await channel.start(text, session, client=CLIENT, approvals=False)
    except BaseException:
        channel.close_stream(listener)
        raise
    turn = Turn(channel, listener, str(started["session"]), str(started["turn"]))
    headers = {"x-hologram-session": turn.session, "cache-control": "no-store"}
    if stream:
        return StreamingResponse(turn.chunks(include_usage), media_type="text/event-stream", headers=headers)
    try:
        ended = await _unless_disconnected(request, turn.collect())
    finally:
        turn.close()  # a turn still running when its client went away is cancelled here
    if ended is None:
        return Response(status_code=499)  # nobody reads it; the status is for the access log only
    if ended.get("stop_reason") == "error" and not ended.get("output"):
        if turn.failure_kind == "storage":  # the kernel's disk, not the provider: a 500 naming the file
            return _error(500, turn.failure, "api_error", "storage")
        return _error(502, turn.failure or "the turn failed", "api_error", "upstream")
    body = {
        "id": turn.id,
        "object": "chat.completion",
        "created": turn.created,
        "model": MODEL,
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": ended.get("output", ""),
                    "reasoning_content": turn.reasoning() or None,
                },
                "finish_reason": FINISH.get(str(ended.get("stop_reason")), "stop"),
            }
        ],
        "usage": usage(ended),
    }
    return json_response(body, headers=headers)


async def _unless_disconnected(request: Request, work: Coroutine[Any, Any, dict[str, Any]]) -> dict[str, Any] | None:
    """`work`'s result, or None when the client disconnects first (the task is then cancelled). A streamed
    response learns of a disconnect when a write fails; a plain one would wait for the whole turn, so the
    ASGI receive channel — which yields ``http.disconnect`` once the body has been read — is watched."""
    task = asyncio.ensure_future(work)
    gone = asyncio.ensure_future(_disconnect(request))
    try:
        await asyncio.wait({task, gone}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        gone.cancel()
    if task.done():
        return task.result()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    return None


async def _disconnect(request: Request) -> None:
    while (await request.receive())["type"] != "http.disconnect":
        pass


def usage(ended: dict[str, Any]) -> dict[str, int]:
    """The turn's token counts over all its LLM calls (an agent turn may make several)."""
    prompt = sum(int(u.get("prompt_tokens") or 0) for u in ended.get("usage") or [] if isinstance(u, dict))
    completion = sum(int(u.get("completion_tokens") or 0) for u in ended.get("usage") or [] if isinstance(u, dict))
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


class Turn:
    """One request's turn: its events from the session's listener, as a result or as chunks."""

    def __init__(self, channel: Channel, listener: Listener, session: str, turn: str) -> None:
        self.channel = channel
        self.listener = listener
        self.session = session
        self.turn = turn
        self.id = f"chatcmpl-{turn}"
        self.created = int(time.time())
        self._reasoning: list[str] = []  # a non-streamed answer's reasoning, assembled from its deltas
        self._reasoning_left = channel.reasoning_bytes  # what more of it is kept
        self.failure = ""
        self.failure_kind = ""
        self.ended = False

    async def events(self) -> AsyncIterator[dict[str, Any]]:
        while not self.ended:
            out = await self.listener.get()
            if out is None:
                if self.listener.dropped:
                    raise BadRequest("this request fell too far behind its turn's events", 503, "overloaded")
                raise BadRequest("the session was deleted while its turn ran", 409, "conflict")
            event = out.event()
            if event.get("turn") != self.turn:
                continue
            if event["type"] == "turn.error":
                self.failure = str(event.get("message") or "")
                self.failure_kind = str(event.get("kind") or "")
            elif event["type"] == "turn.ended":
                self.ended = True
            yield event

    def _reason(self, text: str) -> None:
        """Keep a reasoning delta of a non-streamed answer while the reasoning is within its bound; the rest is
        cut (the answer itself comes whole in ``turn.ended``)."""
        if self._reasoning_left <= 0:
            return
        size = len(text.encode())
        if size > self._reasoning_left:
            text = text.encode()[: self._reasoning_left].decode(errors="ignore") + " …"
        self._reasoning_left -= size
        self._reasoning.append(text)

    def reasoning(self) -> str:
        return "".join(self._reasoning)

    async def collect(self) -> dict[str, Any]:
        async for event in self.events():
            if event["type"] == "reasoning.delta":
                self._reason(str(event.get("text") or ""))
            elif event["type"] == "turn.ended":
                return event
        raise AssertionError("unreachable: events end with turn.ended")

    def chunk(self, delta: dict[str, Any], finish: str | None = None) -> bytes:
        body = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": MODEL,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        return b"data: " + orjson.dumps(body) + b"\n\n"

    async def chunks(self, include_usage: bool) -> AsyncIterator[bytes]:
        try:
            yield self.chunk({"role": "assistant", "content": ""})
            async for event in self.events():
                kind = event["type"]
                if kind == "content.delta" and event.get("text"):
                    yield self.chunk({"content": event["text"]})
                elif kind == "reasoning.delta" and event.get("text"):
                    yield self.chunk({"reasoning_content": event["text"]})
                elif kind == "turn.ended":
                    if event.get("stop_reason") == "error" and self.failure:
                        yield self.chunk({"content": f"[error: {self.failure}]"})
                    yield self.chunk({}, FINISH.get(str(event.get("stop_reason")), "stop"))
                    if include_usage:
                        extra = {"id": self.id, "object": "chat.completion.chunk", "created": self.created}
                        body = {**extra, "model": MODEL, "choices": [], "usage": usage(event)}
                        yield b"data: " + orjson.dumps(body) + b"\n\n"
            yield b"data: [DONE]\n\n"
        finally:
            self.close()

    def close(self) -> None:
        """The request is over; a turn still running has no reader left: cancel it."""
        self.channel.close_stream(self.listener)
        if not self.ended:
            task = asyncio.get_running_loop().create_task(self._cancel())
            self.channel.keep(task)

    async def _cancel(self) -> None:
        try:
            await self.channel.turns("cancel", session=self.session)
        except Exception as exc:
            log.debug("cancel %s: %s", self.session, exc)


ENDPOINTS: dict[str, Callable[[Request], Awaitable[Response | StreamingResponse]]] = {  # what app's lazy routes call
    "/v1/models": _guarded(models),
    "/v1/models/{model}": _guarded(model),
    "/v1/chat/completions": _guarded(completions),
}
ROUTES = [Route(path, call, methods=["POST" if "completions" in path else "GET"]) for path, call in ENDPOINTS.items()]
