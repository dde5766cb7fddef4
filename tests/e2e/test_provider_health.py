"""A dead first provider costs one turn, not every turn: through `hologram up`, two strict mocks, the first
answering HTTP 500 (issue 10, item 4: before, every `hologram ask` retried it 4 times, 12.4 s a turn).

Mutation check (done): `HealthBook.plan` keeping cooling providers in the plan turns the first test red
(the dead mock is asked on every turn); `ProviderChain.complete` not reporting success to the health book
turns the second red (the provider stays half-open/cooling after a good probe).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mock_llm import MockLLM
from tests.kit.wait import wait_until

from .kernel import E2EKernel, as_json

pytestmark = pytest.mark.slow

DOWN = {"error": {"status": 500, "message": "upstream is down"}}


@pytest.fixture
def mocks(mock_llms: Callable[..., MockLLM]) -> tuple[MockLLM, MockLLM]:
    return mock_llms("deepseek"), mock_llms("deepseek")


def kernel_with(root: Path, first: MockLLM, second: MockLLM, cooldown_s: float) -> E2EKernel:
    return E2EKernel(root, [first, second], cooldown_s=cooldown_s)  # max_retries = 0 per provider


def providers(kernel: E2EKernel) -> dict[str, dict[str, Any]]:
    return {p["name"]: p for p in kernel.status()["providers"]}


def test_a_dead_first_provider_is_skipped_after_the_first_turn(tmp_path: Path, mocks: tuple[MockLLM, MockLLM]) -> None:
    first, second = mocks
    first.script([], default=DOWN)
    second.script([], default={"reasoning_content": "r", "content": "from the fallback"})
    kernel = kernel_with(tmp_path, first, second, cooldown_s=30)
    kernel.start()
    try:
        for _ in range(3):
            answer = as_json(kernel.ask("hello", "--json"))
            assert answer["output"] == "from the fallback"
        assert len(first.requests) == 1, "asked once, then cooling down"
        assert len(second.requests) == 3
        health = providers(kernel)
        assert health["p1"]["state"] == "cooling" and health["p1"]["cooldown_left_s"] > 0
        assert "HTTP 500: upstream is down" in health["p1"]["last_error"]
        assert health["p2"]["state"] == "healthy" and health["p2"]["last_error"] is None
        text = kernel.hologram("status", "--data", str(kernel.data), check=True).stdout
        assert "PROVIDER" in text and "cooling" in text and "upstream is down" in text
        assert all(r.status == 500 for r in first.requests) and second.rejections == []
    finally:
        kernel.stop()


def test_a_half_open_probe_brings_the_provider_back(tmp_path: Path, mocks: tuple[MockLLM, MockLLM]) -> None:
    first, second = mocks
    first.script([DOWN], default={"reasoning_content": "r", "content": "first is back"})
    second.script([], default={"reasoning_content": "r", "content": "from the fallback"})
    kernel = kernel_with(tmp_path, first, second, cooldown_s=0.5)
    kernel.start()
    try:
        assert as_json(kernel.ask("one", "--json"))["output"] == "from the fallback"
        wait_until(  # the cooldown runs out: wait for the state
            lambda: providers(kernel), accept=lambda ps: ps["p1"]["state"] == "half-open", timeout=30,
            what="p1 to be half-open",
        )  # fmt: skip
        assert as_json(kernel.ask("two", "--json"))["output"] == "first is back"
        assert providers(kernel)["p1"]["state"] == "healthy"
        assert len(first.requests) == 2 and len(second.requests) == 1
        assert json.loads(kernel.hologram("status", "--json", "--data", str(kernel.data)).stdout)["providers"]
    finally:
        kernel.stop()
