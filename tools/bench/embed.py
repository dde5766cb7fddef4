"""Throughput of each installed sentence embedder, one sentence per call vs batched.

    .venv/bin/python tools/bench/embed.py [DATA_DIR] [--n 512] [--threads 2]

Sentences are LoCoMo turns when DATA_DIR is given (real lengths), else a built-in English/Chinese mix. Prints
sentences/s single and batched, the batched/single ratio, and the ratio between embedders: the numbers
behind the factory order in ``hologram.memory.embed``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from hologram.memory.embed import Embedder, NumpyUSEEmbedder, OnnxUSEEmbedder

MIX = [
    "How do I reset my password?",
    "如何重置我的密码",
    "Caroline: I went to the LGBTQ support group yesterday and it was so powerful.",
    "我昨天在北京大学的图书馆看了一本关于机器学习的书。",
    "Melanie: I painted a sunrise over the lake last summer, it's my favourite piece so far!",
    "明天下午三点开会讨论预算。",
    "Let's watch a movie on Friday night?",
    "ok",
]


def sentences(data_dir: Path | None, n: int) -> list[str]:
    if data_dir is None:
        return [MIX[i % len(MIX)] + ("" if i < len(MIX) else f" ({i})") for i in range(n)]
    out: list[str] = []
    for path in sorted(data_dir.glob("*.json")):
        doc = json.loads(path.read_text())
        for key, val in doc.items():
            if key.startswith("session_") and isinstance(val, list):
                out.extend(f"{t['speaker']}: {t['text']}" for t in val)
    return out[:n]


def rate(embedder: Embedder, texts: Sequence[str], batched: bool) -> float:
    start = time.perf_counter()
    if batched:
        embedder.embed(list(texts))
    else:
        for t in texts:
            embedder.embed([t])
    return len(texts) / (time.perf_counter() - start)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data_dir", type=Path, nargs="?")
    ap.add_argument("--n", type=int, default=512)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv)
    texts = sentences(args.data_dir, args.n)
    print(f"{len(texts)} sentences, mean {np.mean([len(t) for t in texts]):.0f} chars, threads={args.threads}")
    embedders: list[Embedder] = []
    if OnnxUSEEmbedder.available():
        embedders.append(OnnxUSEEmbedder(threads=args.threads))
    if NumpyUSEEmbedder.available():
        embedders.append(NumpyUSEEmbedder(threads=args.threads))
    if not embedders:
        print("no embedder installed")
        return 1
    rows = []
    for e in embedders:
        e.embed(texts[:8])  # load the model and warm caches outside the timing
        single = rate(e, texts, batched=False)
        batched = rate(e, texts, batched=True)
        rows.append((e.model_id, single, batched))
    print(f"{'embedder':32} {'single/s':>10} {'batched/s':>10} {'batch/single':>13}")
    for model_id, single, batched in rows:
        print(f"{model_id:32} {single:>10.0f} {batched:>10.0f} {batched / single:>12.2f}x")
    if len(rows) == 2:
        (a, sa, ba), (b, sb, bb) = rows
        print(f"{a} / {b}: single {sa / sb:.2f}x, batched {ba / bb:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
