"""The int8 USE graph in numpy (hologram.memory.embed.use_int8) computes onnxruntime's vectors bit for bit — the
oracle is onnxruntime itself on this machine, fed the same token ids — batched and one text at a time, English
and Chinese; the kernel's embedder never imports onnxruntime; the embedding table is read, not mapped.

Mutation checks (done, each turns `test_vectors_equal_onnxruntime_bit_for_bit` red):
- Eigen's lane order in `ort_math.row_sums` changed to ``(l0 + l1) + (l2 + l3)``;
- the rotation of each sentence's tokens dropped from `UseInt8Model._pool` (a plain running sum);
- `ort_math.ones_gemm_sums` summing groups of 4 as ``total + group`` left to right instead of MLAS's order;
- `np.tanh` instead of `ort_math.tanh`; `fma` as a plain float32 multiply-add;
- `dynamic_quantize` rounding with ``np.floor(x + 0.5)`` instead of half to even.
(The zero point computed in float64 instead of float32 passes: it can differ — -lo/scale = 134.5 in float32,
134.500006 in float64 — but the zero point only sets the clipping bounds, which the extreme values, rounded
the same way, then sit on either way.)
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from hologram.memory.embed import embedder as emb
from hologram.memory.embed import use_int8
from hologram.memory.embed.embedder import Int8USEEmbedder, OnnxUSEEmbedder
from hologram.memory.embed.onnx_weights import WEIGHTS_NAME
from hologram.memory.embed.ort_math import dynamic_quantize, fma, row_sums
from hologram.memory.embed.use_int8 import ModelMismatch, UseInt8Model
from tests.memory.long_messages import many_topics, with_fact
from tests.memory.tricky_texts import TRICKY

ROOT = Path(__file__).resolve().parents[2]
needs_model = pytest.mark.skipif(not Int8USEEmbedder.available(), reason="USE int8 model not installed")
needs_ort = pytest.mark.skipif(not OnnxUSEEmbedder.available(), reason="onnxruntime (the oracle) not installed")


def corpus() -> list[str]:
    """English and Chinese, short and long, and the characters the tokenizer treats specially."""
    english = [
        "How do I reset my password?",
        "ok",
        "Caroline: I went to the LGBTQ support group yesterday and it was so powerful.",
        "Melanie: I painted a sunrise over the lake last summer, it's my favourite piece so far!",
        "Let's watch a movie on Friday night?",
        *(many_topics(i) for i in range(12)),
        *(with_fact(i) for i in range(12)),
    ]
    chinese = [
        line.split(":", 1)[-1].strip()
        for path in (ROOT / "tests" / "data" / "zh_corpus.txt", ROOT / "tools" / "bench" / "data" / "zh_dialogue.txt")
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    tricky = [*TRICKY, "如何重置我的密码 — how do I reset my password?"]
    return english + chinese + tricky


@pytest.fixture(scope="module")
def int8(tmp_path_factory: pytest.TempPathFactory) -> Int8USEEmbedder:
    e = Int8USEEmbedder(cache_dir=tmp_path_factory.mktemp("xdg") / "hologram")  # $XDG_CACHE_HOME/hologram
    e.load()
    return e


@pytest.fixture(scope="module")
def onnx(int8: Int8USEEmbedder) -> OnnxUSEEmbedder:
    assert int8.directory is not None
    return OnnxUSEEmbedder(threads=1, cache_dir=int8.directory.parent)  # the same rewrite


@needs_model
@needs_ort
def test_vectors_equal_onnxruntime_bit_for_bit(int8: Int8USEEmbedder, onnx: OnnxUSEEmbedder) -> None:
    """The whole corpus in the embedders' batches of 64, then each text alone: equal arrays, not close ones.
    The graph quantises each batch's activations with one scale, so a text's vector depends on its batch
    mates; both builds must show the same dependence (checked below: it is not zero)."""
    texts = corpus()
    assert len(texts) > 450
    batched = int8.embed(texts)
    assert np.array_equal(batched, onnx.embed(texts))
    single = np.stack([int8.embed([t])[0] for t in texts])
    assert np.array_equal(single, np.stack([onnx.embed([t])[0] for t in texts]))
    assert not np.array_equal(batched, single), "batch mates move vectors (int8 activations): the test sees it"
    assert int8.texts_embedded == 2 * len(texts)


@needs_model
@needs_ort
@pytest.mark.parametrize("rows", [7, use_int8.PRODUCT_ROWS])
def test_products_in_row_chunks_stay_bit_for_bit(
    int8: Int8USEEmbedder, onnx: OnnxUSEEmbedder, rows: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The dense layers hand BLAS at most `PRODUCT_ROWS` token rows a call (so OpenBLAS's work buffer stays as
    deep as one chunk, not the largest batch: issue 41); the chunks, the last one short, give onnxruntime's
    vectors to the last bit. Counted: the batch really went through more than one product a layer.
    Mutation check (done): the chunk loop starting at its second chunk (the first rows never written) turns it red."""
    monkeypatch.setattr(use_int8, "PRODUCT_ROWS", rows)
    tokenizer, model = int8._model.get()
    session = onnx._model.get().session
    texts = [many_topics(2)[: 9 * n] for n in range(1, 64)]
    tokens, splits = tokenizer.encode_batch(texts)
    assert len(tokens) > 2 * rows and len(tokens) % rows  # several chunks, the last one short
    chunked = 0
    matmul = np.matmul

    def counting(*args: object, **kwargs: object) -> object:
        nonlocal chunked
        chunked += "out" in kwargs
        return matmul(*args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(use_int8.np, "matmul", counting)
    got = model.run(tokens, splits)
    monkeypatch.setattr(use_int8.np, "matmul", matmul)
    expected = session.run(["outputs"], {"tokens": tokens, "token_splits": splits})[0]
    assert np.array_equal(got, expected)
    assert chunked >= 2 * -(-len(tokens) // rows)  # every chunk of at least two dense layers


@needs_model
@needs_ort
def test_one_batch_of_many_lengths_against_the_graph(int8: Int8USEEmbedder, onnx: OnnxUSEEmbedder) -> None:
    """One run of the model with sentences of 3 to ~130 tokens side by side (the padded per-sentence sums)."""
    tokenizer, model = int8._model.get()
    session = onnx._model.get().session
    texts = [many_topics(1)[: 7 * n] for n in range(1, 60)]
    tokens, splits = tokenizer.encode_batch(texts)
    expected = session.run(["outputs"], {"tokens": tokens, "token_splits": splits})[0]
    assert np.array_equal(model.run(tokens, splits), expected)


@needs_model
def test_threads_embedding_at_once_get_what_one_thread_gets(int8: Int8USEEmbedder) -> None:
    texts = corpus()[:130]
    expected = int8.embed(texts)
    results: list[np.ndarray] = []

    def work() -> None:
        results.append(int8.embed(texts))

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 3 and all(np.array_equal(r, expected) for r in results)


@needs_model
def test_the_table_can_be_mapped_instead(int8: Int8USEEmbedder) -> None:
    """``rows="mmap"`` maps the side file (what tools/bench/embed.py --rows compares) and computes the same."""
    assert int8.directory is not None
    mapped = Int8USEEmbedder(cache_dir=int8.directory.parent, rows="mmap")
    texts = corpus()[:70]
    assert np.array_equal(mapped.embed(texts), int8.embed(texts))
    maps = Path("/proc/self/maps").read_text().splitlines()
    assert any(line.endswith(str(int8.directory / WEIGHTS_NAME)) and " r--s " in line for line in maps)


@needs_model
def test_the_kernel_build_neither_imports_onnxruntime_nor_maps_the_table(int8: Int8USEEmbedder) -> None:
    """In a fresh interpreter, as the kernel does: the factory's default, loaded and used. Its embedding
    rows are read with pread: the 65 MB side file is never mapped (nothing of it counts in the process)."""
    assert int8.directory is not None
    code = (
        "import sys, json\n"
        "from hologram.memory.embed.embedder import load_embedder\n"
        "e = load_embedder()\n"
        "v = e.embed(['如何重置我的密码', 'How do I reset my password?'])\n"
        "print(json.dumps({'model': e.model_id, 'cos': float(v[0] @ v[1]), 'dir': str(e.directory),\n"
        "                  'ort': sorted(m for m in sys.modules if m.startswith('onnxruntime')),\n"
        "                  'mapped': 'weights.bin' in open('/proc/self/maps').read()}))\n"
    )
    env = {**os.environ, "XDG_CACHE_HOME": str(int8.directory.parent.parent)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["model"] == "use-multilingual-v3/int8-numpy"
    assert result["dir"] == str(int8.directory)  # the cache the test built: the path was reached
    assert result["cos"] > 0.75  # measured 0.84: the model ran, Chinese and English in one space
    assert result["ort"] == []
    assert result["mapped"] is False


@needs_model
def test_a_damaged_cache_is_built_again(tmp_path: Path) -> None:
    first = Int8USEEmbedder(cache_dir=tmp_path)
    expected = first.embed(["a damaged cache", "损坏的缓存"])
    assert first.directory is not None
    first._model.get()[1].close()
    with open(first.directory / WEIGHTS_NAME, "r+b") as f:
        f.truncate(1000)
    again = Int8USEEmbedder(cache_dir=tmp_path)
    assert np.array_equal(again.embed(["a damaged cache", "损坏的缓存"]), expected)
    assert again.directory is not None and (again.directory / WEIGHTS_NAME).stat().st_size > 60_000_000


@needs_model
def test_bad_ids_and_splits_are_refused(int8: Int8USEEmbedder) -> None:
    _, model = int8._model.get()
    ok = np.array([1, 500, 2], dtype=np.int32)
    with pytest.raises(ValueError, match=r"token ids must lie in \[0, 128010\)"):
        model.run(np.array([1, 128010, 2], dtype=np.int32), np.array([0, 3]))
    with pytest.raises(ValueError, match="splits"):
        model.run(ok, np.array([0, 2]))
    with pytest.raises(ValueError, match="splits"):
        model.run(ok, np.array([0, 0, 3]))


def test_a_model_without_the_expected_tensors_is_refused(tmp_path: Path) -> None:
    (tmp_path / "model.onnx").write_bytes(b"")  # a model with no graph: no initializer of the USE network
    (tmp_path / WEIGHTS_NAME).write_bytes(b"")
    with pytest.raises(ModelMismatch) as info:
        UseInt8Model.open(tmp_path)
    message = str(info.value)
    assert message.startswith(f"{tmp_path / 'model.onnx'}: operators this build does not run: none; missing: Add x59")
    assert '[memory] embedder = "onnx"' in message  # the way out


@needs_model
@needs_ort
def test_a_graph_with_an_operator_this_build_does_not_run_goes_to_onnxruntime(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The USE graph with its one Tanh node made a Selu (the same tensors: every initializer check passes,
    and the numpy network would quietly compute tanh): refused by its operators, and the factory's next build,
    onnxruntime, embeds instead, one warning saying why. Mutation check (done): removing `_check_operators`
    from `UseInt8Model.open` loads the changed graph in numpy (red: no warning, the int8 build returned)."""
    source = emb.model_file()
    assert source is not None
    data = source.read_bytes()
    op_tanh = b"\x22\x04Tanh"  # NodeProto.op_type (field 4, length-delimited), 4 bytes: the same length
    assert data.count(op_tanh) == 1
    changed = tmp_path / "changed.onnx"
    changed.write_bytes(data.replace(op_tanh, b"\x22\x04Selu"))
    first = Int8USEEmbedder(changed, cache_dir=tmp_path / "cache")
    with caplog.at_level(logging.WARNING, logger="hologram.memory.embed.embedder"):
        loaded = emb.load_or_next(first, emb.preference(None))
    assert loaded is not None and loaded.model_id == "use-multilingual-v3/onnx-int8"
    assert loaded.embed(["a graph numpy does not run"]).shape == (1, 512)
    [warning] = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert "int8 embedding model did not load" in warning and "does not run: Selu x1; missing: Tanh x1" in warning
    assert "trying onnx" in warning


@needs_model
@needs_ort
def test_a_model_the_build_cannot_run_falls_back_to_onnxruntime(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The factory picks a build before its model loads; a model file of another version must not leave
    memory without vectors when onnxruntime can run it. Mutation check (done): `load_or_next` returning the
    embedder whose load failed turns this red."""

    def mismatch(self: Int8USEEmbedder) -> None:
        raise ModelMismatch("model.onnx: the USE model has no inline initializer 'x'")

    monkeypatch.setattr(Int8USEEmbedder, "load", mismatch)
    prefer = emb.preference(None)
    with caplog.at_level(logging.WARNING, logger="hologram.memory.embed.embedder"):
        loaded = emb.load_or_next(emb.load_embedder(prefer), prefer)
    assert loaded is not None and loaded.model_id == "use-multilingual-v3/onnx-int8"
    assert loaded.embed(["fallback"]).shape == (1, 512)
    [warning] = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert "int8 embedding model did not load" in warning and "no inline initializer 'x'" in warning
    assert "trying onnx" in warning


def test_fma_rounds_once() -> None:
    """Against exact rational arithmetic, including a sum just above a float32 tie by less than float64 can
    hold: 1 + (2**-24 + 2**-60), where a float64 sum rounds to the tie and then to even — wrongly — and a
    fused multiply-add (and `fma`) rounds up."""
    rng = np.random.default_rng(7)
    a = rng.standard_normal(4000)
    b = rng.standard_normal(4000)
    c = rng.standard_normal(4000) * 1e-3
    near = 2.0**-12 * (1 + 2.0**-12), 2.0**-12 * (1 - 4095 * 2.0**-24)  # product: 2**-24 + 2**-60
    a = np.concatenate([a, [near[0], -near[0]]]).astype(np.float32)
    b = np.concatenate([b, [near[1], near[1]]]).astype(np.float32)
    c = np.concatenate([c, [1.0, -1.0]]).astype(np.float32)
    got = fma(a, b, c)
    assert got[-2] == np.float32(1 + 2.0**-23) and got[-1] == -np.float32(1 + 2.0**-23)
    for x, y, z, r in zip(a, b, c, got, strict=True):
        exact = Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z))
        assert r == _round_to_float32(exact), (x, y, z)


def _round_to_float32(value: Fraction) -> np.float32:
    """Correct round-to-nearest-even of a rational to float32 (normal range)."""
    lo = np.float32(float(value))  # within an ulp or two: search the neighbours
    candidates = [np.nextafter(lo, np.float32(-np.inf)), lo, np.nextafter(lo, np.float32(np.inf))]
    best = min(candidates, key=lambda v: (abs(Fraction(float(v)) - value), int(np.array(v).view(np.int32)) & 1))
    return np.float32(best)


def test_row_sums_follow_two_packet_accumulators() -> None:
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((5, 256)) * 10).astype(np.float32)
    lanes = np.zeros((5, 2, 4), dtype=np.float32)
    for k in range(0, 256, 8):
        lanes[:, 0] += x[:, k : k + 4]
        lanes[:, 1] += x[:, k + 4 : k + 8]
    acc = lanes[:, 0] + lanes[:, 1]
    expected = (acc[:, 0] + acc[:, 2]) + (acc[:, 1] + acc[:, 3])
    assert np.array_equal(row_sums(x), expected)


def test_dynamic_quantize_keeps_zero_exact_and_the_range() -> None:
    x = np.array([[-1.5, 0.0, 0.7, 2.25]], dtype=np.float32)
    q, scale = dynamic_quantize(x)
    assert scale == np.float32(np.float32(3.75) / np.float32(255))
    assert q[0, 1] == 0 and q.min() >= -255 and q.max() <= 255
    assert np.all(q == np.rint(q))
    positive, _ = dynamic_quantize(np.array([[0.5, 1.0]], dtype=np.float32))
    assert positive.max() == 255  # zero point 0: the whole uint8 range above it
