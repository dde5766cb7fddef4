"""What stopped a turn, as the kind a client acts on (`hologram.agent.failure`): each provider error class and
status maps to its kind, every provider failing takes the last one's, and a turn through the real kernel reports
``turn.error`` with that kind and status (tests/e2e/test_turn_errors_e2e.py).

Mutation check (done): `failure_of` without its 429 branch turns the rate-limit case red (upstream_http).
"""

from __future__ import annotations

import pytest

from hologram.agent.failure import failure_of
from hologram.llm.errors import (
    AllProvidersFailed,
    ContextOverflowError,
    ProviderAuthError,
    RequestRejectedError,
    StreamInterruptedError,
    TransientProviderError,
)
from hologram.memory.cold.overflow import PromptTooLargeError


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (ProviderAuthError("a", "bad key", status=401), ("auth", 401)),
        (TransientProviderError("a", "slow down", status=429), ("rate_limit", 429)),
        (TransientProviderError("a", "bad gateway", status=502), ("upstream_http", 502)),
        (TransientProviderError("a", "timed out"), ("network", None)),
        (RequestRejectedError("a", "bad field", status=400), ("bad_request", 400)),
        (ContextOverflowError("a", "too long", status=400), ("context_window", 400)),
        (
            StreamInterruptedError("a", TransientProviderError("a", "cut", status=500), "par", ""),
            ("stream_interrupted", 500),
        ),
        (RuntimeError("boom"), ("internal", None)),
    ],
)
def test_each_error_has_its_kind(error: BaseException, expected: tuple[str, int | None]) -> None:
    assert failure_of(error) == expected


def test_every_provider_failing_takes_the_last_ones_kind() -> None:
    failed = AllProvidersFailed(
        [("a", ProviderAuthError("a", "no", status=403)), ("b", TransientProviderError("b", "busy", status=429))], 2
    )
    assert failure_of(failed) == ("rate_limit", 429)
    assert failure_of(PromptTooLargeError("still too large")) == ("context_window", None)
