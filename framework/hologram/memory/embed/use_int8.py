"""The multilingual USE v3 int8 graph, run in numpy: the same network over the same int8 weights as
onnxruntime runs it, the same vectors to the last bit, without onnxruntime in the process.

Why: onnxruntime was in the kernel for this one model, and cost it ~21 MB of mapped library and its own
heap (op-kernel registry, the parsed graph), plus the pages of the 65 MB token table that every new word
left resident (docs/performance.md). Here the network is ~150 lines of numpy calls over BLAS.

The network (TensorFlow's USE, converted by tf2onnx, then quantised; hologram.memory.embed.onnx_weights holds its
rewrite, whose initializers this reads): token ids (hologram.memory.embed.use_tokenizer) → int8 embedding rows
(token t in shard t % 17, row t // 17, each shard its own scale and zero point) → per n-gram order 2, 3, 5:
a dense projection to 256, LayerNorm, two residual convolutions over windows of n tokens (ReLU) → the raw
embedding and the three orders concatenated (1280), LayerNorm, a dense layer to 512 → per sentence the sum
over its tokens / sqrt(token count) (the DAN's ``combine_word_embeddings``) → four residual hidden layers,
tanh, twice l2-normalised. Every dense layer quantises its input dynamically, over the whole batch, so a
sentence's vector depends (slightly) on its batch mates — exactly as in onnxruntime, given the same batch.
hologram.memory.embed.ort_math holds the arithmetic and why it must be exact.

Embedding rows are read with ``os.pread`` per distinct token of a batch, from the rewrite's side file
(``weights.bin``): nothing of the 65 MB table is mapped, so nothing of it counts in the process's memory
and nothing grows with the vocabulary seen; the page cache (shared, reclaimable) serves repeated reads.
``rows="mmap"`` maps it instead (hologram/base/_mapped.py releases what a run touched), for comparison
(``tools/bench/embed.py --rows``). The dense weights (3.4 MB int8) stay resident as float32 (13.6 MB), the
form BLAS multiplies.

Thread safety: a forward pass allocates all it writes and only reads the model; ``os.pread`` is positional.
Any number of threads may embed at once (BLAS releases the GIL).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from hologram.base._mapped import MappedPages
from hologram.memory.embed.onnx_weights import MODEL_NAME, WEIGHTS_NAME, Initializer, initializers, operators
from hologram.memory.embed.ort_math import (
    dynamic_quantize,
    exact_in_float32,
    layer_norm,
    ones_gemm_sums,
    row_sums,
    tanh,
)

__all__ = ["DIMENSION", "ModelMismatch", "UseInt8Model"]

DIMENSION = 512
f32 = np.float32
_SHARDS, _SHARD_ROWS, _EMBED = 17, 7530, 512
_CNN = 256
_ORDERS = ((2, 0), (3, 1), (5, 2))
"""(n-gram order, tokens of left context) of the three convolution branches: windows t-left .. t-left+n-1."""
_MAX_LEFT, _MAX_RIGHT = 2, 2
_P = "StatefulPartitionedCall/EncoderDNN/"
_C = _P + "CNN_layers/"
_R = _P + "DNN/ResidualHidden_"
_EPSILON = "StatefulPartitionedCall/l2_normalize_1/Maximum/y:0"
"""1e-12: the graph's LayerNorm epsilon and its l2-normalisation floor are this one initializer."""
_NUMPY_TYPES: dict[int, type[np.generic]] = {1: np.float32, 2: np.uint8, 3: np.int8, 6: np.int32, 7: np.int64}


OPERATORS: dict[str, int] = {
    "Add": 59, "And": 20, "Cast": 130, "Compress": 36, "Concat": 51, "ConstantOfShape": 4, "CumSum": 1,
    "DequantizeLinear": 17, "Div": 3, "DynamicQuantizeLinear": 12, "Equal": 36, "Expand": 9, "Gather": 21,
    "Less": 2, "MatMulInteger": 16, "Max": 22, "Mod": 2, "Mul": 82, "Not": 15, "Range": 2, "Reciprocal": 6,
    "ReduceMax": 3, "ReduceMean": 8, "ReduceSum": 4, "Relu": 9, "Reshape": 18, "ScatterElements": 1,
    "ScatterND": 2, "Shape": 14, "Size": 1, "Slice": 52, "Split": 1, "Sqrt": 7, "Squeeze": 46, "Sub": 10,
    "Tanh": 1, "TopK": 1, "Unique": 2, "Unsqueeze": 32, "Where": 20,
}  # fmt: skip
"""The operators of the one graph this module runs (the rewrite of USE v3 int8, 778 nodes), by count. This
is no general ONNX runtime: it computes that network, so a graph with any other operators — or the same ones
in other numbers — is refused (:class:`ModelMismatch`) and runs in onnxruntime instead."""


def _check_operators(model: bytes) -> None:
    found = operators(model)
    if found != OPERATORS:
        extra = sorted((found - Counter(OPERATORS)).items())
        missing = sorted((Counter(OPERATORS) - found).items())
        shown = ", ".join(f"{op} x{n}" for op, n in extra) or "none"
        raise ModelMismatch(
            f"operators this build does not run: {shown}; "
            f"missing: {', '.join(f'{op} x{n}' for op, n in missing) or 'none'}"
        )


class ModelMismatch(ValueError):
    """The model file parses but is not the graph this runs (a tensor missing or of another shape or type):
    building its rewrite again would not help, another build (onnxruntime) might."""


PRODUCT_ROWS = 256
"""Token rows one BLAS product takes at most (:meth:`_Dense.__call__`): the depth of OpenBLAS's work buffer
follows it, not the batch."""


@dataclass(frozen=True)
class _Dense:
    """A quantised dense layer (or several sharing one input, side by side): int8 weights as float32,
    ``w_scale`` per output column, bias or zeros."""

    weights: np.ndarray
    w_scale: np.ndarray
    bias: np.ndarray | None

    def __call__(self, q: np.ndarray, a_scale: np.float32) -> np.ndarray:
        """``MatMulIntegerToFloat``: the exact integer product, cast to float32, times ``a_scale * w_scale``
        (one float32 product per layer, as onnxruntime forms its multiplier), plus the bias.

        The product goes to BLAS :data:`PRODUCT_ROWS` token rows at a time: OpenBLAS packs the token rows of
        one call into a work buffer of its own (32 MiB mapped per calling thread, kept for the process's life),
        and the pages it touches stay resident as deep as the largest call so far. A batch of 64 long passages
        is thousands of rows; unchunked, a kernel's buffers grew ~2.8 MB deeper in its first long turns than
        its warm-up had made them, and never gave it back (issue 41). In chunks every call packs at most the
        same few hundred rows, whatever the batch. Each output is still one integer product over the same
        inputs, exact in float32 (:func:`exact_in_float32`), so the vectors are the same to the last bit."""
        rows = len(q)
        if rows <= PRODUCT_ROWS:
            out: np.ndarray = q @ self.weights
        else:
            out = np.empty((rows, self.weights.shape[1]), dtype=f32)
            for lo in range(0, rows, PRODUCT_ROWS):
                np.matmul(q[lo : lo + PRODUCT_ROWS], self.weights, out=out[lo : lo + PRODUCT_ROWS])
        out *= a_scale * self.w_scale
        if self.bias is not None:
            out += self.bias
        return out


class _Tensors:
    """The rewrite's initializers by name, as numpy arrays (the small ones, read once at load)."""

    def __init__(self, table: dict[str, Initializer]) -> None:
        self._table = table

    def get(self, name: str, shape: tuple[int, ...] | None = None) -> np.ndarray:
        init = self._table.get(name)
        if init is None or init.raw is None:
            raise ModelMismatch(f"the USE model has no inline initializer {name!r}")
        kind = _NUMPY_TYPES.get(init.data_type)
        if kind is None:
            raise ModelMismatch(f"initializer {name!r} has unsupported type {init.data_type}")
        array = np.frombuffer(init.raw, dtype=kind).reshape(init.dims)
        if shape is not None and array.shape != shape:
            raise ModelMismatch(f"initializer {name!r} has shape {array.shape}, expected {shape}")
        return array

    def scalar(self, name: str) -> np.ndarray:
        return self.get(name).reshape(())

    def dense(self, kernels: Sequence[str], bias: Sequence[str] | None = None) -> _Dense:
        """Layers reading one input, side by side: their weights concatenated by column, each column its
        layer's weight scale. Refuses weights a float32 product could not sum exactly."""
        blocks, scales = [], []
        for name in kernels:
            w = self.get(name + "_quantized")
            if int(self.scalar(name + "_zero_point")) != 0:
                raise ModelMismatch(f"{name}: nonzero weight zero point")
            if not exact_in_float32(w):
                raise ModelMismatch(f"{name}: weights too large for an exact float32 product")
            blocks.append(w.astype(f32))
            scales.append(np.full(w.shape[1], self.scalar(name + "_scale"), dtype=f32))
        weights = np.ascontiguousarray(np.concatenate(blocks, axis=1))
        b = None if bias is None else np.concatenate([self.get(n).reshape(-1) for n in bias]).astype(f32)
        return _Dense(weights, np.concatenate(scales), b)

    def external(self, name: str) -> tuple[str, int, int]:
        init = self._table.get(name)
        if init is None or init.external is None:
            raise ModelMismatch(f"the USE model has no external initializer {name!r}")
        return init.external


class _Rows:
    """The int8 token-embedding table in the side file: rows by token id, dequantised."""

    def __init__(self, path: Path, offsets: np.ndarray, scale: np.ndarray, zero: np.ndarray, mode: str) -> None:
        self.path = path
        self._offsets = offsets  # per shard: byte offset of row 0 in the file
        self._scale = scale
        self._zero = zero
        self._fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        size = os.fstat(self._fd).st_size
        if int(offsets.max()) + _SHARD_ROWS * _EMBED > size:
            os.close(self._fd)
            raise ValueError(f"{path}: {size} bytes, too short for the embedding table")
        self._mapped: np.ndarray | None = None
        self._pages: MappedPages | None = None
        if mode == "mmap":
            self._mapped = np.memmap(path, dtype=np.uint8, mode="r")
            self._pages = MappedPages(path)

    def close(self) -> None:
        os.close(self._fd)

    def __call__(self, tokens: np.ndarray) -> np.ndarray:
        """Dequantised rows of `tokens` (distinct ids), float32 (len, 512): ``(q - zero) * scale``."""
        shard = tokens % _SHARDS
        starts = self._offsets[shard] + (tokens // _SHARDS) * _EMBED
        if self._mapped is not None:
            q = self._mapped[starts[:, None] + np.arange(_EMBED)]
            assert self._pages is not None
            self._pages.release_soon()
        else:
            fd, n = self._fd, _EMBED
            q = np.frombuffer(b"".join([os.pread(fd, n, int(s)) for s in starts]), dtype=np.uint8)
            q = q.reshape(len(tokens), _EMBED)
        out: np.ndarray = (q.astype(f32) - self._zero[shard, None]) * self._scale[shard, None]
        return out


class UseInt8Model:
    """The network with its weights, ready to run: :meth:`open` a rewrite's directory, :meth:`run` a batch."""

    def __init__(self, tensors: _Tensors, weights_path: Path, rows: Literal["pread", "mmap"] = "pread") -> None:
        t = tensors
        offsets, scale, zero = [], [], []
        for k in range(_SHARDS):
            shard = f"Func/StatefulPartitionedCall/input/_{k + 1}:0"
            location, offset, length = t.external(shard + "_quantized")
            if location != WEIGHTS_NAME or length != _SHARD_ROWS * _EMBED:
                raise ModelMismatch(f"{shard}: unexpected external data {location!r} of {length} bytes")
            offsets.append(offset)
            scale.append(t.scalar(shard + "_scale"))
            zero.append(t.scalar(shard + "_zero_point"))
        self.rows = _Rows(
            weights_path,
            np.array(offsets, dtype=np.int64),
            np.array(scale, dtype=f32),
            np.array(zero, dtype=np.uint8).astype(f32),
            rows,
        )
        self._eps = f32(t.scalar(_EPSILON))
        orders = [f"{_C}ngram_order_{n}/" for n, _ in _ORDERS]
        self._projection = t.dense(
            [o + "input_size_projection/dense/kernel:0" for o in orders],
            [o + "input_size_projection/dense/bias:0" for o in orders],
        )
        self._order_gamma = np.stack([t.get(o + "LayerNorm/gamma:0", (_CNN,)) for o in orders])
        self._order_beta = np.stack([t.get(o + "LayerNorm/beta:0", (_CNN,)) for o in orders])
        self._convs = [
            [
                t.dense([f"{o}Ngram-{n}-Conv{s}/weights:0"], [f"{o}Ngram-{n}-Conv{s}/bias:0"])
                for s in ("", "_1")  # the first, then the second residual convolution
            ]
            for o, (n, _) in zip(orders, _ORDERS, strict=True)
        ]
        self._gamma = t.get(_C + "LayerNorm/gamma:0", (_EMBED + 3 * _CNN,))
        self._beta = t.get(_C + "LayerNorm/beta:0", (_EMBED + 3 * _CNN,))
        self._dense = t.dense([_C + "dense/kernel:0"], [_C + "dense/bias:0"])
        self._hidden0 = t.dense([_R + "0/dense/kernel:0", _R + "1/AdjustDepth/projection/kernel:0"])
        self._hidden1 = t.dense([_R + "1/dense/kernel:0"])
        self._hidden2 = t.dense([_R + "2/dense/kernel:0", _R + "3/AdjustDepth/projection/kernel:0"])
        self._hidden3 = t.dense([_R + "3/dense/kernel:0"])

    @classmethod
    def open(cls, directory: Path, rows: Literal["pread", "mmap"] = "pread") -> UseInt8Model:
        """The model in a rewrite's directory (hologram.memory.embed.onnx_weights.external_weights_model). Raises
        :class:`ModelMismatch` when the model is not the USE graph this runs, OSError or ValueError when its
        files are missing or damaged."""
        path = directory / MODEL_NAME
        try:
            graph = path.read_bytes()
            _check_operators(graph)
            model = cls(_Tensors(initializers(graph)), directory / WEIGHTS_NAME, rows)
            try:  # tensors of unexpected sizes show here rather than in the first real run
                model.run(np.array([1, 2], dtype=np.int32), np.array([0, 2], dtype=np.int64))
            except (ValueError, IndexError) as exc:
                model.close()
                raise ModelMismatch(f"a trial run failed ({exc})") from exc
            return model
        except ModelMismatch as exc:
            raise ModelMismatch(
                f"{path}: {exc} — not the USE v3 int8 graph this build runs; "
                '[memory] embedder = "onnx" runs any graph with onnxruntime'
            ) from exc

    def close(self) -> None:
        self.rows.close()

    def run(self, tokens: np.ndarray, splits: np.ndarray) -> np.ndarray:
        """The graph's output for one batch: `tokens` (every sentence's ids concatenated, int32) and
        `splits` (row splits, int64, sentences + 1) as the tokenizer gives them; float32 (sentences, 512)."""
        tokens = np.asarray(tokens, dtype=np.int64)
        splits = np.asarray(splits, dtype=np.int64)
        lengths = np.diff(splits)
        if len(lengths) == 0 or int(lengths.min()) < 1 or int(splits[-1]) != len(tokens) or int(splits[0]) != 0:
            raise ValueError("token splits must start at 0, rise by at least 1 and end at the token count")
        if int(tokens.min()) < 0 or int(tokens.max()) >= _SHARDS * _SHARD_ROWS:
            raise ValueError(f"token ids must lie in [0, {_SHARDS * _SHARD_ROWS})")
        distinct, inverse = np.unique(tokens, return_inverse=True)
        embedded = self.rows(distinct)[inverse.reshape(-1)]
        features = self._convolutions(embedded, splits, lengths)
        layer_norm(features, self._gamma, self._beta, self._eps)
        dense = self._dense(*dynamic_quantize(features, overwrite=True))
        del features
        pooled = self._pool(dense, splits, lengths)
        return self._hidden(pooled)

    def _convolutions(self, embedded: np.ndarray, splits: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """(tokens, 1280): the raw embedding, then each n-gram branch's output."""
        count = len(embedded)
        out = np.empty((count, _EMBED + 3 * _CNN), dtype=f32)
        out[:, :_EMBED] = embedded
        projected = self._projection(*dynamic_quantize(embedded))
        # the three LayerNorms at once: each (token, order) row of 256 is normalised on its own
        layer_norm(projected.reshape(count, 3, _CNN), self._order_gamma, self._order_beta, self._eps)
        branches = projected
        window = _window_index(splits, lengths)
        scratch = np.empty((count + 1, _CNN), dtype=f32)
        scratch[count] = 0.0  # the row a slot outside its token's sentence reads
        for i, ((n, left), convs) in enumerate(zip(_ORDERS, self._convs, strict=True)):
            x = branches[:, i * _CNN : (i + 1) * _CNN]
            cols = window[:, _MAX_LEFT - left : _MAX_LEFT - left + n]
            for conv in convs:
                scratch[:count] = x
                h = conv(*dynamic_quantize(scratch[cols].reshape(count, n * _CNN), overwrite=True))
                np.maximum(h, f32(0), out=h)
                h += x
                x = h
            out[:, _EMBED + i * _CNN : _EMBED + (i + 1) * _CNN] = x
        return out

    def _pool(self, dense: np.ndarray, splits: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """The DAN's ``combine_word_embeddings``: each sentence's token rows summed, over sqrt(its count).

        tf2onnx's segment sum lays a sentence of c tokens starting at s into a padded row at positions
        (i mod c) for token i, so the sum runs over the sentence rotated by s mod c — and the order of a
        float sum is part of its result."""
        sentences, width = len(lengths), int(lengths.max())
        pos = np.arange(width)
        starts, counts = splits[:-1, None], lengths[:, None]
        index = np.where(pos < counts, starts + (pos - starts) % counts, len(dense))
        rows = np.concatenate([dense, np.zeros((1, dense.shape[1]), dtype=f32)])
        sums = ones_gemm_sums(rows, index)
        out: np.ndarray = sums / np.sqrt(lengths.astype(f32))[:, None]
        assert out.shape == (sentences, _EMBED)
        return out

    def _hidden(self, x: np.ndarray) -> np.ndarray:
        """The residual hidden layers, tanh and the two l2-normalisations."""
        width = self._hidden0.weights.shape[1] // 2
        both = self._hidden0(*dynamic_quantize(x))
        h0 = np.maximum(both[:, :width], f32(0))
        h1 = self._hidden1(*dynamic_quantize(h0))
        h1 += both[:, width:]
        np.maximum(h1, f32(0), out=h1)
        both = self._hidden2(*dynamic_quantize(h1))
        h2 = np.maximum(both[:, :_EMBED], f32(0))
        out = self._hidden3(*dynamic_quantize(h2))
        out += both[:, _EMBED:]
        out = tanh(out)
        for _ in range(2):
            norm = np.maximum(row_sums(out * out), self._eps)[:, None]
            out = out * (f32(1) / np.sqrt(norm))
        return out


def _window_index(splits: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """(tokens, 5): for token t the positions t-2 .. t+2, or the token count (a zero row) where that
    position is outside t's sentence — the graph's masks, which zero a window slot across a boundary."""
    count = int(splits[-1])
    pos = np.arange(count, dtype=np.int64)[:, None]
    window = pos + np.arange(-_MAX_LEFT, _MAX_RIGHT + 1, dtype=np.int64)
    first = np.repeat(splits[:-1], lengths)[:, None]
    inside = (window >= first) & (window < first + np.repeat(lengths, lengths)[:, None])
    out: np.ndarray = np.where(inside, window, count)
    return out
