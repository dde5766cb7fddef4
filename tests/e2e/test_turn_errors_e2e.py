"""`turn.error` carries what stopped the turn as a kind a client can act on, through a real `hologram up` and the
strict mock (one provider, no retries): a 429 is ``rate_limit`` with status 429, a 401 ``auth`` with 401 — each
followed by ``turn.ended`` with ``stop_reason = "error"``.

Mutation check (done): the hub emitting `TurnFailed` without ``kind`` (the default "internal") turns both red.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from hologram.api import turn as api
from hologram.clients import TurnClient
from mock_llm import MockLLM

from .test_approvals_e2e import ApprovalKernel

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory, mock: MockLLM) -> Iterator[ApprovalKernel]:
    k = ApprovalKernel(tmp_path_factory.mktemp("errors"), mock)
    k.start()
    yield k
    k.stop()


def failed_turn(kernel: ApprovalKernel) -> list[Any]:
    async def go() -> list[Any]:
        async with await TurnClient.connect(kernel.data, client="tester") as client:
            turn = await client.start("hello")
            async with asyncio.timeout(60):
                async for _ in turn:
                    pass
            return turn.events

    return asyncio.run(go())


@pytest.mark.parametrize(("status", "kind"), [(429, "rate_limit"), (401, "auth")])  # 401 last: it cools the provider
def test_a_provider_error_reaches_the_client_as_its_kind(
    kernel: ApprovalKernel, mock: MockLLM, status: int, kind: str
) -> None:
    mock.reset()
    mock.script([{"error": {"status": status, "message": f"mock says {status}"}}])
    events = failed_turn(kernel)
    [error] = [e for e in events if isinstance(e, api.TurnFailed)]
    assert (error.kind, error.status) == (kind, status), error
    assert f"mock says {status}" in error.message
    assert events[-1].type == "turn.ended" and events[-1].stop_reason == "error"
    assert [r.status for r in mock.requests] == [status], "the request reached the mock and failed there"
