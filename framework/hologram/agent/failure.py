"""Why a turn could not answer, as a kind a client can act on (`turn.error`'s ``kind`` and ``status``).

A channel maps these onto its own protocol without parsing messages: ``context_window`` (the conversation no
longer fits, even pruned), ``auth`` (a provider refused the key: 401/402/403), ``rate_limit`` (429 after the
retries), ``upstream_http`` (another HTTP status from the provider), ``network`` (no answer: timeout, refused
connection), ``bad_request`` (400/422: a request-shape problem), ``stream_interrupted`` (the stream broke after
output was shown), ``no_provider`` (none configured), ``storage`` (a session file could not be read or written),
``internal`` (anything else). For every provider failing, the kind of the last provider's error.
"""

from __future__ import annotations

from typing import Literal

from hologram.base.errors import HologramError
from hologram.llm.errors import (
    AllProvidersFailed,
    ContextOverflowError,
    ProviderAuthError,
    ProviderError,
    RequestRejectedError,
    StreamInterruptedError,
)
from hologram.memory.cold.overflow import PromptTooLargeError
from hologram.storage.dbfile import DamagedDatabaseError, DiskFullError

FailureKind = Literal[
    "context_window",
    "auth",
    "rate_limit",
    "upstream_http",
    "network",
    "bad_request",
    "stream_interrupted",
    "no_provider",
    "storage",
    "internal",
]


def failure_of(exc: BaseException) -> tuple[FailureKind, int | None]:
    """The kind and the upstream HTTP status (None when there was none) of what stopped a turn."""
    if isinstance(exc, AllProvidersFailed) and exc.attempts:
        return failure_of(exc.attempts[-1][1])
    if isinstance(exc, (DiskFullError, DamagedDatabaseError)):
        return "storage", None
    if isinstance(exc, (ContextOverflowError, PromptTooLargeError)):
        return "context_window", getattr(exc, "status", None)
    if isinstance(exc, StreamInterruptedError):
        return "stream_interrupted", getattr(exc.cause, "status", None)
    if isinstance(exc, ProviderAuthError):
        return "auth", exc.status
    if isinstance(exc, RequestRejectedError):
        return "bad_request", exc.status
    if isinstance(exc, ProviderError):
        if exc.status == 429:
            return "rate_limit", 429
        return ("upstream_http", exc.status) if exc.status is not None else ("network", None)
    return "internal", None


def failure_message(exc: BaseException) -> str:
    """What the client is told: a `HologramError` as one line per problem with its file and its fix (a full
    disk names the file and the free space), anything else by its message."""
    if isinstance(exc, HologramError):
        return "\n".join(
            (f"{p.file}: " if p.file else "") + p.message + (f"; {p.hint}" if p.hint else "") for p in exc.problems
        )
    return getattr(exc, "message", None) or str(exc) or type(exc).__name__
