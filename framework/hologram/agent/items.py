"""A turn's items (turn API version 2), derived from its events as they pass the hub.

Codex's app-server protocol gives a turn *items* — the user's message, one agent message and one reasoning per
LLM step, each tool call, each approval — each with an id, an ``item.started``, deltas that name it and an
``item.completed`` with the authoritative content. The agent loop does not need to know: it already emits
every delta, call and result in order, so `TurnItems` watches that stream per turn and adds the item events
around it (and the item id on the deltas). One place, and a client of version 1 sees only event types it
skips (`UnknownEvent`) and fields it ignores.

Costs per delta one dict lookup and a list append (the text kept for ``item.completed``): a message streamed
in many small deltas is joined once, when the item completes.
"""

from __future__ import annotations

from typing import Any

from hologram.api import turn as api
from hologram.base._textbuf import TextBuffer

_TEXT_ITEMS = {"content.delta": "agent_message", "reasoning.delta": "reasoning"}


class TurnItems:
    """The items of one running turn. ``before(event)`` → item events to send before it (and sets its
    ``item``); ``after(event)`` → those to send after it."""

    __slots__ = ("_approvals", "_calls", "_n", "_open", "_open_id", "_text", "agent_text", "session", "turn")

    def __init__(self, session: str, turn: str) -> None:
        self.session = session
        self.turn = turn
        self._n = 0
        self._open: str | None = None  # the open text item's type (agent_message / reasoning)
        self._open_id = ""
        self._text = TextBuffer()  # the open text item's deltas, in one buffer (base/_textbuf.py)
        self._calls: dict[str, str] = {}  # call_id → its open tool_call item
        self._approvals: dict[str, str] = {}  # approval id → its open approval item
        self.agent_text: list[str] = []  # every agent_message's text of this turn: the partial answer on cancel

    def _id(self) -> str:
        self._n += 1
        return f"{self.turn}.{self._n}"

    def _started(self, item: dict[str, Any]) -> api.ItemStarted:
        return api.ItemStarted(session=self.session, turn=self.turn, item=item)

    def _completed(self, item: dict[str, Any]) -> api.ItemCompleted:
        return api.ItemCompleted(session=self.session, turn=self.turn, item=item)

    def _close_text(self, status: str = "completed") -> list[Any]:
        if self._open is None:
            return []
        text = self._text.text()
        if self._open == "agent_message":
            self.agent_text.append(text)
        done = self._completed({"id": self._open_id, "type": self._open, "text": text, "status": status})
        self._open, self._open_id, self._text = None, "", TextBuffer()
        return [done]

    def before(self, event: Any) -> list[Any]:
        kind = event.type
        text_item = _TEXT_ITEMS.get(kind)
        if text_item is not None:
            out: list[Any] = []
            if self._open != text_item:
                out = self._close_text()
                self._open, self._open_id = text_item, self._id()
                item: dict[str, Any] = {"id": self._open_id, "type": text_item}
                if kind == "content.delta" and event.by:
                    item["by"] = event.by
                out.append(self._started(item))
            self._text.append(event.text)
            event.item = self._open_id
            return out
        if kind == "tool.call":
            out = self._close_text()
            item_id = self._calls[event.call_id] = self._id()
            event.item = item_id
            out.append(
                self._started(
                    {
                        "id": item_id,
                        "type": "tool_call",
                        "call_id": event.call_id,
                        "tool": event.tool,
                        "plugin": event.plugin,
                    }
                )
            )
            return out
        if kind == "tool.output" or kind == "tool.result":
            event.item = self._calls.get(event.call_id, "")
            return []
        if kind == "approval.requested":
            item_id = self._approvals[event.approval] = self._id()
            event.item = item_id
            return [
                self._started({"id": item_id, "type": "approval", "approval": event.approval, "call_id": event.call_id})
            ]
        if kind == "approval.resolved":
            event.item = self._approvals.get(event.approval, "")
            return []
        if kind == "turn.ended":
            return (
                self._close_text("cancelled" if event.stop_reason == "cancelled" else "completed") + self._close_calls()
            )
        if kind in ("turn.error", "memory.note"):
            return self._close_text()
        return []

    def after(self, event: Any) -> list[Any]:
        kind = event.type
        if kind == "turn.started":
            item = {"id": self._id(), "type": "user_message", "text": event.text}
            return [self._started(item), self._completed({**item, "status": "completed"})]
        if kind == "tool.result":
            item_id = self._calls.pop(event.call_id, None)
            if item_id is None:
                return []
            item = {"id": item_id, "type": "tool_call", "call_id": event.call_id, "tool": event.tool}
            item.update(status=event.status, is_error=event.is_error, content=event.content)
            if event.images:
                item["images"] = event.images
            return [self._completed(item)]
        if kind == "approval.resolved":
            item_id = self._approvals.pop(event.approval, None)
            if item_id is None:
                return []
            item = {"id": item_id, "type": "approval", "approval": event.approval, "call_id": event.call_id}
            item.update(approved=event.approved, by=event.by, reason=event.reason, status="completed")
            decision = getattr(event, "decision", None)
            if decision is not None:
                item["decision"] = decision
            return [self._completed(item)]
        return []

    def _close_calls(self) -> list[Any]:
        """Tool calls still open when the turn ends (cancelled, failed): each completed as ``cancelled``."""
        out = [
            self._completed({"id": item_id, "type": "tool_call", "call_id": call_id, "status": "cancelled"})
            for call_id, item_id in self._calls.items()
        ]
        self._calls.clear()
        return out

    @property
    def partial(self) -> str:
        """The last agent message so far (the open one, else the last completed): a cancelled turn's output."""
        if self._open == "agent_message":
            return self._text.text()
        return self.agent_text[-1] if self.agent_text else ""
