"""Pages of ``sessions/list`` and ``sessions/read`` (issue 35): the cursor, and a page with its continuation.

Why keyset paging and an opaque cursor: a kernel with years of sessions should not send them all to a page that
shows twenty, and an offset drifts when a session is added or becomes active between two requests (the same
session twice, or one skipped). The cursor names the last session a page showed — its ``updated`` and id, the
order of the listing — so the next page starts right after it; a session that became active meanwhile moves to
the front, where the first page shows it. It is opaque (base64url of JSON) so its form may change without
breaking clients: they only pass back ``next_cursor``.

Without paging params both methods answer as version 1 did (everything, plus a null ``next_cursor`` /
``next_before``), so the web page and ``hologram`` commands that do not page see what they always saw.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from hologram.api.params import PAGE_DEFAULT, ListParams, SessionReadParams

__all__ = ["decode_cursor", "encode_cursor", "list_page", "read_page"]


class BadCursor(ValueError):
    """A cursor this kernel did not give (or one damaged on the way)."""


def encode_cursor(session: dict[str, Any]) -> str:
    """The cursor after ``session`` (a row of `SessionStore.list_sessions`)."""
    raw = json.dumps([session["updated"], session["id"]], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[float, str]:
    """(updated, id) of the session a cursor names; `BadCursor` for anything else."""
    try:
        updated, sid = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (binascii.Error, UnicodeDecodeError, ValueError, TypeError):
        raise BadCursor(cursor) from None
    if not isinstance(updated, (int, float)) or isinstance(updated, bool) or not isinstance(sid, str):
        raise BadCursor(cursor)
    return float(updated), sid


def list_page(store: Any, p: ListParams) -> dict[str, Any]:
    """``sessions/list``'s answer: every session without paging params, else one page and ``next_cursor``."""
    if p.limit is None and p.cursor is None:
        return {"sessions": store.list_sessions(), "next_cursor": None}
    limit = p.limit or PAGE_DEFAULT
    after = decode_cursor(p.cursor) if p.cursor is not None else None
    rows = store.list_sessions(limit=limit + 1, after=after)  # one more: is there a next page?
    page = rows[:limit]
    return {"sessions": page, "next_cursor": encode_cursor(page[-1]) if len(rows) > limit else None}


def read_page(store: Any, p: SessionReadParams) -> tuple[list[Any], int | None]:
    """``sessions/read``'s events: all of them without paging params, else the newest ``limit`` below
    ``before``, and the ``next_before`` that continues backwards (None: nothing older)."""
    if p.limit is None and p.before is None:
        return store.events(p.session), None
    limit = p.limit or PAGE_DEFAULT
    rows = store.events_before(p.session, before=p.before, limit=limit + 1)
    if len(rows) > limit:
        page = rows[1:]  # oldest first: the extra one is the oldest
        return page, page[0].seq
    return rows, None
