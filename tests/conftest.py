"""Shared fixtures. Each block below belongs to the area named in its comment; append, don't rewrite."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck, settings

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


# --- hypothesis: no test may depend on how fast the machine runs an example -------------------------------

# Hypothesis' defaults are timings: a 200 ms deadline per example and the too_slow health check on data
# generation. On a machine several times slower than the one a test was written on (or under load) they fail
# a correct test; what the property tests check is the property, so neither timing applies to them.
settings.register_profile("hologram", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("hologram")
