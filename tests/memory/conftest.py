"""Fixtures shared by the memory tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hologram.memory.cold.store import ColdStore
from hologram.memory.session_memory import SessionMemory
from hologram.sessions import SessionStore


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[SessionMemory]:
    """SessionMemory on a real SessionStore and ColdStore in a tmp dir, no embedder (BM25 only)."""
    store = SessionStore(tmp_path / "sessions.db")
    cold = ColdStore(tmp_path / "cold.db")
    memory = SessionMemory(store, cold, None)
    yield memory
    cold.close()
    store.close()
