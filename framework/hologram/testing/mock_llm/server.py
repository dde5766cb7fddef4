"""A strict mock of the OpenAI / DeepSeek chat-completions API, served over real HTTP on loopback.

Why strict: the incidents this project guards against were all request-shape bugs that a lenient fake
answers with 200 and the real vendor answers with 400. So the mock validates every request the way the
vendors do, *before* it consumes a script step, and answers violations with the vendor's status and an
OpenAI-shaped body ``{"error": {"message", "type": "invalid_request_error", "param", "code"}}``.

Rules (``vendor="openai"`` unless noted; the wording is the vendor's where known):

1.  Authorization: when the server has an ``api_key``, a missing or different ``Bearer`` token -> 401
    ("Incorrect API key provided: ..." / DeepSeek "Authentication Fails, Your api key: ****xxxx is invalid").
2.  Body that is not JSON -> 400 ("We could not parse the JSON body of your request. ..." /
    DeepSeek "Failed to parse the request body as JSON").
3.  Unknown top-level parameter -> 400 "Unrecognized request argument supplied: <key>". This catches
    ``extra_body`` (an SDK-side argument sent as a key) and ``thinking`` sent to OpenAI.
4.  Missing ``model`` -> 400 "you must provide a model parameter" (DeepSeek: 422 "Failed to deserialize the
    JSON body into the target type: missing field `model`").
5.  Missing ``messages`` -> 400 "Missing required parameter: 'messages'." (DeepSeek: 422 ... missing field
    `messages`); empty ``messages`` -> 400 (DeepSeek 422).
6.  Unknown role -> 400 "Invalid value: 'bot'. Supported values are: 'system', 'assistant', 'user',
    'function', 'tool', and 'developer'." (DeepSeek: 422 "... messages[i].role: unknown variant `bot`, ...").
7.  Unknown message field -> 400 "Additional properties are not allowed ('reasoning_content' was
    unexpected) - 'messages.i'". OpenAI does not know ``reasoning_content``; DeepSeek does.
8.  A tool message without ``tool_call_id``, a tool call without id/name, or non-string arguments -> 400.
9.  DeepSeek: ``thinking`` that is not ``{"type": "enabled"|"disabled"}`` -> 422.
10. An assistant message with ``tool_calls`` not followed (directly, by tool messages) by a result for each
    id -> 400 "An assistant message with 'tool_calls' must be followed by tool messages responding to each
    'tool_call_id'. The following tool_call_ids did not have response messages: call_x".
11. A tool message whose id was not called by the directly preceding assistant message (or was answered
    already) -> 400 "Invalid parameter: messages with role 'tool' must be a response to a preceeding
    message with 'tool_calls'." (sic, the vendor's spelling).
12. DeepSeek thinking mode (``thinking.type == "enabled"``, model ``deepseek-reasoner``, or the server's
    ``thinking_default``): an assistant message with ``tool_calls`` and no ``reasoning_content`` field ->
    400 "Missing `reasoning_content` field in the assistant message at message index N".
13. With ``max_context_tokens`` set: messages over the window (4 characters a token) -> 400 "This model's
    maximum context length is N tokens. ..." (OpenAI code ``context_length_exceeded``).
14. A message ``content`` that is an array: OpenAI takes parts of type ``text`` (with a string ``text``) and, in
    a user message, ``image_url`` (``{"url": http(s) or data:image/png|jpeg|gif|webp;base64,...}``); another
    type, a missing field, a bad data URL (400 "Invalid 'messages[0].content[1].image_url.url'. Expected a
    base64-encoded data URL ...") or an image in a non-user message (400 "Image URLs are only allowed for
    messages with role 'user' ...") is refused. DeepSeek (text only): any part but ``text`` -> 400 "Failed to
    deserialize the JSON body into the target type: messages[i]: unknown variant `image_url`, expected `text` at
    line 1 column N".

Script steps, streaming shape and the ``reuse_index_zero`` option are described in ``script.py``. Control
endpoints for tests that drive another process: ``POST /_mock/script`` ``{"steps": [...], "default":
step|null, "append": bool}``, ``GET /_mock/requests``, ``POST /_mock/reset``.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from hologram.testing.mock_llm import script as sc
from hologram.testing.mock_llm.validate import check_auth, parse_body, validate

CHAT_PATHS = ("/v1/chat/completions", "/chat/completions")


@dataclass
class RecordedRequest:
    """One request as received, and the status the mock answered it with (0: connection dropped)."""

    path: str
    headers: dict[str, str]
    body: Any
    status: int = 0
    rejected: bool = False  # refused by validation/auth (as opposed to a scripted error)


@dataclass
class MockState:
    vendor: str = "openai"
    api_key: str | None = None
    reuse_index_zero: bool = False
    thinking_default: bool = False
    max_context_tokens: int | None = None
    chunk_chars: int = 4
    steps: list[sc.Step] = field(default_factory=list)
    default: sc.Step | None = None
    requests: list[RecordedRequest] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def next_step(self) -> sc.Step:
        with self.lock:
            if self.steps:
                return self.steps.pop(0)
            if self.default is not None:
                return dict(self.default)
        return {"error": {"status": 500, "message": "mock_llm: script exhausted", "type": "server_error"}}


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    # --- plumbing -------------------------------------------------------------------------------

    def _read(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _drop(self) -> None:
        """Close the socket without a proper end: the client sees a disconnect, not a response."""
        self.close_connection = True
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    # --- routes ---------------------------------------------------------------------------------

    def do_GET(self) -> None:
        state = self.server.state
        if self.path == "/_mock/requests":
            with state.lock:
                self._json(200, [asdict(r) for r in state.requests])
            return
        self._json(404, {"error": {"message": f"unknown path {self.path}", "type": "invalid_request_error"}})

    def do_POST(self) -> None:
        state = self.server.state
        raw = self._read()
        if self.path == "/_mock/script":
            payload = json.loads(raw or b"{}")
            try:
                sc.check_steps([*payload.get("steps", []), *([payload["default"]] if payload.get("default") else [])])
            except sc.ScriptError as e:
                self._json(400, {"error": str(e)})
                return
            with state.lock:
                if not payload.get("append"):
                    state.steps.clear()
                state.steps.extend(payload.get("steps", []))
                if "default" in payload:
                    state.default = payload["default"]
            self._json(200, {"queued": len(state.steps)})
            return
        if self.path == "/_mock/reset":
            with state.lock:
                state.steps.clear()
                state.requests.clear()
                state.default = None
            self._json(200, {"ok": True})
            return
        if self.path not in CHAT_PATHS:
            self._json(404, {"error": {"message": f"unknown path {self.path}", "type": "invalid_request_error"}})
            return
        self._chat(raw)

    def _chat(self, raw: bytes) -> None:
        state = self.server.state
        headers = {k.lower(): v for k, v in self.headers.items()}
        body, bad_json = parse_body(raw, state.vendor)
        record = RecordedRequest(self.path, headers, body if bad_json is None else raw.decode("utf-8", "replace"))
        with state.lock:
            state.requests.append(record)
        rejection = (
            check_auth(headers, state.api_key, state.vendor)
            or bad_json
            or validate(
                body,
                state.vendor,
                thinking_default=state.thinking_default,
                max_context_tokens=state.max_context_tokens,
            )
        )
        if rejection is not None:
            record.status, record.rejected = rejection.status, True
            self._json(rejection.status, rejection.body())
            return
        step = state.next_step()
        while set(step) == {"delay"}:
            time.sleep(float(step["delay"]))
            step = state.next_step()
        with state.lock:
            serial = len(state.requests)
        step = sc.resolve(step, body, serial)
        if step.get("delay"):
            time.sleep(float(step["delay"]))
        if "error" in step:
            record.status = self._error(step["error"])
            return
        stream = bool(body.get("stream"))
        if step.get("disconnect") and not stream:
            self._drop()
            return
        if not stream:
            record.status = 200
            self._json(200, sc.completion(step, body, state.vendor))
            return
        record.status = 200
        self._stream(step, body)

    def _error(self, err: dict[str, Any]) -> int:
        status = int(err.get("status", 500))
        payload = err.get("body") or {
            "error": {
                "message": err.get("message", f"mock error {status}"),
                "type": err.get("type", "server_error" if status >= 500 else "invalid_request_error"),
                "param": err.get("param"),
                "code": err.get("code"),
            }
        }
        headers = {"Retry-After": str(err["retry_after"])} if err.get("retry_after") is not None else None
        self._json(status, payload, headers)
        return status

    def _stream(self, step: sc.Step, body: dict[str, Any]) -> None:
        state = self.server.state
        all_chunks = sc.chunks(
            step,
            body,
            state.vendor,
            chunk_chars=int(step.get("chunk_chars") or state.chunk_chars),
            reuse_index_zero=state.reuse_index_zero,
        )
        limit = int(step.get("after_chunks", 0)) if step.get("disconnect") else None
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for n, chunk in enumerate(all_chunks):
                if limit is not None and n >= limit:
                    self._drop()
                    return
                self._send_chunk(f"data: {json.dumps(chunk)}\n\n".encode())
                if step.get("chunk_delay"):
                    time.sleep(float(step["chunk_delay"]))
            if limit is not None:
                self._drop()
                return
            self._send_chunk(b"data: [DONE]\n\n")
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _send_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # socketserver's default 5 resets connections when 20+ turns start at once
    state: MockState

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients hang up on purpose in these tests (timeouts, cancelled streams); that is not news.
        exc = sys.exc_info()[1]
        if not isinstance(exc, ConnectionError):
            super().handle_error(request, client_address)


class MockLLM:
    """The mock in your process, on a thread: ``with MockLLM("openai") as m: m.script([...])``, then point a
    provider at ``m.base_url`` and read ``m.requests`` (each a `RecordedRequest`: what the client sent).

    ``vendor`` chooses whose validation rules apply ("openai" or "deepseek": settings.toml's provider ``kind``);
    ``script(steps)`` queues the answers, one step per request (a step: ``{"content": …}``, ``{"tool_calls":
    [{"id", "name", "arguments"}]}``, ``{"error": {"status", "message"}}``, … — hologram/testing/mock_llm/
    script.py); ``rejections`` are the requests it refused as the vendor would, a client bug in most tests.
    ``python -m hologram.testing.mock_llm`` is the same server as a process of its own."""

    def __init__(
        self,
        vendor: str = "openai",
        *,
        api_key: str | None = None,
        reuse_index_zero: bool = False,
        thinking_default: bool = False,
        max_context_tokens: int | None = None,
        chunk_chars: int = 4,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        if vendor not in ("openai", "deepseek"):
            raise ValueError(f"vendor must be 'openai' or 'deepseek', not {vendor!r}")
        self.state = MockState(
            vendor=vendor,
            api_key=api_key,
            reuse_index_zero=reuse_index_zero,
            thinking_default=thinking_default,
            max_context_tokens=max_context_tokens,
            chunk_chars=chunk_chars,
        )
        self._host, self._port = host, port
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle ------------------------------------------------------------------------------

    def start(self) -> MockLLM:
        server = _Server((self._host, self._port), _Handler)
        server.state = self.state
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="mock-llm", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> MockLLM:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- test API -------------------------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("mock LLM is not running")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://{self._host}:{self.port}/v1"

    @property
    def requests(self) -> list[RecordedRequest]:
        with self.state.lock:
            return list(self.state.requests)

    @property
    def rejections(self) -> list[RecordedRequest]:
        """Requests refused by validation or auth (not scripted errors): a client bug in most tests."""
        return [r for r in self.requests if r.rejected]

    def script(self, steps: list[sc.Step], *, default: sc.Step | None = None, append: bool = False) -> None:
        """Answer the next requests with ``steps``, in order (``append``: after those not used yet); when they
        run out, with ``default`` if given, else a 500 "mock_llm: script exhausted"."""
        sc.check_steps([*steps, *([default] if default is not None else [])])
        with self.state.lock:
            if not append:
                self.state.steps.clear()
            self.state.steps.extend(steps)
            self.state.default = default

    def reset(self) -> None:
        """Forget the script and the requests received."""
        with self.state.lock:
            self.state.steps.clear()
            self.state.requests.clear()
            self.state.default = None
