"""onnxruntime's CPU arithmetic for the USE graph's operators, reproduced in numpy to the last bit.

Why exact and not close: the graph quantises its activations dynamically (``DynamicQuantizeLinear``: one
scale per tensor, from its min and max, each value rounded to a uint8 step). A value one float32 ulp off
can land on the other side of a rounding step, and one step in a quantised input moves a dense layer's
output by ``scale_a * scale_w * w`` — orders of magnitude above float32 rounding. So every float operation
before a quantisation must round exactly as onnxruntime's does, and that depends on *how* it sums, not
only on what: the rules below were read from onnxruntime 1.2x/1.3x (MLAS and its Eigen reductions) and are
checked bit for bit against onnxruntime itself in ``tests/memory/test_use_int8.py``.

* Row sums (``ReduceMean``/``ReduceSum`` over the last axis: LayerNorm moments, l2-normalisation): Eigen's
  vectorised ``sum()`` with 4-lane packets — two packet accumulators over alternate packets, added, then
  the 4 lanes as ``(l0 + l2) + (l1 + l3)`` (:func:`row_sums`).
* ``ReduceSum`` over the middle axis of ``[sentences, tokens, 512]`` (the DAN's per-sentence sum) is a
  1×K·K×N SGEMM by a vector of ones, MLAS's M=1 kernel: K taken 4 rows at a time, each group summed left
  to right and added to the running total; a batch of one sentence is a plain running sum instead
  (:func:`ones_gemm_sums`).
* ``DynamicQuantizeLinear`` (and the same step inside ``DynamicQuantizeMatMul``): range widened to include
  0, ``scale = (max - min) / 255`` and the zero point rounded half to even, all in float32; values
  ``rint(x / scale)`` (a true division, half to even) clipped to uint8 (:func:`dynamic_quantize`).
* ``MatMulInteger`` / ``MatMulIntegerToFloat``: integer products summed exactly — here float32 BLAS, exact
  because every partial sum is an integer below 2**24 (:func:`exact_in_float32` proves it per weight
  matrix at load) — cast to float32, times ``a_scale * w_scale``, plus the bias: separate roundings.
* ``Tanh``: MLAS's FMA3 kernel, Eigen's rational polynomial on [-9, 9] with fused multiply-adds
  (:func:`tanh`, :func:`fma`).
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "dynamic_quantize",
    "exact_in_float32",
    "fma",
    "layer_norm",
    "ones_gemm_sums",
    "row_means",
    "row_sums",
    "tanh",
]

f32 = np.float32
_PACKET = 4  # Eigen's float packet in onnxruntime's builds (SSE on x86-64, NEON on arm64)
_EXACT_FLOAT32 = 1 << 24  # integers up to this are exact in float32


def row_sums(x: np.ndarray) -> np.ndarray:
    """Eigen's ``sum()`` of each row of `x` (float32, 2-D, row length a multiple of 8), as onnxruntime's
    ``ReduceSum``/``ReduceMean`` compute it over the last axis: each row is one contiguous run."""
    rows, width = x.shape
    if width % (2 * _PACKET):
        raise ValueError(f"row length {width} is not a multiple of {2 * _PACKET}")
    # packet pair k of every row, one after another: (pairs, rows, 8) — numpy adds along the outer axis
    # one slice at a time, in order: packet accumulator 0 in lanes 0-3, accumulator 1 in lanes 4-7
    pairs = np.ascontiguousarray(x.reshape(rows, width // (2 * _PACKET), 2 * _PACKET).transpose(1, 0, 2))
    acc = pairs.sum(axis=0, dtype=f32)
    lanes = acc[:, :_PACKET] + acc[:, _PACKET:]
    result: np.ndarray = (lanes[:, 0] + lanes[:, 2]) + (lanes[:, 1] + lanes[:, 3])
    return result


def row_means(x: np.ndarray) -> np.ndarray:
    """``ReduceMean`` over the last axis, keepdims: the row sum, then divided by the length (not multiplied)."""
    width = x.shape[-1]
    sums = row_sums(x.reshape(-1, width)) / f32(width)
    out: np.ndarray = sums.reshape(*x.shape[:-1], 1)
    return out


def layer_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, epsilon: np.float32) -> np.ndarray:
    """TensorFlow's LayerNorm as the graph spells it out, op by op: mean, squared difference, variance,
    ``1 / sqrt(var + eps)`` times gamma, then ``x * mul + (beta - mean * mul)``, over the last axis of `x`
    (C-contiguous float32), written over `x`. gamma and beta broadcast against it (several LayerNorms side
    by side: `x` (rows, k, width), they (k, width)). One scratch array of x's size; no other temporaries
    (each would be a fresh mapping to fault in: the kernel hands blocks over 128 kB back to the OS)."""
    mean = row_means(x)
    scratch = np.subtract(x, mean)
    np.multiply(scratch, scratch, out=scratch)
    variance = row_means(scratch)
    np.multiply(f32(1) / np.sqrt(variance + epsilon), gamma, out=scratch)  # mul
    np.multiply(x, scratch, out=x)
    np.multiply(mean, scratch, out=scratch)
    np.subtract(beta, scratch, out=scratch)
    np.add(x, scratch, out=x)
    return x


def dynamic_quantize(x: np.ndarray, *, overwrite: bool = False) -> tuple[np.ndarray, np.float32]:
    """``DynamicQuantizeLinear`` of the whole tensor `x`: (q - zero_point as float32 integers, scale),
    written over `x` when `overwrite`.

    The integers are what ``MatMulInteger`` multiplies (it subtracts the zero point itself); returning them
    shifted saves a pass."""
    lo = min(f32(x.min()), f32(0))
    hi = max(f32(x.max()), f32(0))
    scale = f32(1) if hi == lo else f32(f32(hi - lo) / f32(255))
    zero_point = f32(np.rint(min(max(f32(f32(0) - f32(lo / scale)), f32(0)), f32(255))))
    q = np.divide(x, scale, out=x if overwrite else None, dtype=f32)
    np.rint(q, out=q)
    np.clip(q, -zero_point, f32(255) - zero_point, out=q)
    return q, scale


def exact_in_float32(weights: np.ndarray) -> bool:
    """Whether a float32 product of any uint8-range input (q - zero point, |.| <= 255) with these integer
    `weights` (K, N) is exact: every partial sum of every output is an integer bounded by 255 times the
    column's sum of |w|, so below 2**24 is enough, whatever order BLAS adds in."""
    worst = int(np.abs(weights.astype(np.int64)).sum(axis=0).max(initial=0)) * 255
    return worst < _EXACT_FLOAT32


def ones_gemm_sums(rows: np.ndarray, index: np.ndarray) -> np.ndarray:
    """Per sentence, the sum of ``rows[index[s, k]]`` over k as onnxruntime's ``ReduceSum`` over the token
    axis adds it (module docstring). `index` is (sentences, padded length); a padding slot points at an
    all-zero row of `rows`."""
    sentences, length = index.shape
    if sentences == 1:  # reduced to a 2-D [tokens, 512] sum: the first row, then each next one added
        acc: np.ndarray = rows[index[0, 0]].copy()
        for k in range(1, length):
            acc += rows[index[0, k]]
        return acc[None, :]
    total = np.zeros((sentences, rows.shape[1]), dtype=f32)
    k = 0
    while k + 4 <= length:
        total = (((rows[index[:, k]] + rows[index[:, k + 1]]) + rows[index[:, k + 2]]) + rows[index[:, k + 3]]) + total
        k += 4
    if length - k >= 2:
        total = (rows[index[:, k]] + rows[index[:, k + 1]]) + total
        k += 2
    if length - k == 1:
        total = rows[index[:, k]] + total
    return total


def fma(a: np.ndarray | np.float32, b: np.ndarray | np.float32, c: np.ndarray | np.float32) -> np.ndarray:
    """float32 ``a * b + c`` rounded once, as a fused multiply-add: the product is exact in float64, the sum
    is rounded to odd there (the error term decides the last bit) so its rounding to float32 is the
    correct one, without the double-rounding trap."""
    p = np.asarray(a, dtype=np.float64) * np.asarray(b, dtype=np.float64)
    cc = np.asarray(c, dtype=np.float64)
    s = p + cc
    back = s - p
    error = (p - (s - back)) + (cc - back)  # TwoSum: s + error == p + c exactly
    bits = s.view(np.int64)
    inexact_even = (error != 0) & ((bits & 1) == 0)
    away = (error > 0) == (s > 0)  # the exact value is further from zero than s
    bits = np.where(inexact_even, bits + np.where(away, 1, -1), bits)
    out: np.ndarray = bits.view(np.float64).astype(f32)
    return out


# Eigen's tanh: x * P(x^2) / Q(x^2) on [-9, 9] (MLAS's MlasTanhConstants, its FMA3 kernel's evaluation order)
_TANH_RANGE = f32(9.0)
_TANH_ALPHA = tuple(
    f32(v)
    for v in (
        -2.76076847742355e-16,
        2.00018790482477e-13,
        -8.60467152213735e-11,
        5.12229709037114e-08,
        1.48572235717979e-05,
        6.37261928875436e-04,
        4.89352455891786e-03,
    )
)
_TANH_BETA = tuple(
    f32(v) for v in (1.19825839466702e-06, 1.18534705686654e-04, 2.26843463243900e-03, 4.89352518554385e-03)
)


def tanh(x: np.ndarray) -> np.ndarray:
    """onnxruntime's ``Tanh`` (MLAS, FMA3): not libm's, it differs from ``np.tanh`` in the last bit or two."""
    v = np.clip(x, -_TANH_RANGE, _TANH_RANGE).astype(f32)
    square = v * v
    p = fma(square, _TANH_ALPHA[0], _TANH_ALPHA[1])
    for alpha in _TANH_ALPHA[2:]:
        p = fma(p, square, alpha)
    p = p * v
    q = fma(square, _TANH_BETA[0], _TANH_BETA[1])
    for beta in _TANH_BETA[2:]:
        q = fma(q, square, beta)
    out: np.ndarray = p / q
    return out
