"""Server-Sent Events, parsed once for every client: the LLM providers' streams (`hologram.llm.client`) and
the turn API's event stream over HTTP (`hologram.clients.http_client`).

The rules are the WHATWG "event stream interpretation": lines end with LF, CRLF or CR; a blank line dispatches
the event; ``:`` starts a comment (the keepalives); ``data`` lines are joined with LF; ``event`` names the
event (``message`` when not given); ``id`` sets the last event id — it persists to later events, and one that
holds NUL is ignored; ``retry`` with only digits sets the reconnection time. One space after the colon is
dropped. An event cut off by the end of the stream is not dispatched, as a browser does — except when the
caller asks (`dispatch_incomplete`): some OpenAI-compatible servers end the stream without the last blank line.

Before, two parsers did this, each with its own subset of the rules (one kept ids, the other did not); a fix
to one never reached the other.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

__all__ = ["SseEvent", "SseParser", "sse_events"]


@dataclass(frozen=True, slots=True)
class SseEvent:
    """One dispatched event. ``id``: the id this event's own lines set (None: none did); ``last_id``: the
    stream's last event id at dispatch (what a reconnect sends as ``Last-Event-ID``)."""

    data: str
    event: str = "message"
    id: str | None = None
    last_id: str = ""
    retry_ms: int | None = None  # the reconnection time, as last set by the stream


class SseParser:
    """Fed one line at a time (without its line ending, or with it: a trailing CR or LF is dropped)."""

    def __init__(self) -> None:
        self.last_id = ""
        self.retry_ms: int | None = None
        self._data: list[str] = []
        self._event = ""
        self._id: str | None = None

    def feed(self, raw: str) -> SseEvent | None:
        """The event this line dispatches (a blank line after data), else None."""
        line = raw.rstrip("\r\n")
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id" and "\0" not in value:
            self.last_id = self._id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            self.retry_ms = int(value)
        return None  # an unknown field is ignored

    def _dispatch(self) -> SseEvent | None:
        data, event, own_id = self._data, self._event, self._id
        self._data, self._event, self._id = [], "", None
        if not data:
            return None
        return SseEvent("\n".join(data), event or "message", own_id, self.last_id, self.retry_ms)

    def end(self) -> SseEvent | None:
        """At the end of the stream: the event cut off there (for callers that keep it)."""
        return self._dispatch()


async def sse_events(lines: AsyncIterator[str], *, dispatch_incomplete: bool = False) -> AsyncIterator[SseEvent]:
    """The events of a stream of lines (``httpx.Response.aiter_lines()``, which splits on LF, CRLF and CR)."""
    parser = SseParser()
    async for line in lines:
        event = parser.feed(line)
        if event is not None:
            yield event
    if dispatch_incomplete:
        last = parser.end()
        if last is not None:
            yield last
