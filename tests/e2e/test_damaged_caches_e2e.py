"""The derived caches checked at `hologram up` (issue 42 item 6), through real processes: a kernel fills
``vectors.db`` and ``scenes.db`` with real turns; a page of each is damaged where the stores' own open checks
(the header, the ``count(*)`` probes) do not look — so before this check the kernel read the damaged cache
silently until `hologram doctor` ran; then `hologram up` names each in one warning line (log and terminal),
keeps the damaged file as ``NAME.damaged-<time>`` (as `hologram doctor --repair` keeps one) and starts a new
one, and a turn then works and fills the new ``vectors.db`` again.

Mutation checked: `up` not starting the `CacheCheck` (its `wait` returning no warnings without checking) —
no warning, the damaged files stay in place and still fail SQLite's quick check after the turn.
"""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from hologram.memory.embed.vector_cache import VectorCache
from hologram.memory.scenes.store import SceneStore
from hologram.storage.caches import cache_problem
from mock_llm import MockLLM
from tests.kit.wait import wait_until

from .kernel import E2EKernel

pytestmark = pytest.mark.slow

OPENERS: dict[str, Callable[[Path], sqlite3.Connection]] = {
    "vectors.db": VectorCache._open,  # the stores' own opens: header check, schema, count(*) probes
    "scenes.db": SceneStore._connect,
}
INPUTS = [
    "My cat Tom sleeps on the red sofa every afternoon.",
    "The pottery class on Thursday was moved to the small studio.",
    "Remind me that the boiler needs a service before winter.",
]


def rows(path: Path, table: str) -> int:
    db = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True)
    try:
        return int(db.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
    finally:
        db.close()


def embedder_ready(kernel: E2EKernel) -> None:
    """Until the embedding model is loaded (a turn before indexes by BM25 alone and stores no vector)."""
    wait_until(lambda: kernel.status()["memory"], accept=lambda m: m["embedder_ready"] and m["embedder"],
               timeout=120, what="the embedding model loaded")  # fmt: skip


def damage_past_the_open_checks(path: Path, scratch: Path) -> int:
    """Overwrite the start of one page of `path` so that its store still opens it (header and probes pass)
    but SQLite's quick check fails; returns the page number. Tried on a copy, last page first."""
    data = path.read_bytes()
    size = int.from_bytes(data[16:18], "big")
    for page in range(len(data) // size - 1, 0, -1):
        trial = scratch / path.name
        trial.write_bytes(data[: page * size] + b"\xff" * 8 + data[page * size + 8 :])
        try:
            OPENERS[path.name](trial).close()
        except sqlite3.DatabaseError:
            continue  # the open would have seen it: not the case under test
        finally:
            for suffix in ("-wal", "-shm"):
                Path(f"{trial}{suffix}").unlink(missing_ok=True)
        if cache_problem(trial) is not None:
            path.write_bytes(trial.read_bytes())
            return page + 1
    raise AssertionError(f"no page of {path} could be damaged past its store's open checks")


def test_a_damaged_cache_is_rebuilt_at_up_and_a_turn_then_works(tmp_path: Path, mock: MockLLM) -> None:
    mock.reset()
    mock.script([], default={"reasoning_content": "ok", "content": "Noted."})
    kernel = E2EKernel(tmp_path / "k", [mock])
    vectors, scenes = kernel.data / "vectors.db", kernel.data / "scenes.db"
    kernel.start()
    try:
        embedder_ready(kernel)
        for text in INPUTS:
            assert kernel.ask(text, "--session", "home").returncode == 0
        wait_until(lambda: vectors.exists() and rows(vectors, "passage_vectors") >= len(INPUTS), timeout=120,
                   what="the turns' passage vectors in vectors.db", retry_on=(sqlite3.Error,))  # fmt: skip
    finally:
        kernel.stop()
    assert rows(scenes, "terms") > 0 and cache_problem(vectors) is None and cache_problem(scenes) is None
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    pages = {path.name: damage_past_the_open_checks(path, scratch) for path in (vectors, scenes)}

    for log in (kernel.data / "logs").iterdir():
        log.unlink()  # the second start's log alone
    kernel.start()
    try:
        embedder_ready(kernel)
        answer = kernel.ask("Where does Tom sleep?", "--session", "home")
        assert answer.returncode == 0 and "Noted." in answer.stdout, answer
        wait_until(lambda: rows(vectors, "passage_vectors") >= 1, timeout=120,
                   what="vectors.db filled again", retry_on=(sqlite3.Error,))  # fmt: skip
    finally:
        output = kernel.stop()
    [log] = (kernel.data / "logs").glob("hologram-*.log")
    text = log.read_text()
    for path in (vectors, scenes):
        warned = [line for line in text.splitlines() if f"{path} was damaged" in line]
        assert len(warned) == 1 and "quick check" in warned[0] and "a new one is started" in warned[0], (pages, warned)
        assert f"hologram: {path} was damaged" in output, output
        [kept] = path.parent.glob(f"{path.name}.damaged-*")
        assert cache_problem(kept) is not None  # the damaged file, as found
        assert cache_problem(path) is None  # the new one
    assert "Traceback" not in text, text
    shutil.rmtree(scratch)
