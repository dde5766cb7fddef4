"""hologram/base/_mapped.py: the embedding model's mapped weights give their resident pages back, and a mapping
holding a private copy of a page is never released.

Mutation-checked: with ``madvise`` skipped in MappedPages.release the weights stay resident (first test fails);
with the ``Anonymous: 0`` condition dropped from clean_ranges the written mapping is listed (second test fails);
with release_soon's call removed from embed/embedder.py the third test fails.
"""

from __future__ import annotations

import mmap
import threading
from pathlib import Path

import numpy as np
import pytest

from hologram.base._mapped import MappedPages, clean_ranges
from hologram.memory.embed.embedder import OnnxUSEEmbedder
from hologram.memory.text.segment import default_cache_dir

TEXTS = [f"sentence {i} about the budget, 会议 and {w}" for i, w in enumerate(("alpha beta lisbon 预算 " * 8).split())]


def resident_kb(path: Path) -> int:
    """Rss of this process's mappings of `path` (kB, from /proc/self/smaps)."""
    target, total, current = str(path.resolve()), 0, False
    with open("/proc/self/smaps", encoding="utf-8") as f:
        for line in f:
            head = line.split()
            if head and "-" in head[0] and not head[0].endswith(":"):
                current = line.rstrip("\n").endswith(target)
            elif current and line.startswith("Rss:"):
                total += int(head[1])
    return total


@pytest.fixture(scope="module")
def embedder(tmp_path_factory: pytest.TempPathFactory) -> OnnxUSEEmbedder:
    if not OnnxUSEEmbedder.available():
        pytest.skip("the USE ONNX model is not installed")
    return OnnxUSEEmbedder(cache_dir=default_cache_dir())


def _weights(embedder: OnnxUSEEmbedder) -> MappedPages:
    model = embedder._model.get()
    assert model.weights is not None, "the mapped-weights build is the default"
    return model.weights


def test_released_weights_leave_nothing_resident_and_the_vectors_unchanged(embedder: OnnxUSEEmbedder) -> None:
    weights = _weights(embedder)
    weights.interval_s = 3600.0  # no background release during this test
    weights._last = float("inf")
    for thread in threading.enumerate():  # one an earlier run started must not drop pages mid-test
        if thread.name == "hologram-release-weights":
            thread.join()
    before = embedder.embed(TEXTS)
    again = embedder.embed(TEXTS)
    path = weights.path
    assert resident_kb(path) > 0, "a run leaves the rows it read resident (what release is for)"
    assert weights.release(force=True) > 0
    assert resident_kb(path) == 0
    np.testing.assert_array_equal(before, again)
    np.testing.assert_array_equal(before, embedder.embed(TEXTS))  # read back from the page cache, same bytes


def test_a_mapping_with_a_private_copy_is_never_released(tmp_path: Path) -> None:
    path = tmp_path / "w.bin"
    path.write_bytes(b"x" * (4 * mmap.PAGESIZE))
    with path.open("r+b") as f:
        view = mmap.mmap(f.fileno(), 0, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    try:
        assert view[0] == ord("x")  # read: the file's own page, resident
        assert len(clean_ranges(path)) == 1
        view[mmap.PAGESIZE] = ord("y")  # written: a private copy the file does not have
        assert clean_ranges(path) == []
        assert MappedPages(path).release(force=True) == 0
        assert view[mmap.PAGESIZE] == ord("y"), "the change is still there"
    finally:
        view.close()


def test_a_run_of_the_model_schedules_the_release(embedder: OnnxUSEEmbedder) -> None:
    weights = _weights(embedder)
    weights.interval_s = 0.0
    weights._last = float("-inf")
    embedder.embed(TEXTS[:4])
    assert weights._last > float("-inf"), "the run started a release (in its own thread)"
