"""The int8 build's vectors (hologram.memory.embed.use_int8) against onnxruntime's, on English and Chinese text.

    .venv/bin/python tools/bench/embed_exact.py [DATA_DIR] [--turns 2600] [--synthetic 600]

Texts: the first --turns LoCoMo turns of DATA_DIR ("speaker: text"), the written Chinese corpus
(tests/data/zh_corpus.txt) and --synthetic seeded Chinese texts (tools/bench/segment.py's generator: words,
rare characters, numbers, Latin, symbols). Both builds embed them through `Embedder.embed` — in their batches of
64, then one text per call — and the tool prints, per mode, how many rows are bit-identical, the largest
absolute difference of any component and the smallest cosine between the two builds' vectors. The graph
quantises each batch's activations with one scale, so a vector depends on its batch mates; equal batches
must give equal vectors.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/: bench

from bench.embed import sentences
from bench.segment import synthetic_corpus, written_corpus
from hologram.memory.embed.embedder import Embedder, Int8USEEmbedder, OnnxUSEEmbedder


def compare(a: np.ndarray, b: np.ndarray) -> tuple[int, float, float]:
    """(rows bit-identical, max abs diff, min cosine)."""
    equal = int(np.all(a == b, axis=1).sum())
    cos = np.sum(a * b, axis=1) / np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-12)
    return equal, float(np.abs(a - b).max(initial=0.0)), float(cos.min(initial=1.0))


def embed_all(e: Embedder, texts: list[str], single: bool) -> tuple[np.ndarray, float]:
    started = time.process_time()
    out = np.stack([e.embed([t])[0] for t in texts]) if single else e.embed(texts)
    return out, time.process_time() - started


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data_dir", type=Path, nargs="?")
    ap.add_argument("--turns", type=int, default=2600)
    ap.add_argument("--synthetic", type=int, default=600)
    args = ap.parse_args(argv)
    if not (Int8USEEmbedder.available() and OnnxUSEEmbedder.available()):
        print("needs the USE model and onnxruntime (the oracle)")
        return 1
    english = sentences(args.data_dir, args.turns) if args.data_dir else []
    chinese = written_corpus() + synthetic_corpus(args.synthetic, 1)
    texts = [t for t in english + chinese if t.strip()]
    print(f"{len(texts)} texts: {len(english)} LoCoMo turns, {len(chinese)} Chinese")
    with tempfile.TemporaryDirectory() as cache:
        int8 = Int8USEEmbedder(cache_dir=cache)
        onnx = OnnxUSEEmbedder(threads=1, cache_dir=cache)
        for mode, single in (("batches of 64", False), ("one per call", True)):
            a, ta = embed_all(int8, texts, single)
            b, tb = embed_all(onnx, texts, single)
            equal, diff, cos = compare(a, b)
            print(
                f"{mode:14} bit-identical rows {equal}/{len(texts)}, max abs diff {diff:.3g}, min cosine {cos:.9f}"
                f"  (CPU s: int8 {ta:.1f}, onnxruntime {tb:.1f})"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
