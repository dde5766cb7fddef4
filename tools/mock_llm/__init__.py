"""Strict mock of the OpenAI / DeepSeek chat-completions API for tests and benchmarks (see server.py)."""

from mock_llm.server import MockLLM, RecordedRequest
from mock_llm.validate import Rejection, validate

__all__ = ["MockLLM", "RecordedRequest", "Rejection", "validate"]
