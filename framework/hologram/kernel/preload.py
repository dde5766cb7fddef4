"""`hologram up`'s start-up loads — the Chinese segmenter and the embedding model — begun first, out of the way.

Why here and in this order. Memory loads both once per kernel (~0.6 s of CPU for the ONNX model on the
development VM, and importing onnxruntime alone holds the GIL for its whole dlopen). Started in a thread
after the kernel was up (as they were), they ran while the plugins launched: on 2 cores they took the CPU the
plugin processes needed and the GIL the event loop needed, so a fast chain of plugins finished after a slow
one (launch no longer readiness-driven) and the first turn waited for the loads to get out of the way.

So `start` runs them in one thread from the first line of `hologram up`, before the kernel's own imports
(and the LLM client's first-request imports, which the first answer needs either way: hologram/llm/transport.py):

1. the GIL-bound part (importing numpy, the segmenter's tables) overlaps the kernel's imports — there is no
   event loop yet to starve, and file reads overlap;
2. then the thread lowers its own CPU priority (Linux: ``setpriority`` on its thread id, nice +10) and
   loads the model (``[memory] embedder``, which the kernel passes on with `prefer` before the loads are
   released; onnxruntime is imported only when that is the onnx build): plugin processes and the event loop
   get the CPU first, the model takes what is left.

`SessionMemory.open(..., embedder_loader=loaded_embedder)` then takes the model from here instead of
loading a second one (one embedding session per kernel). Processes that never call `start` (tests, tools)
load as before.

Held until the first answer (`start(hold=True)`, what `up` does). The kernel process is GIL-bound from its
first line to its first answer (docs/performance.md), so every GIL-held step of these loads — the segmenter's
tables, onnxruntime's dlopen, the model's Python setup — lengthened that answer, which needs neither: the
first turn scores by BM25 until the model is there, and Chinese text loads the segmenter on demand
(`tokenize.hold_warm_up`). So the thread imports the memory stack beside the kernel's imports (the kernel
needs it too) and then waits for `release`: after the first turn, or once the launch is over if no turn came
first (`up`'s heap settling), whichever is earlier.
"""

from __future__ import annotations

import importlib
import logging
import os
import threading
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hologram.memory.embed.embedder import Embedder

log = logging.getLogger("hologram.kernel")

BACKGROUND_NICE = 10  # added to the loader thread's nice value once only GIL-free work is left
_done = threading.Event()
_released = threading.Event()  # set: the loads may run (at once unless `start(hold=True)`)
_thread: threading.Thread | None = None
_result: dict[str, Any] = {}
_first: list[str | None] = [None]  # the embedder build to try first (`prefer`)
_tls: list[bool] = [False]  # a provider is https: build the verifying TLS context once released (`transport`)


def start(*, hold: bool = False) -> None:
    """Begin the loads in a daemon thread (idempotent; returns at once). `hold`: import the memory stack, then
    wait for `release` before loading anything (module docstring)."""
    global _thread
    if _thread is None:
        if not hold:
            _released.set()
        _thread = threading.Thread(target=_run, name="hologram-preload", daemon=True)
        _thread.start()


def started() -> bool:
    return _thread is not None


def prefer(first: str | None) -> None:
    """Try embedder build `first` (``[memory] embedder``) before the others, for loads not begun yet:
    `hologram up` holds them until its first answer, and the kernel reads its settings long before."""
    _first[0] = first


def transport(*, tls: bool) -> None:
    """Whether a provider is ``https://`` (the kernel knows from its settings): then, once released, the
    thread builds the LLM client's verifying TLS context before the memory loads, off the event loop
    (hologram/llm/transport.py `warm`)."""
    _tls[0] = tls


def release() -> None:
    """Let held loads run (idempotent; a no-op when nothing is held): the segmenter's warm-up and the model."""
    if _thread is None or _released.is_set():
        return
    from hologram.memory.text import tokenizer as tokenize  # imported by then: memory is attached before any turn

    tokenize.release_warm_up()
    _released.set()


def released() -> bool:
    return _released.is_set()


def settle(timeout: float = 60.0) -> None:
    """Wait for the loads to finish before the interpreter exits. `hologram up` can exit within a second (bad
    settings, a stale lock) while the thread is still building the ONNX session in C++: tearing the process
    down under it aborted with "terminate called without an active exception" (exit -6) instead of the
    one-line error and exit 1. Loads still held never began: nothing to wait for."""
    if _thread is not None and _thread.is_alive() and _released.is_set():
        _done.wait(timeout)


def _run() -> None:
    began = time.monotonic()
    try:
        from hologram.llm import transport
        from hologram.memory.text import tokenizer as tokenize

        transport.warm(tls=False)  # the first request's imports: the first answer needs them, held or not
        _released.wait()
        began = time.monotonic()
        if _tls[0]:
            transport.warm(tls=True)  # certifi's CA bundle, 40-150 ms of CPU, not on the loop
        _first_turn_params()
        tokenize.warm_up()
        tokenize.wait_if_loading(None)
        from hologram.memory.embed.embedder import OnnxUSEEmbedder, load_embedder, load_or_next, preference

        prefer = preference(_first[0])
        embedder = load_embedder(prefer)
        if isinstance(embedder, OnnxUSEEmbedder):
            importlib.import_module("onnxruntime")  # the dlopen holds the GIL: before the thread is niced
        _lower_priority()
        _result["embedder"] = load_or_next(embedder, prefer)
    except Exception as exc:  # a broken model must not take the kernel down: memory scores by BM25 only
        _result["error"] = exc
    finally:
        _result["seconds"] = time.monotonic() - began
        _done.set()


#: Modules a first answer imports on the event loop unless imported here: memory's corrections import the
#: rules' extractor at the first turn (its ~100 regular expressions: ~30 ms of CPU, ~200 ms under cProfile, at
#: load ~10; `first_turn.py --trace`). Imported after the release, before "ready" (issue 39 item 9).
FIRST_TURN_IMPORTS = ("hologram.memory.graph.extract",)


def _first_turn_params() -> None:
    """Build the validators of the params a first answer reads (``initialize``, ``turn/start``, and through a
    channel plugin ``turn/watch`` — the web page's stream — and ``turn/unwatch``, which the http plugin sends when
    its turn ends: ~1.4 ms of the kernel's loop under cProfile in the first /v1 turn): the turn API's models defer
    them to their first request (hologram/api/params.py), ~3 ms of the first turn's CPU on the loop; here, before
    "ready", in this thread (issue 39 item 9). And import `FIRST_TURN_IMPORTS`."""
    from hologram.api.params import InitializeParams, StartParams, UnwatchParams, WatchParams

    for model in (InitializeParams, StartParams, WatchParams, UnwatchParams):
        model.model_rebuild()
    for name in FIRST_TURN_IMPORTS:
        importlib.import_module(name)


def _lower_priority() -> None:
    """Nice this thread only (Linux applies ``setpriority(PRIO_PROCESS, tid)`` to the one thread)."""
    if not hasattr(os, "setpriority") or not hasattr(threading, "get_native_id"):
        return
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + BACKGROUND_NICE))
    except OSError:  # not permitted or not supported: the load just competes as before
        pass


def loaded_embedder() -> Embedder | None:
    """The embedder `start` loaded (blocks until it finished); raises what loading it raised."""
    _done.wait()
    error = _result.get("error")
    if error is not None:
        raise error
    log.info("start-up loads done in %.2f s (segmenter, embedding model)", _result.get("seconds", 0.0))
    embedder: Embedder | None = _result.get("embedder")
    return embedder
