"""JSON answers and request bodies: the error shape every route shares, and bodies read with a size cap.

An error is ``{"error": {"code", "message"}}`` with a 4xx; the message names the field and what to send
instead. Kernel errors (`RpcError`) map onto the same shape by their code, so a bad session id is a 404 and
a busy session a 409, never a 500.
"""

from __future__ import annotations

from typing import Any

import orjson

from hologram.rpc import RpcError
from hologram.rpc.errors import ErrorCode
from hologram_plugins.http.asgi import Request, Response

MAX_BODY = 1_048_576  # 1 MiB: a turn's text or a provider chain is far smaller

RPC_STATUS = {
    ErrorCode.INVALID_PARAMS: (400, "bad_request"),
    ErrorCode.UNKNOWN_NAME: (404, "not_found"),
    ErrorCode.NO_SUCH_SESSION: (404, "not_found"),
    ErrorCode.SESSION_BUSY: (409, "conflict"),
    ErrorCode.SESSION_FAILED: (500, "storage"),  # the kernel's files (damaged, a full disk): the message names it
    ErrorCode.METHOD_NOT_FOUND: (503, "upstream"),
    ErrorCode.NOT_READY: (503, "upstream"),
}


class BadRequest(Exception):
    """A request the route cannot use; becomes a 4xx JSON error."""

    def __init__(self, message: str, status: int = 400, code: str = "bad_request") -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code


def json_response(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(
        orjson.dumps(data),
        status_code=status,
        media_type="application/json",
        headers={"cache-control": "no-store", **(headers or {})},
    )


def error(status: int, code: str, message: str) -> Response:
    return json_response({"error": {"code": code, "message": message}}, status)


def rpc_error(exc: RpcError) -> Response:
    status, code = RPC_STATUS.get(exc.code, (502, "upstream"))  # type: ignore[call-overload]
    return error(status, code, exc.message)


async def read_body(request: Request, limit: int = MAX_BODY) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise BadRequest(f"the body is {declared} bytes; at most {limit} are accepted", 413, "bad_request")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BadRequest(f"the body is over {limit} bytes; at most {limit} are accepted", 413, "bad_request")
        chunks.append(chunk)
    return b"".join(chunks)


async def read_object(request: Request, limit: int = MAX_BODY) -> dict[str, Any]:
    """The body as a JSON object, or `BadRequest` saying what is wrong with it."""
    body = await read_body(request, limit)
    if not body.strip():
        raise BadRequest("the body is empty; send a JSON object")
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise BadRequest(f"the body is not valid JSON ({exc}); send a JSON object") from None
    if not isinstance(data, dict):
        raise BadRequest(f"the body must be a JSON object, not {type(data).__name__}")
    return data


def field(data: dict[str, Any], name: str, kind: type | tuple[type, ...], *, required: bool = False) -> Any:
    """``data[name]`` checked against ``kind`` (None when absent and not required)."""
    value = data.get(name)
    if value is None:
        if required:
            raise BadRequest(f"{name}: missing; send it in the JSON body")
        return None
    if isinstance(value, bool) and kind in (int, float):
        raise BadRequest(f"{name}: must be a number, not a boolean")
    if not isinstance(value, kind):
        want = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise BadRequest(f"{name}: must be {_article(want)}, not {type(value).__name__}")
    return value


def _article(name: str) -> str:
    names = {"str": "a string", "bool": "true or false", "int": "a whole number", "list": "a list", "dict": "an object"}
    return names.get(name, name)
