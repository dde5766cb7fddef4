"""Shared fixtures. Each block below belongs to the area named in its comment; append, don't rewrite."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "tools") not in sys.path:
    sys.path.insert(0, str(ROOT / "tools"))

if TYPE_CHECKING:
    from mock_llm import MockLLM


# --- llm: the strict mock LLM server (tools/mock_llm) ------------------------------------------------


@pytest.fixture
def mock_llm() -> Iterator[MockLLM]:
    """A strict OpenAI-flavoured mock on loopback; tests wanting DeepSeek build `MockLLM("deepseek")`."""
    from mock_llm import MockLLM

    with MockLLM("openai") as mock:
        yield mock
