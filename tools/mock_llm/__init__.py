"""`mock_llm`, as the repository's tests and benchmarks import it: the strict mock that ships with the kit,
`hologram.testing.mock_llm` (one copy of the code; plugin authors run it as ``python -m hologram.testing.mock_llm``).

The submodules are the shipped ones themselves (``mock_llm.server is hologram.testing.mock_llm.server``), so a
test that reaches into one (``mock_llm.validate.validate``) sees the code that runs.
"""

import importlib
import sys

from hologram.testing.mock_llm import MockLLM, RecordedRequest, Rejection, validate

for _name in ("script", "server", "validate"):
    sys.modules[f"{__name__}.{_name}"] = importlib.import_module(f"hologram.testing.mock_llm.{_name}")

__all__ = ["MockLLM", "RecordedRequest", "Rejection", "validate"]
