"""Fixtures shared by the end-to-end tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mock_llm import MockLLM


@pytest.fixture(scope="module")
def mock() -> Iterator[MockLLM]:
    """One strict DeepSeek mock per test module (a module's kernel is configured with its address)."""
    with MockLLM("deepseek") as m:
        yield m
