"""Rows of ``sessions.db`` that cannot be read, and what a session shows in their place.

Random bytes inside a data page usually leave SQLite's structures intact: SQLite reads the row, and the
damage shows only when its text is decoded (not UTF-8: sqlite3 raises ``OperationalError: Could not decode
to UTF-8``, for the whole query) or parsed (not JSON). Such a row must cost that one event, not the session:
the store reads the session again with text as bytes, decodes row by row, and each row that fails is
reported once (a warning naming the file, session and seq) and replaced in what `SessionStore.events`
returns — the row on disk is never rewritten, so its original bytes stay where they were (`hologram doctor`
lists them).

What stands in for a damaged row keeps the call/result invariant true for the history built from it:

* a ``tool_result`` whose call is known (its ``call_of``/``call_id`` columns are readable) becomes an error
  result saying the stored result is damaged. The call keeps exactly one result, on disk and in the
  history; the model learns the result is gone rather than seeing a call without one.
* a ``response`` loses its text and its calls' arguments, but the ids (and tool names) of its calls are
  known from the results that name it, so it becomes an assistant step making those calls, and the results
  keep their call. Without results it is skipped.
* anything else (an ``input``, an ``output``, a result whose call columns are damaged too) is skipped. A
  call whose result is skipped so is then unanswered, and `SessionStore.repair` gives it a synthetic result
  on disk, as after a crash.
"""

from __future__ import annotations

from typing import Any

DAMAGED_RESULT = "error: the stored result of this call is damaged (sessions.db) and could not be read"
DAMAGED_RESPONSE = "[this step could not be read: its record in sessions.db is damaged]"
UNKNOWN_TOOL = "unknown_tool"  # the name of a rebuilt call whose result is damaged too (vendors need one)
TEXT_COLUMNS = {1: "session", 2: "kind", 5: "turn", 6: "channel", 8: "call_id"}


class UnreadableRow(Exception):
    """A row of ``events`` that cannot be decoded; ``reason`` says which part and why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def text_row(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """A row read with ``text_factory=bytes`` made like a normally read one: every text column decoded
    (``data`` stays bytes: the JSON parser takes bytes and checks the UTF-8 itself). Raises
    `UnreadableRow` naming the first column that is not UTF-8."""
    out = list(row)
    for index, name in TEXT_COLUMNS.items():
        value = out[index]
        if isinstance(value, bytes):
            try:
                out[index] = value.decode("utf-8")
            except UnicodeDecodeError:
                raise UnreadableRow(f"its {name} column is not UTF-8 text") from None
    return tuple(out)


def partial(row: tuple[Any, ...]) -> tuple[str | None, int | None, str | None]:
    """(kind, call_of, call_id) of a damaged row, each None when it is unreadable too."""
    kind, call_of, call_id = row[2], row[7], row[8]
    return _text(kind), call_of if isinstance(call_of, int) else None, _text(call_id)


def _text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return None
    return None


def placeholder_result(reason: str) -> dict[str, Any]:
    return {"content": DAMAGED_RESULT, "is_error": True, "damaged": reason}


def reconstructed_response(calls: list[tuple[str, str]], reason: str) -> dict[str, Any]:
    """A response whose own record is lost, rebuilt from the (call id, tool name) of its results."""
    return {
        "content": DAMAGED_RESPONSE,
        "reasoning": None,
        "tool_calls": [{"id": i, "name": name or UNKNOWN_TOOL, "arguments": "{}"} for i, name in calls],
        "damaged": reason,
    }
