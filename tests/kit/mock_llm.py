"""The strict mock LLM (`hologram.testing.mock_llm`, shipped with the kit; `mock_llm` on the tests' path is its
re-export in tools/) as fixtures: in-process servers, and the server as its own process.

In process, a `MockLLM` is a loopback HTTP server on a thread; a test scripts its answers and reads the
requests it received. Out of process (``python -m hologram.testing.mock_llm``, as a plugin author starts it)
it is what the benchmarks and fault runs start; `MockProcess` waits for its "listening" line — the server says when it is bound, nothing polls.

Fixtures (registered for the whole suite by tests/conftest.py):

- ``mock_llm``: an OpenAI-flavoured mock for one test.
- ``deepseek``: a DeepSeek-flavoured mock for one test.
- ``mock``: one DeepSeek mock per test *module* (the e2e suites start one kernel per module, configured
  with its address; reset it between tests).
- ``mock_llms``: a factory, ``mock_llms("openai", api_key=...)``, for a second or differently configured
  mock; every mock it started is stopped after the test.
- ``mock_llm_process``: a factory starting ``python -m hologram.testing.mock_llm`` with extra arguments, stopped
  after the test.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Any

import pytest

from mock_llm import MockLLM

LISTENING = "mock_llm listening on "


class MockProcess:
    """``python -m hologram.testing.mock_llm`` as a child process (the command docs/authoring.md gives plugin
    authors, from any directory); `base_url` is known once it printed that it listens."""

    def __init__(self, *args: str, cwd: Path | None = None, python: str = sys.executable) -> None:
        self.argv = [python, "-m", "hologram.testing.mock_llm", "--port", "0", *args]
        self.cwd = cwd
        self.process: subprocess.Popen[str] | None = None
        self.base_url = ""

    def start(self) -> MockProcess:
        self.process = subprocess.Popen(self.argv, cwd=self.cwd, stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        line = self.process.stdout.readline()  # blocks until the server is bound, or until it died
        if not line.startswith(LISTENING):
            code = self.process.wait(timeout=10)
            raise AssertionError(f"{' '.join(self.argv)} exited ({code}) instead of listening: {line!r}")
        self.base_url = line.strip().removeprefix(LISTENING)
        return self

    @property
    def root(self) -> str:
        """The server's root, where the ``/_mock/...`` control endpoints are."""
        return self.base_url.removesuffix("/v1")

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()
        self.process = None

    def __enter__(self) -> MockProcess:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


@pytest.fixture
def mock_llm() -> Iterator[MockLLM]:
    """A strict OpenAI-flavoured mock on loopback."""
    with MockLLM("openai") as mock:
        yield mock


@pytest.fixture
def deepseek() -> Iterator[MockLLM]:
    """A strict DeepSeek-flavoured mock on loopback."""
    with MockLLM("deepseek") as mock:
        yield mock


@pytest.fixture(scope="module")
def mock() -> Iterator[MockLLM]:
    """One strict DeepSeek mock per test module (a module's kernel is configured with its address)."""
    with MockLLM("deepseek") as m:
        yield m


@pytest.fixture
def mock_llms() -> Iterator[Callable[..., MockLLM]]:
    """Start more mocks: ``mock_llms(vendor="openai", **options)``; all are stopped after the test."""
    started: list[MockLLM] = []

    def start(vendor: str = "openai", **options: Any) -> MockLLM:
        started.append(MockLLM(vendor, **options).start())
        return started[-1]

    try:
        yield start
    finally:
        for m in reversed(started):
            m.stop()


@pytest.fixture
def mock_llm_process() -> Iterator[Callable[..., MockProcess]]:
    """Start ``python -m hologram.testing.mock_llm --port 0 *args``: ``mock_llm_process("--vendor", "deepseek")``."""
    started: list[MockProcess] = []

    def start(*args: str) -> MockProcess:
        started.append(MockProcess(*args).start())
        return started[-1]

    try:
        yield start
    finally:
        for p in reversed(started):
            p.stop()
