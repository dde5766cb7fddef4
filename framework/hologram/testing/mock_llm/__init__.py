"""The strict mock of the OpenAI / DeepSeek chat-completions API: a real HTTP server on loopback that refuses
what the vendors refuse (server.py lists the rules) and answers with scripted steps (script.py).

It ships with the kit (hologram-sdk), so a plugin author can run a real kernel against it without an LLM:
``python -m hologram.testing.mock_llm --port 8765 --script steps.json`` (docs/authoring.md, "Try it under a
real kernel"), or in-process ``with MockLLM("openai") as mock: mock.script([...])``. The standard library is
all it imports: the SDK-only install must be able to run it.
"""

from hologram.testing.mock_llm.server import MockLLM, RecordedRequest
from hologram.testing.mock_llm.validate import Rejection, validate

__all__ = ["MockLLM", "RecordedRequest", "Rejection", "validate"]
