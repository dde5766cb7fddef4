"""`hologram up` loads the segmenter and the embedding model itself, first (hologram/kernel/preload.py): memory takes
that model instead of loading a second one, and the loader thread gives up CPU priority for the GIL-free part
so plugin processes and the event loop go first.

Mutation check (done): `SessionMemory.open` ignoring `embedder_loader` turns the first test red; `_lower_priority`
doing nothing turns the second red.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from hologram.kernel import preload as _preload
from hologram.memory import session_memory as sm
from hologram.memory.session_memory import SessionMemory
from hologram.sessions import SessionStore


class Marked:
    model_id = "marked"

    def embed(self, texts: list[str]) -> object:  # pragma: no cover - not called here
        raise AssertionError("not used")


def test_memory_takes_the_model_from_the_given_loader(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sm, "load_embedder", lambda *prefer: pytest.fail("memory loaded a second model"))
    store = SessionStore.in_data_dir(tmp_path)
    marked = Marked()
    memory = SessionMemory.open(tmp_path, store, embedder_loader=lambda: marked)  # type: ignore[arg-type,return-value]
    try:
        assert memory.embedder_ready.wait(30)
        assert memory.embedder is marked
    finally:
        memory.cold.close()
        if memory.vectors is not None:
            memory.vectors.close()
        store.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice is Linux's")
def test_the_loader_thread_lowers_only_its_own_priority() -> None:
    seen: dict[str, int] = {}

    def probe() -> None:
        tid = threading.get_native_id()
        seen["before"] = os.getpriority(os.PRIO_PROCESS, tid)
        _preload._lower_priority()
        seen["after"] = os.getpriority(os.PRIO_PROCESS, tid)

    main = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    thread = threading.Thread(target=probe)
    thread.start()
    thread.join()
    assert seen["after"] == min(19, seen["before"] + _preload.BACKGROUND_NICE)
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == main


def test_held_loads_wait_for_release_and_exit_does_not_wait_for_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """`up` holds the loads until its first answer; an `up` that exits before (bad settings, a stale lock)
    must not wait for loads that never began (`settle` is called on every exit)."""
    loaded = threading.Event()
    waited: list[float | None] = []

    class Done(threading.Event):
        def wait(self, timeout: float | None = None) -> bool:
            waited.append(timeout)
            return super().wait(timeout)

    for name, value in (("_thread", None), ("_result", {})):
        monkeypatch.setattr(_preload, name, value)
    monkeypatch.setattr(_preload, "_done", Done())
    monkeypatch.setattr(_preload, "_released", threading.Event())
    from hologram.memory.embed import embedder as embed
    from hologram.memory.text import tokenizer as tokenize

    monkeypatch.setattr(tokenize, "warm_up", lambda: None)
    monkeypatch.setattr(tokenize, "release_warm_up", lambda: None)

    def marked(*prefer: object) -> Marked:
        loaded.set()
        return Marked()

    monkeypatch.setattr(embed, "load_embedder", marked)
    _preload.start(hold=True)
    _preload.settle(timeout=30)
    assert waited == [], "settle waited for loads that never began"
    assert not loaded.is_set() and not _preload.released()
    _preload.release()
    assert isinstance(_preload.loaded_embedder(), Marked)
    assert loaded.is_set()


def test_held_loads_try_the_configured_build_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """``[memory] embedder`` reaches the held loads: the kernel passes it on (`prefer`) before releasing
    them. Mutation check (done): `_run` calling `load_embedder()` without the preference turns this red."""
    for name, value in (("_thread", None), ("_result", {}), ("_first", [None])):
        monkeypatch.setattr(_preload, name, value)
    monkeypatch.setattr(_preload, "_done", threading.Event())
    monkeypatch.setattr(_preload, "_released", threading.Event())
    from hologram.memory.embed import embedder as embed
    from hologram.memory.text import tokenizer as tokenize

    monkeypatch.setattr(tokenize, "warm_up", lambda: None)
    monkeypatch.setattr(tokenize, "release_warm_up", lambda: None)
    asked: list[tuple[str, ...]] = []

    def marked(prefer: tuple[str, ...] = embed.EMBEDDERS) -> Marked:
        asked.append(tuple(prefer))
        return Marked()

    monkeypatch.setattr(embed, "load_embedder", marked)
    _preload.start(hold=True)
    _preload.prefer("onnx")
    _preload.release()
    assert isinstance(_preload.loaded_embedder(), Marked)
    assert asked == [("onnx", "int8", "numpy")]


def test_memory_opened_without_the_preload_honours_the_setting(tmp_path: Path) -> None:
    """Processes that never start the preload (tests, tools) load the build `SessionMemory.open` is given."""
    from hologram.memory.embed.embedder import OnnxUSEEmbedder

    if not OnnxUSEEmbedder.available():
        pytest.skip("onnxruntime build not installed")
    store = SessionStore.in_data_dir(tmp_path)
    memory = SessionMemory.open(tmp_path, store, embedder="onnx")
    try:
        assert memory.embedder_ready.wait(120)
        assert memory.embedder is not None and memory.embedder.model_id == "use-multilingual-v3/onnx-int8"
    finally:
        memory.cold.close()
        if memory.vectors is not None:
            memory.vectors.close()
        store.close()


def test_the_first_turns_params_are_built_before_ready() -> None:
    """The turn API's models defer their validators to their first request (hologram/api/params.py); `hologram
    up`'s start-up thread builds the four a first answer reads (through a channel plugin too) once released (issue 39 item 9), in a fresh
    interpreter so that nothing else built them. Mutation check (done): `_first_turn_params` not called (red)."""
    probe = (
        "from hologram.kernel import preload\n"
        "from hologram.api import params\n"
        "assert not params.StartParams.__pydantic_complete__\n"
        "preload.start()\n"
        "preload.loaded_embedder()\n"
        "print(*(getattr(params, name).__pydantic_complete__ for name in"
        " ('InitializeParams', 'StartParams', 'WatchParams', 'UnwatchParams', 'ListParams')))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True", "True", "True", "False"]  # those four only: the others deferred


def test_the_first_turns_imports_are_done_before_ready() -> None:
    """What a first answer imported on the loop (`preload.FIRST_TURN_IMPORTS`: the rules' extractor memory's
    corrections use) is imported by the start-up thread once released, in a fresh interpreter. Mutation check
    (done): the import loop removed from `_first_turn_params` (red)."""
    probe = (
        "import sys\n"
        "from hologram.kernel import preload\n"
        "assert not any(name in sys.modules for name in preload.FIRST_TURN_IMPORTS)\n"
        "preload.start()\n"
        "preload.loaded_embedder()\n"
        "print(all(name in sys.modules for name in preload.FIRST_TURN_IMPORTS))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True"]
