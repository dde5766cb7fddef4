"""Durable conversations: SQLite (WAL) events in ``<data>/sessions.db`` and the history built from them."""

from hologram.sessions.event import Event
from hologram.sessions.history import (
    HistoryCache,
    message_of,
    messages_from_events,
    pairing_problems,
    response_message,
)
from hologram.sessions.log import SessionLog
from hologram.sessions.store import DB_NAME, NO_RESULT, SessionError, SessionStore

__all__ = [
    "DB_NAME",
    "NO_RESULT",
    "Event",
    "HistoryCache",
    "SessionError",
    "SessionLog",
    "SessionStore",
    "message_of",
    "messages_from_events",
    "pairing_problems",
    "response_message",
]
