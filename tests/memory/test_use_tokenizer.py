"""The USE tokenizer run in Python (memory/embed/use_tokenizer.py) gives the ids the graph's SentencePiece op gives,
and the rewritten graph (memory/onnx_weights.split_tokenizer) takes them in place of strings.

The expected ids were recorded from the op itself (onnxruntime-extensions' SentencepieceTokenizer, a session
holding only that node of the installed model). Mutation-checked: scoring paths in float64 instead of float32
fails the dashes case (the C++ ties differently), not merging a run of unknown pieces fails the emoji case,
and keeping the op in the rewrite fails the graph test.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from hologram.memory.embed.embedder import OnnxUSEEmbedder
from hologram.memory.embed.onnx_weights import (
    MODEL_NAME,
    TOKENIZER_INPUTS,
    external_weights_model,
    split_tokenizer,
)
from hologram.memory.embed.use_tokenizer import UseTokenizer

pytestmark = pytest.mark.skipif(not OnnxUSEEmbedder.available(), reason="USE ONNX model not installed")

#: text -> the op's ids (BOS 1 first, EOS 2 last)
OP_IDS = {
    "如何重置我的密码": [1, 6, 1894, 887, 4600, 1372, 2585, 4734, 2],
    # equal pieces in a long run: which split wins depends on float32 rounding of the path scores
    "# --- exactness " + "-" * 69: [1, 1546, 10686, 2775, 2280, 21592, 2996, 2996, 42803, 2996, 2],
    # two unknown characters in a row come out as one unknown piece (id 0)
    "emoji 🎉🙂 and ümlaut café": [1, 206, 55180, 6, 0, 17, 6, 15951, 52778, 15567, 2],
    # nmt_nfkc: full-width forms fold, runs of spaces collapse, the trailing one goes
    "ｆｕｌｌｗｉｄｔｈ ＡＢＣ  １２３ ": [1, 1969, 18027, 13514, 26690, 2],
}


@pytest.fixture(scope="module")
def rewritten(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = OnnxUSEEmbedder.model_path()
    assert source is not None
    return external_weights_model(source, tmp_path_factory.mktemp("use-cache")).parent


@pytest.fixture(scope="module")
def tokenizer(rewritten: Path) -> UseTokenizer:
    return UseTokenizer.open(rewritten)


@pytest.mark.parametrize("text", list(OP_IDS))
def test_ids_are_the_ops(tokenizer: UseTokenizer, text: str) -> None:
    assert tokenizer.encode(text) == OP_IDS[text]


def test_a_batch_is_the_ops_two_outputs(tokenizer: UseTokenizer) -> None:
    texts = list(OP_IDS)
    tokens, splits = tokenizer.encode_batch(texts)
    assert tokens.dtype.name == "int32" and splits.dtype.name == "int64"
    assert splits.tolist()[0] == 0 and len(splits) == len(texts) + 1
    assert [tokens[a:b].tolist() for a, b in itertools.pairwise(splits.tolist())] == list(OP_IDS.values())


def test_the_rewrite_has_no_tokenizer_op_and_takes_ids(rewritten: Path) -> None:
    import onnxruntime as ort

    graph = (rewritten / MODEL_NAME).read_bytes()
    assert b"SentencepieceTokenizer" not in graph
    # no custom op library registered: the graph needs none any more
    session = ort.InferenceSession(str(rewritten / MODEL_NAME), providers=["CPUExecutionProvider"])
    assert [(i.name, i.type) for i in session.get_inputs()] == [
        (TOKENIZER_INPUTS[0], "tensor(int32)"),
        (TOKENIZER_INPUTS[1], "tensor(int64)"),
    ]


def test_a_graph_without_the_op_is_refused() -> None:
    with pytest.raises(ValueError, match="SentencepieceTokenizer"):
        split_tokenizer(b"")
