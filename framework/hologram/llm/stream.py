"""The accumulation of streamed deltas into one result (the SSE lines are parsed by `hologram.base.sse`).

Tool-call deltas are keyed by ``index`` as OpenAI specifies, *and* by ``id``: some OpenAI-compatible
servers send every call with index 0, and keying by index alone then glues two calls into one with
concatenated arguments. A delta that carries an ``id`` we have not seen starts a new call even if its
index is taken; a delta without an id continues the call most recently started at its index.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hologram.base._textbuf import TextBuffer
from hologram.llm.shapes import ToolCall, Usage


@dataclass
class _CallBuf:
    id: str
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass
class StreamAccumulator:
    """Everything one streamed response has said so far. One per call, never reused."""

    content: TextBuffer = field(default_factory=TextBuffer)  # one buffer, not ~30k deltas (base/_textbuf.py)
    reasoning: TextBuffer | None = None
    finish_reason: str | None = None
    usage: Usage | None = None
    model: str = ""
    done: bool = False
    _calls: list[_CallBuf] = field(default_factory=list)
    _by_id: dict[str, _CallBuf] = field(default_factory=dict)
    _by_index: dict[int, _CallBuf] = field(default_factory=dict)

    def add_content(self, text: str) -> None:
        self.content.append(text)

    def add_reasoning(self, text: str) -> None:
        if self.reasoning is None:
            self.reasoning = TextBuffer()
        self.reasoning.append(text)

    def add_tool_delta(self, index: int, call_id: str | None, name: str | None, arguments: str | None) -> None:
        buf: _CallBuf | None
        if call_id:
            buf = self._by_id.get(call_id)
            if buf is None:
                buf = _CallBuf(call_id)
                self._by_id[call_id] = buf
                self._calls.append(buf)
            self._by_index[index] = buf
        else:
            buf = self._by_index.get(index)
            if buf is None:  # a server that never sends ids: index is all we have
                buf = _CallBuf("")
                self._by_index[index] = buf
                self._calls.append(buf)
        if name and not buf.name:
            buf.name = name
        if arguments:
            buf.arguments.append(arguments)

    @property
    def has_output(self) -> bool:
        return bool(self.content) or bool(self.reasoning) or bool(self._calls)

    def tool_calls(self) -> tuple[ToolCall, ...]:
        return tuple(ToolCall(c.id, c.name, "".join(c.arguments)) for c in self._calls)

    def text(self) -> str:
        return self.content.text()

    def reasoning_text(self) -> str | None:
        return None if self.reasoning is None else self.reasoning.text()
