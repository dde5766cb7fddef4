"""Vendor-neutral shapes of a conversation: messages, tool calls, usage, requests, results.

These are what the rest of the kernel stores and passes around; only `wire.py` and the adapters know the
JSON the vendors speak. `Message.from_dict` is lenient on purpose: sessions written by an older version
(missing `reasoning_content`, `tool_calls`, ...) must still load.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["system", "user", "assistant", "tool"]
ROLES: tuple[Role, ...] = ("system", "user", "assistant", "tool")


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call as the model made it; `arguments` stays the raw JSON text (parsing is the tool layer's job).
    With slots, as `Message`: memory builds a request's ~440 messages anew for each request (a long turn's), and
    without slots each is two small objects (the instance and its ``__dict__``), alive through the request at
    the turn's peak of small objects (issue 41, docs/memory.md "Eighth round")."""

    id: str
    name: str
    arguments: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolCall:
        fn = data.get("function")
        if isinstance(fn, Mapping):  # the vendor's shape
            return cls(str(data.get("id", "")), str(fn.get("name", "")), str(fn.get("arguments") or ""))
        return cls(str(data.get("id", "")), str(data.get("name", "")), str(data.get("arguments") or ""))


@dataclass(frozen=True, slots=True)
class Message:
    """One chat message. `reasoning_content` is the chain of thought of the response that produced it."""

    role: Role
    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    reasoning_content: str | None = None
    images: tuple[str, ...] = ()
    """A user message's images, as URLs (``data:`` or http): sent as a content array (`hologram.llm.content`);
    not stored with the message (the turn's input event keeps its parts)."""

    @classmethod
    def system(cls, content: str) -> Message:
        return cls("system", content)

    @classmethod
    def user(cls, content: str) -> Message:
        return cls("user", content)

    @classmethod
    def assistant(
        cls,
        content: str | None = None,
        tool_calls: Sequence[ToolCall] = (),
        reasoning_content: str | None = None,
    ) -> Message:
        return cls("assistant", content, tuple(tool_calls), reasoning_content=reasoning_content)

    @classmethod
    def tool(cls, tool_call_id: str, content: str, name: str | None = None) -> Message:
        return cls("tool", content, tool_call_id=tool_call_id, name=name)

    def to_dict(self) -> dict[str, Any]:
        """A storable dict; absent values are omitted so the stored form stays small and stable."""
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [c.to_dict() for c in self.tool_calls]
        for key in ("tool_call_id", "name", "reasoning_content"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Message:
        role = data.get("role")
        if role not in ROLES:
            raise ValueError(f"unknown message role {role!r}")
        content = data.get("content")
        reasoning = data.get("reasoning_content")
        return cls(
            role=role,
            content=content if content is None else str(content),
            tool_calls=tuple(ToolCall.from_dict(c) for c in data.get("tool_calls") or ()),
            tool_call_id=data.get("tool_call_id"),
            name=data.get("name"),
            reasoning_content=reasoning if reasoning is None else str(reasoning),
        )


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0


@dataclass(frozen=True)
class ChatRequest:
    """What the turn loop asks for. `extra` is merged into the top level of the JSON body (it is *not*
    the SDK's `extra_body`, which real APIs reject as an unknown parameter)."""

    messages: Sequence[Message]
    tools: Sequence[Mapping[str, Any]] = ()
    tool_choice: str | Mapping[str, Any] | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    stream: bool = True
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ChatResult:
    """The answer of one call. Its `reasoning` belongs to this response only: nothing is carried over from
    an earlier call, so a final plain-text step can never pass off a tool round's chain of thought."""

    content: str
    reasoning: str | None
    tool_calls: tuple[ToolCall, ...]
    usage: Usage | None
    finish_reason: str | None
    provider: str = ""
    model: str = ""

    def to_message(self) -> Message:
        """The assistant message to append to the history (and persist), reasoning included verbatim."""
        content: str | None = self.content
        if not content and self.tool_calls:
            content = None
        return Message.assistant(content, self.tool_calls, reasoning_content=self.reasoning)


@dataclass(frozen=True)
class Delta:
    """A piece of streamed output, handed to the caller as soon as it arrives."""

    kind: Literal["content", "reasoning"]
    text: str


@dataclass(frozen=True)
class Done:
    """Last event of `ProviderChain.stream`: the complete result."""

    result: ChatResult


StreamEvent = Delta | Done
