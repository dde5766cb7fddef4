"""Request validation of the strict mock: reject what OpenAI and DeepSeek reject, as they reject it.

The point of the mock is that a client bug which the real vendor answers with a 400 also draws a 400 here,
with the same status and (where we know it) the same wording, so tests catch it without a network. Each
rule is a function returning `Rejection | None`; `validate()` runs them in the order the vendors seem to
(body shape first, then parameters, then the conversation). The rules are listed in `server.py` and in
docs/providers.md; keep the three in step.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass
from typing import Any

OPENAI_ROLES = ("system", "assistant", "user", "function", "tool", "developer")
DEEPSEEK_ROLES = ("system", "user", "assistant", "tool")

# Top-level parameters the mock accepts. Anything else is "unrecognized" (the SDK's `extra_body` is the
# classic: it is an SDK argument that must be merged into the body, never sent as a key of its own).
COMMON_PARAMS = frozenset(
    {
        "model",
        "messages",
        "stream",
        "stream_options",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "temperature",
        "top_p",
        "max_tokens",
        "max_completion_tokens",
        "stop",
        "presence_penalty",
        "frequency_penalty",
        "response_format",
        "seed",
        "user",
        "n",
        "logprobs",
        "top_logprobs",
    }
)
DEEPSEEK_PARAMS = COMMON_PARAMS | {"thinking"}
OPENAI_PARAMS = COMMON_PARAMS | {"reasoning_effort", "metadata", "store", "service_tier", "logit_bias"}

MESSAGE_FIELDS = {
    "openai": frozenset({"role", "content", "name", "tool_calls", "tool_call_id", "refusal", "function_call"}),
    "deepseek": frozenset({"role", "content", "name", "tool_calls", "tool_call_id", "reasoning_content", "prefix"}),
}


@dataclass(frozen=True)
class Rejection:
    """An HTTP error the vendor would send: status plus the OpenAI-shaped error body."""

    status: int
    message: str
    param: str | None = None
    code: str | None = None
    type: str = "invalid_request_error"

    def body(self) -> dict[str, Any]:
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}


def check_auth(headers: dict[str, str], api_key: str | None, vendor: str) -> Rejection | None:
    """401 when a key is configured and the bearer token is missing or different."""
    if api_key is None:
        return None
    auth = headers.get("authorization", "")
    if not auth.startswith("Bearer "):
        if vendor == "deepseek":
            return Rejection(
                401,
                "Authentication Fails, Your api key is invalid",
                code="invalid_request_error",
                type="authentication_error",
            )
        return Rejection(
            401,
            "You didn't provide an API key. You need to provide your API key in an Authorization header "
            "using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
        )
    token = auth[len("Bearer ") :]
    if token == api_key:
        return None
    if vendor == "deepseek":
        return Rejection(
            401,
            f"Authentication Fails, Your api key: ****{token[-4:]} is invalid",
            code="invalid_request_error",
            type="authentication_error",
        )
    return Rejection(
        401,
        f"Incorrect API key provided: {token[:3]}***{token[-4:]}. You can find your API key at "
        "https://platform.openai.com/account/api-keys.",
        code="invalid_api_key",
    )


def parse_body(raw: bytes, vendor: str) -> tuple[Any, Rejection | None]:
    try:
        return json.loads(raw), None
    except (ValueError, UnicodeDecodeError):
        if vendor == "deepseek":
            return None, Rejection(400, "Failed to parse the request body as JSON")
        return None, Rejection(
            400,
            "We could not parse the JSON body of your request. (HINT: This likely means you aren't using "
            "your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was "
            "not valid JSON. If you have trouble figuring out how to fix this, please contact us through our "
            "help center at help.openai.com.)",
        )


def _deser(message: str) -> Rejection:
    # DeepSeek's front end answers type errors the way axum does: 422 with a serde message.
    return Rejection(422, f"Failed to deserialize the JSON body into the target type: {message}")


def check_shape(body: Any, vendor: str) -> Rejection | None:
    """Required fields, known top-level params, message roles and fields."""
    if not isinstance(body, dict):
        if vendor == "deepseek":
            return _deser("invalid type: expected struct ChatCompletionRequest")
        return Rejection(400, "Invalid type for request body: expected an object.")
    known = DEEPSEEK_PARAMS if vendor == "deepseek" else OPENAI_PARAMS
    for key in body:
        if key not in known:
            return Rejection(400, f"Unrecognized request argument supplied: {key}")
    if "model" not in body or not body["model"]:
        if vendor == "deepseek":
            return _deser("missing field `model`")
        return Rejection(400, "you must provide a model parameter")
    messages = body.get("messages")
    if messages is None:
        if vendor == "deepseek":
            return _deser("missing field `messages`")
        return Rejection(400, "Missing required parameter: 'messages'.", "messages", "missing_required_parameter")
    if not isinstance(messages, list) or not messages:
        if vendor == "deepseek":
            return _deser("messages: invalid length 0, expected a non-empty sequence")
        return Rejection(
            400,
            "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.",
            "messages",
            "empty_array",
        )
    roles = DEEPSEEK_ROLES if vendor == "deepseek" else OPENAI_ROLES
    fields = MESSAGE_FIELDS[vendor]
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict):
            return Rejection(400, f"Invalid type for 'messages[{i}]': expected an object.", f"messages[{i}]")
        role = msg.get("role")
        if role not in roles:
            if vendor == "deepseek":
                expected = ", ".join(f"`{r}`" for r in roles)
                return _deser(f"messages[{i}].role: unknown variant `{role}`, expected one of {expected}")
            supported = ", ".join(f"'{r}'" for r in roles[:-1]) + f", and '{roles[-1]}'"
            return Rejection(
                400,
                f"Invalid value: '{role}'. Supported values are: {supported}.",
                f"messages[{i}].role",
                "invalid_value",
            )
        for key in msg:
            if key not in fields:
                return Rejection(
                    400,
                    f"Additional properties are not allowed ('{key}' was unexpected) - 'messages.{i}'",
                    f"messages[{i}]",
                )
        content_problem = check_content(body, msg, i, vendor)
        if content_problem is not None:
            return content_problem
        if role == "tool" and not isinstance(msg.get("tool_call_id"), str):
            return Rejection(
                400,
                f"Missing required parameter: 'messages[{i}].tool_call_id'.",
                f"messages[{i}].tool_call_id",
                "missing_required_parameter",
            )
        for j, call in enumerate(msg.get("tool_calls") or []):
            fn = call.get("function") if isinstance(call, dict) else None
            if not isinstance(call, dict) or not call.get("id") or not isinstance(fn, dict) or not fn.get("name"):
                return Rejection(
                    400,
                    f"Missing required parameter: 'messages[{i}].tool_calls[{j}]'.",
                    f"messages[{i}].tool_calls[{j}]",
                    "missing_required_parameter",
                )
            if not isinstance(fn.get("arguments"), str):
                return Rejection(
                    400,
                    f"Invalid type for 'messages[{i}].tool_calls[{j}].function.arguments': expected a string.",
                    f"messages[{i}].tool_calls[{j}].function.arguments",
                    "invalid_type",
                )
    return None


# The content part types OpenAI takes per role (a user message: also images, audio, files), in its wording.
OPENAI_PART_TYPES = {
    "user": ("text", "image_url", "input_audio", "file"),
    "assistant": ("text", "refusal"),
}
IMAGE_DATA_URL = re.compile(r"^data:image/(png|jpeg|gif|webp);base64,(.*)$", re.DOTALL)


def check_content(body: dict[str, Any], msg: dict[str, Any], i: int, vendor: str) -> Rejection | None:
    """A message's ``content``: a string, null, or an array of content parts of the right shapes.

    DeepSeek's chat API is text only: its content array takes ``{"type": "text"}`` parts, and any other part
    is a serde "unknown variant" error (HTTP 400, as the API answers it today)."""
    content = msg.get("content")
    if content is None or isinstance(content, str):
        return None
    where = f"messages[{i}].content"
    if vendor == "deepseek":
        if not isinstance(content, list):
            return _deser(f"messages[{i}]: invalid type: map, expected a string")
        for part in content:
            kind = part.get("type") if isinstance(part, dict) else None
            if kind != "text":
                column = _column(body, f'"type":{json.dumps(kind)}')
                return Rejection(
                    400,
                    "Failed to deserialize the JSON body into the target type: "
                    f"messages[{i}]: unknown variant `{kind}`, expected `text` at line 1 column {column}",
                    code="invalid_request_error",
                )
            if not isinstance(part.get("text"), str):
                return _deser(f"messages[{i}]: missing field `text`")
        return None
    if not isinstance(content, list):
        return Rejection(
            400,
            f"Invalid type for '{where}': expected one of a string or array of objects, but got an object instead.",
            where,
            "invalid_type",
        )
    if not content:
        return Rejection(
            400,
            f"Invalid '{where}': empty array. Expected an array with minimum length 1, but got an empty array instead.",
            where,
            "empty_array",
        )
    allowed = OPENAI_PART_TYPES.get(msg["role"], ("text",))
    for j, part in enumerate(content):
        at = f"{where}[{j}]"
        if not isinstance(part, dict):
            return Rejection(400, f"Invalid type for '{at}': expected an object, but got a string instead.", at)
        kind = part.get("type")
        if kind == "image_url" and msg["role"] != "user":
            return Rejection(
                400,
                f"Image URLs are only allowed for messages with role 'user', but this message with role "
                f"'{msg['role']}' contains an image URL.",
                f"messages[{i}]",
                "invalid_value",
            )
        if kind not in allowed:
            quoted = [f"'{t}'" for t in allowed]
            supported = quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + f", and {quoted[-1]}"
            return Rejection(
                400,
                f"Invalid value: '{kind}'. Supported values are: {supported}.",
                f"{at}.type",
                "invalid_value",
            )
        if kind == "text" and not isinstance(part.get("text"), str):
            return Rejection(
                400, f"Missing required parameter: '{at}.text'.", f"{at}.text", "missing_required_parameter"
            )
        if kind == "image_url":
            problem = _check_image_url(part.get("image_url"), f"{at}.image_url")
            if problem is not None:
                return problem
    return None


def _check_image_url(image: Any, at: str) -> Rejection | None:
    if not isinstance(image, dict) or not isinstance(image.get("url"), str):
        return Rejection(400, f"Missing required parameter: '{at}.url'.", f"{at}.url", "missing_required_parameter")
    url = image["url"]
    if image.get("detail", "auto") not in ("auto", "low", "high"):
        return Rejection(
            400,
            f"Invalid value: '{image['detail']}'. Supported values are: 'auto', 'low', and 'high'.",
            f"{at}.detail",
            "invalid_value",
        )
    if url.startswith(("http://", "https://")):
        return None
    match = IMAGE_DATA_URL.match(url)
    if match is None:
        return Rejection(
            400,
            f"Invalid '{at}.url'. Expected a base64-encoded data URL with an image MIME type (e.g. "
            "'data:image/png;base64,aW1nIGJ5dGVzIGhlcmU='), but got an invalid value.",
            f"{at}.url",
            "invalid_value",
        )
    try:
        base64.b64decode(match.group(2), validate=True)
    except (binascii.Error, ValueError):
        return Rejection(400, "Invalid base64 image_url.", f"{at}.url", "invalid_base64")
    return None


def _column(body: dict[str, Any], needle: str) -> int:
    """Where serde would stop in a compact JSON encoding of the body (1-based, after the token)."""
    compact = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
    at = compact.find(needle)
    return at + len(needle) if at >= 0 else len(compact)


def thinking_enabled(body: dict[str, Any], thinking_default: bool) -> bool:
    thinking = body.get("thinking")
    if isinstance(thinking, dict) and thinking.get("type") in ("enabled", "disabled"):
        return bool(thinking["type"] == "enabled")
    return thinking_default or body.get("model") == "deepseek-reasoner"


def check_thinking(body: dict[str, Any], vendor: str) -> Rejection | None:
    if vendor != "deepseek" or "thinking" not in body:
        return None
    thinking = body["thinking"]
    if not isinstance(thinking, dict) or thinking.get("type") not in ("enabled", "disabled"):
        return _deser('thinking: expected `{"type": "enabled"}` or `{"type": "disabled"}`')
    return None


def check_conversation(body: dict[str, Any], vendor: str, thinking_default: bool) -> Rejection | None:
    """Tool calls answered, tool results preceded by their call, DeepSeek reasoning replayed."""
    messages: list[dict[str, Any]] = body["messages"]
    pending: list[str] = []  # call ids of the last assistant message still waiting for a result
    pending_at = -1
    answerable: set[str] = set()
    thinking = vendor == "deepseek" and thinking_enabled(body, thinking_default)
    for i, msg in enumerate(messages):
        role = msg["role"]
        if role == "tool":
            call_id = msg["tool_call_id"]
            if call_id not in answerable:
                return Rejection(
                    400,
                    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message "
                    "with 'tool_calls'.",
                    f"messages.[{i}].role",
                )
            answerable.discard(call_id)
            if call_id in pending:
                pending.remove(call_id)
            continue
        if pending:
            return _unanswered(pending, pending_at)
        answerable = set()
        if role == "assistant" and msg.get("tool_calls"):
            if thinking and "reasoning_content" not in msg:
                return Rejection(
                    400, f"Missing `reasoning_content` field in the assistant message at message index {i}"
                )
            pending = [c["id"] for c in msg["tool_calls"]]
            pending_at = i
            answerable = set(pending)
    if pending:
        return _unanswered(pending, pending_at)
    return None


def _unanswered(pending: list[str], index: int) -> Rejection:
    return Rejection(
        400,
        "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
        f"'tool_call_id'. The following tool_call_ids did not have response messages: {', '.join(pending)}",
        f"messages.[{index}].role",
    )


def estimate_tokens(body: dict[str, Any]) -> int:
    """Rough count (4 characters a token), enough to drive the context-window rule deterministically."""
    return len(json.dumps(body.get("messages", []), ensure_ascii=False)) // 4


def check_context(body: dict[str, Any], vendor: str, max_context_tokens: int | None) -> Rejection | None:
    if max_context_tokens is None:
        return None
    tokens = estimate_tokens(body)
    if tokens <= max_context_tokens:
        return None
    if vendor == "deepseek":
        return Rejection(
            400,
            f"This model's maximum context length is {max_context_tokens} tokens. However, you requested "
            f"{tokens} tokens ({tokens} in the messages, 0 in the completion). Please reduce the length of "
            "the messages or completion.",
        )
    return Rejection(
        400,
        f"This model's maximum context length is {max_context_tokens} tokens. However, your messages "
        f"resulted in {tokens} tokens. Please reduce the length of the messages.",
        "messages",
        "context_length_exceeded",
    )


def validate(
    body: Any, vendor: str, *, thinking_default: bool = False, max_context_tokens: int | None = None
) -> Rejection | None:
    return (
        check_shape(body, vendor)
        or check_thinking(body, vendor)
        or check_conversation(body, vendor, thinking_default)
        or check_context(body, vendor, max_context_tokens)
    )
