"""Script steps of the mock and how a response step becomes a completion or a stream of chunks.

A step is a plain dict (so a test in another process can post it as JSON):

- response: ``{"content": str|None, "reasoning_content": str|None, "tool_calls": [{"id", "name",
  "arguments"}], "usage": {...}, "finish_reason": str}`` - every key optional;
- error: ``{"error": {"status": int, "message": str, "body": {...}, "retry_after": number|str}}``;
- delay: ``{"delay": seconds}`` - sleeps, then serves the next step to the same request; a response or
  error step may also carry ``"delay"`` to sleep before answering;
- disconnect: ``{"disconnect": true, "after_chunks": n, ...response}`` - streams ``n`` chunks of the
  response then drops the connection (non-streaming: drops it before any byte);
- pacing: a response step may carry ``"chunk_delay"`` (seconds between streamed chunks) and ``"chunk_chars"``
  (characters per chunk, instead of the server's ``--chunk-chars``: a 5 MB argument in a few chunks);
- by the request: ``{"by_last_role": {"user": step, "tool": step, ...}}`` - the step for the role of the
  request's last message (``"default"`` for any other), so one default step can answer a whole tool-using
  turn however many turns, sessions and restarts run at once (the soak and fault-injection runs).

A tool call id may contain ``{n}``: it is replaced by the number of the request (1, 2, …), so ids repeated
by a default step stay unique.

Chunks mimic OpenAI's ``chat.completion.chunk``: a first delta with the role, ``reasoning_content`` deltas
(DeepSeek), content deltas, tool-call deltas split by ``index`` with ``id``/``type``/``function.name`` on
the first delta of a call and the arguments in pieces, a last delta with ``finish_reason``; then, with
``stream_options.include_usage``, a chunk with ``choices: []`` and the usage. Every chunk before it carries
``"usage": null`` in that mode, as OpenAI's do.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

Step = dict[str, Any]


class ScriptError(ValueError):
    """A script step the mock cannot serve as written: said when the script is given, not as a strange
    completion later (a tool call in OpenAI's nested ``function`` form streamed a call with no name)."""


def check_steps(steps: list[Step], where: str = "script") -> None:
    """Refuse steps whose tool calls are not ``{"id", "name", "arguments"}`` (``arguments`` a JSON string)."""
    for number, step in enumerate(steps, 1):
        if not isinstance(step, dict):
            raise ScriptError(f"{where}: step {number} is {type(step).__name__}, not an object")
        rules = step.get("by_last_role")
        if isinstance(rules, dict):
            check_steps([s for s in rules.values() if s is not None], f"{where}: step {number}'s by_last_role")
        for call in step.get("tool_calls") or []:
            if not isinstance(call, dict) or "name" not in call or "id" not in call:
                keys = sorted(call) if isinstance(call, dict) else type(call).__name__
                raise ScriptError(
                    f'{where}: step {number}: a tool call is {{"id", "name", "arguments"}} (arguments a JSON '
                    f"string), got {keys}"
                )
            if not isinstance(call.get("arguments", ""), str):
                raise ScriptError(
                    f"{where}: step {number}: tool call {call['id']!r}: arguments must be a JSON string "
                    "(json.dumps the object)"
                )


def resolve(step: Step, body: dict[str, Any], serial: int) -> Step:
    """The step that answers this request: ``by_last_role`` picked by the last message's role, and ``{n}``
    in tool call ids replaced by `serial` (see the module docstring)."""
    rules = step.get("by_last_role")
    if isinstance(rules, dict):
        messages = body.get("messages") or [{}]
        last = messages[-1] if isinstance(messages[-1], dict) else {}
        step = dict(rules.get(str(last.get("role")), rules.get("default")) or {"content": ""})
    calls = step.get("tool_calls")
    if calls:
        step = {**step, "tool_calls": [{**c, "id": str(c["id"]).replace("{n}", str(serial))} for c in calls]}
    return step


def pieces(text: str, size: int) -> list[str]:
    size = max(1, size)
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def usage_for(step: Step, body: dict[str, Any], vendor: str) -> dict[str, Any]:
    """The usage block: scripted values win; the rest is derived so that totals always add up."""
    given = dict(step.get("usage") or {})
    prompt = int(given.get("prompt_tokens", max(1, len(str(body.get("messages", ""))) // 4)))
    reasoning = int(given.get("reasoning_tokens", len(step.get("reasoning_content") or "") // 4))
    text = (step.get("content") or "") + "".join(c.get("arguments", "") for c in step.get("tool_calls") or [])
    completion = int(given.get("completion_tokens", reasoning + max(1, len(text) // 4)))
    cached = int(given.get("cached_tokens", 0))
    usage: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached},
        "completion_tokens_details": {"reasoning_tokens": reasoning},
    }
    if vendor == "deepseek":
        usage["prompt_cache_hit_tokens"] = cached
        usage["prompt_cache_miss_tokens"] = prompt - cached
    return usage


def finish_reason(step: Step) -> str:
    return str(step.get("finish_reason") or ("tool_calls" if step.get("tool_calls") else "stop"))


def completion(step: Step, body: dict[str, Any], vendor: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": step.get("content")}
    if vendor == "deepseek" and step.get("reasoning_content") is not None:
        message["reasoning_content"] = step["reasoning_content"]
    if step.get("tool_calls"):
        message["tool_calls"] = [
            {
                "id": c["id"],
                "type": "function",
                "function": {"name": c["name"], "arguments": c.get("arguments", "")},
            }
            for c in step["tool_calls"]
        ]
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model"),
        "system_fingerprint": "fp_mock",
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason(step)}],
        "usage": usage_for(step, body, vendor),
    }


def chunks(
    step: Step, body: dict[str, Any], vendor: str, *, chunk_chars: int, reuse_index_zero: bool
) -> list[dict[str, Any]]:
    """All chunks of a streamed answer, in order (the `[DONE]` sentinel is the server's business)."""
    cid = f"chatcmpl-{uuid.uuid4().hex[:24]}"
    created = int(time.time())
    include_usage = bool((body.get("stream_options") or {}).get("include_usage"))

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": created,
            "model": body.get("model"),
            "system_fingerprint": "fp_mock",
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
        if include_usage:
            out["usage"] = None
        return out

    out = [chunk({"role": "assistant", "content": ""})]
    if step.get("reasoning_content") is not None and vendor == "deepseek":
        out += [
            chunk({"content": None, "reasoning_content": p}) for p in pieces(step["reasoning_content"], chunk_chars)
        ]
    if step.get("content"):
        out += [chunk({"content": p}) for p in pieces(step["content"], chunk_chars)]
    for n, call in enumerate(step.get("tool_calls") or []):
        index = 0 if reuse_index_zero else n
        out.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": call["id"],
                            "type": "function",
                            "function": {"name": call["name"], "arguments": ""},
                        }
                    ]
                }
            )
        )
        out += [
            chunk({"tool_calls": [{"index": index, "function": {"arguments": p}}]})
            for p in pieces(call.get("arguments", ""), chunk_chars)
            if p
        ]
    out.append(chunk({}, finish_reason(step)))
    if include_usage:
        final = chunk({})
        final["choices"] = []
        final["usage"] = usage_for(step, body, vendor)
        out.append(final)
    return out
