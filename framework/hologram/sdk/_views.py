"""Typed stage views: what a stage hook sees, as an object, and the changes it may hand back.

On the wire (protocol 1, `stage/invoke`) a view is a JSON object and a hook's answer is a JSON object of
changes; the kernel checks each key against the stage (`hologram.stages.context`). These classes are the SDK
side of that contract only: a hook annotated with one of them gets the view parsed into it, and its methods
(`rewrite`, `deny`, `respond`, `remember`) build an answer that can only hold keys the stage accepts. The
answer is a plain dict (`Change`), so the wire format is unchanged and nothing is converted on the way out.
tests/launcher/test_views.py holds every view against the kernel's VISIBLE/WRITABLE tables.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypedDict, TypeVar


class Change(TypedDict, total=False):
    """A hook's answer: the fields it changes. Each stage accepts some of them (docs/agent.md); the view's
    methods only set those. A bare dict with the same keys is equivalent."""

    input: str
    system: str
    content: str
    output: str
    arguments: dict[str, Any]
    is_error: bool
    deny: str
    respond: str
    data: dict[str, Any]


def _change(data: Mapping[str, Any] | None, **fields: Any) -> Change:
    answer: dict[str, Any] = {k: v for k, v in fields.items() if v is not None}
    if data:
        answer["data"] = dict(data)
    return answer  # type: ignore[return-value]  # keys are the caller's keyword names, all Change keys


@dataclass(frozen=True, slots=True)
class ToolCallView:
    """The call a tool stage is about: ``plugin`` is None for a kernel tool."""

    id: str
    name: str
    plugin: str | None
    arguments: dict[str, Any]

    @classmethod
    def from_wire(cls, call: Mapping[str, Any] | None) -> ToolCallView:
        call = call or {}
        arguments = dict(call.get("arguments") or {})
        return cls(str(call.get("id", "")), str(call.get("name", "")), call.get("plugin"), arguments)


@dataclass(frozen=True, slots=True)
class ToolResultView:
    content: str
    is_error: bool

    @classmethod
    def from_wire(cls, result: Mapping[str, Any] | None) -> ToolResultView:
        result = result or {}
        return cls(str(result.get("content", "")), bool(result.get("is_error", False)))


V = TypeVar("V", bound="StageView")


@dataclass(frozen=True, slots=True)
class StageView:
    """Fields every stage shows. ``data`` is the dict the hooks of one turn share: read it here, add to it
    with `remember` (or ``data=`` of any other method). ``channel`` (set by the kernel), ``client`` and
    ``partner``: who the turn is from (docs/agent.md, "Stages")."""

    stage_name: ClassVar[str] = ""
    stage: str
    session_id: str
    turn_id: str
    channel: str
    step: int
    data: dict[str, Any]
    # who the turn is from (hologram.agent.identity): keyword-only with defaults, so views built by older code
    # (and the subclasses' own positional fields after these) keep working
    client: str = field(default="", kw_only=True)
    partner: str | None = field(default=None, kw_only=True)

    @classmethod
    def from_wire(cls: type[V], view: Mapping[str, Any]) -> V:
        """Parse the JSON object `stage/invoke` carries; missing fields get their empty value, unknown ones
        (a newer kernel's additions) are ignored, so an old plugin keeps working."""
        return cls(**cls._base(view), **cls._specific(view))

    @staticmethod
    def _base(view: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "stage": str(view.get("stage", "")),
            "session_id": str(view.get("session_id", "")),
            "turn_id": str(view.get("turn_id", "")),
            "channel": str(view.get("channel", "")),
            "step": int(view.get("step", 0)),
            "data": dict(view.get("data") or {}),
            "client": str(view.get("client") or ""),
            "partner": None if view.get("partner") is None else str(view.get("partner")),
        }

    @staticmethod
    def _specific(view: Mapping[str, Any]) -> dict[str, Any]:
        return {}

    def remember(self, **data: Any) -> Change:
        """Add keys to the turn's shared ``data`` and change nothing else."""
        return {"data": data}


@dataclass(frozen=True, slots=True)
class OnInputView(StageView):
    stage_name: ClassVar[str] = "on_input"
    input: str

    @staticmethod
    def _specific(view: Mapping[str, Any]) -> dict[str, Any]:
        return {"input": str(view.get("input", ""))}

    def rewrite(self, input: str, *, data: Mapping[str, Any] | None = None) -> Change:
        """Replace the user's input before anything else sees it."""
        return _change(data, input=input)

    def respond(self, text: str, *, data: Mapping[str, Any] | None = None) -> Change:
        """Answer the turn with ``text``; the model is not asked."""
        return _change(data, respond=text)


@dataclass(frozen=True, slots=True)
class PreActionView(StageView):
    stage_name: ClassVar[str] = "pre_action"
    input: str
    system: str

    @staticmethod
    def _specific(view: Mapping[str, Any]) -> dict[str, Any]:
        return {"input": str(view.get("input", "")), "system": str(view.get("system", ""))}

    def rewrite(self, system: str, *, data: Mapping[str, Any] | None = None) -> Change:
        """Replace the system prompt of this model request."""
        return _change(data, system=system)

    def respond(self, text: str, *, data: Mapping[str, Any] | None = None) -> Change:
        """Answer the turn with ``text``; the model is not asked."""
        return _change(data, respond=text)


@dataclass(frozen=True, slots=True)
class PostActionView(StageView):
    stage_name: ClassVar[str] = "post_action"
    input: str
    content: str | None
    reasoning: str | None
    tool_calls: list[dict[str, Any]]

    @staticmethod
    def _specific(view: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "input": str(view.get("input", "")),
            "content": view.get("content"),
            "reasoning": view.get("reasoning"),
            "tool_calls": list(view.get("tool_calls") or []),
        }

    def rewrite(self, content: str, *, data: Mapping[str, Any] | None = None) -> Change:
        """Replace the text the model produced in this step."""
        return _change(data, content=content)

    def respond(self, text: str, *, data: Mapping[str, Any] | None = None) -> Change:
        """End the turn with ``text`` as its answer; the model is not asked again."""
        return _change(data, respond=text)


@dataclass(frozen=True, slots=True)
class BeforeToolcallView(StageView):
    stage_name: ClassVar[str] = "before_toolcall"
    tool_call: ToolCallView

    @staticmethod
    def _specific(view: Mapping[str, Any]) -> dict[str, Any]:
        return {"tool_call": ToolCallView.from_wire(view.get("tool_call"))}

    def rewrite(self, arguments: Mapping[str, Any], *, data: Mapping[str, Any] | None = None) -> Change:
        """Run the tool with these arguments instead (the kernel validates them against its schema again)."""
        return _change(data, arguments=dict(arguments))

    def deny(self, reason: str, *, data: Mapping[str, Any] | None = None) -> Change:
        """Refuse the call: the model reads ``denied by PLUGIN: reason``."""
        return _change(data, deny=reason)

    def respond(self, text: str, *, data: Mapping[str, Any] | None = None) -> Change:
        """Answer the call with ``text`` as its result; the tool does not run."""
        return _change(data, respond=text)


@dataclass(frozen=True, slots=True)
class AfterToolcallView(StageView):
    stage_name: ClassVar[str] = "after_toolcall"
    tool_call: ToolCallView
    result: ToolResultView

    @staticmethod
    def _specific(view: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "tool_call": ToolCallView.from_wire(view.get("tool_call")),
            "result": ToolResultView.from_wire(view.get("result")),
        }

    def rewrite(
        self, content: str | None = None, is_error: bool | None = None, *, data: Mapping[str, Any] | None = None
    ) -> Change:
        """Replace the result the model will read (its text, whether it is an error, or both)."""
        return _change(data, content=content, is_error=is_error)


@dataclass(frozen=True, slots=True)
class BeforeOutputView(StageView):
    stage_name: ClassVar[str] = "before_output"
    input: str
    output: str

    @staticmethod
    def _specific(view: Mapping[str, Any]) -> dict[str, Any]:
        return {"input": str(view.get("input", "")), "output": str(view.get("output", ""))}

    def rewrite(self, output: str, *, data: Mapping[str, Any] | None = None) -> Change:
        """Replace the answer the user will see."""
        return _change(data, output=output)


@dataclass(frozen=True, slots=True)
class AfterOutputView(StageView):
    """The answer as delivered; a hook here can only observe (and `remember`)."""

    stage_name: ClassVar[str] = "after_output"
    input: str
    output: str

    @staticmethod
    def _specific(view: Mapping[str, Any]) -> dict[str, Any]:
        return {"input": str(view.get("input", "")), "output": str(view.get("output", ""))}


VIEWS: dict[str, type[StageView]] = {
    view.stage_name: view
    for view in (
        OnInputView,
        PreActionView,
        PostActionView,
        BeforeToolcallView,
        AfterToolcallView,
        BeforeOutputView,
        AfterOutputView,
    )
}
