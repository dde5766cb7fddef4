"""The kernel's resident memory (issue 11: <= 200 MB idle; issue 22: <= 150 MB PSS for the whole default graph,
kernel <= 90 MB, plugins <= 8 MB each), and what the embedding model costs of it.

    .venv/bin/python tools/bench/footprint.py [--events 100000] [--rounds 3] [--reuse PATH]
    .venv/bin/python tools/bench/footprint.py --turns [--rounds 3]     # (c) only: the issue-22 targets

(c) ``--turns``: `hologram up` on the default graph with the strict mock as provider, one English and one
    Chinese turn through `hologram ask` (so the embedding model and the Chinese segmenter are loaded), idle
    (start-up heap frozen + 1 s), then the PSS of every process of the tree by role (kernel, zygote, each
    plugin by name), the total, and each against its issue-22 target, and the zygote and its plugins summed (a
    figure the kernel's own swings do not move). Medians over ``--rounds`` starts.
    ``--turns --graph``: the same with a memory graph (L3) in use — ``graph.kz`` written before the start
    (2,000 cooled blocks, 4,000 triples), and after the turns ``hologram memory search`` through the kernel
    opens it — so the graph's own process (``hologram.memory.graph.worker``, issue 39 item 8) is in the
    table and the kernel's PSS shows what the database costs it (nothing, once it is out of its process).

(a) The product path: `hologram up` on the default graph (as ``cold_open.py`` starts it: builtins, a provider
    on a closed port) with an empty data directory vs one whose ``cold.db`` holds N synthetic events
    (``cold_open.build_cold``; ``--reuse PATH`` keeps/reuses it), alternately ``--rounds`` times each. Once
    idle (start-up heap frozen, models loaded, + 1 s) the kernel's VmRSS and PSS are read, its PSS split by
    mapping (anonymous, onnxruntime's libraries, the mapped model weights, the segmenter, other files), and
    the PSS of the whole process tree (kernel, supervisor, plugins). Medians against the 200 MB target.
(b) The embedder alone, the same run's baseline: a fresh process per build loads ``OnnxUSEEmbedder`` with the
    model as installed (``mapped_weights=False``) or rewritten with mapped weights (the default), and reports
    RSS after the load and after embedding a batch of 64; then one process holds both and compares their
    vectors on English and Chinese sentences (max abs diff) and their latency (p50, single short queries and
    batches of 64, alternated).

MB here are MiB (kB / 1024), as in /proc.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/: bench, mock_llm

from bench._kernel import BenchKernel, configure_bytecode, kernel_env_option, provider_toml
from bench.cold_open import ensure_cold, memory_kb, wait_idle
from bench.proctree import tree

TARGET_MB = 200
#: Issue 22 item 4: idle PSS of the default graph after an English and a Chinese turn.
TOTAL_TARGET_MB, KERNEL_TARGET_MB, PLUGIN_TARGET_MB = 150, 90, 8
TURNS = ("What is the capital of France? Remember I like tea.", "我昨天在北京大学的图书馆看了一本关于机器学习的书。")
SENTENCES = [
    "How do I reset my password?",
    "The meeting moved to Thursday afternoon.",
    "Caroline went to the LGBTQ support group yesterday and found it really moving.",
    "如何重置我的密码",
    "我昨天在北京大学的图书馆看了一本关于机器学习的书。",
    "明天的会议几点开始？",
]


def pss_by_mapping(pid: int) -> Counter[str]:
    """The kernel's PSS in kB, by kind of mapping."""
    out: Counter[str] = Counter()
    kind = "anonymous"
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        head = line.split(maxsplit=5)
        if len(head) >= 5 and "-" in head[0] and not line.endswith(" kB"):
            name = head[5] if len(head) > 5 else ""
            if not name or name.startswith("["):
                kind = "anonymous"
            elif "onnxruntime" in name:
                kind = "onnxruntime libs"
            elif name.endswith(".bin") or name.endswith(".onnx"):
                kind = "model weights (mapped)"
            elif name.endswith(".seg"):
                kind = "segmenter"
            else:
                kind = "other files"
        elif line.startswith("Pss:"):
            out[kind] += int(line.split()[1])
    return out


def tree_pss_kb(root: int) -> int:
    """PSS of `root` and all its descendants."""
    total = 0
    for pid in tree(root):
        with contextlib.suppress(OSError, StopIteration):  # gone meanwhile
            total += memory_kb(pid)[1]
    return total


def pss_by_process(kernel: BenchKernel) -> dict[str, int]:
    """PSS in kB of every process of the running graph, by role: "kernel", "plugin NAME", or its command."""
    status = kernel.status()
    root = int(status["kernel"]["pid"])
    names = {int(p["pid"]): f"plugin {p['name']}" for p in status["plugins"] if p.get("pid")}
    out: dict[str, int] = {}
    for pid in tree(root):
        if pid == root:
            role = "kernel"
        elif pid in names:
            role = names[pid]
        else:
            with contextlib.suppress(OSError):
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                role = next((a.decode() for a in argv if a.startswith(b"hologram.")), argv[0].decode())
        with contextlib.suppress(OSError, StopIteration):
            out[role] = out.get(role, 0) + memory_kb(pid)[1]
    return out


def write_graph(data: Path, blocks: int = 2000) -> None:
    """An L3 graph as cooling writes it: `blocks` blocks of one event each, two triples read from each."""
    from hologram.memory.graph import GraphBlock, Triple, open_graph_store

    moved = [
        GraphBlock(f"blk_{i}", f"ev_{i}", 0, "text", f"Caroline said: I love pottery, lesson {i} in 北京", "{}",
                   "s-bench", 1_700_000_000_000 + i)
        for i in range(blocks)
    ]  # fmt: skip
    facts = [
        t for b in moved
        for t in (Triple("Caroline", "likes", f"pottery {b.id}", b.event, b.id),
                  Triple(f"person {b.id}", "lives in", "北京", b.event, b.id))
    ]  # fmt: skip
    with open_graph_store(data / "graph.kz") as store:
        store.move(moved, facts, now=time.time())


def graph_after_turns(args: argparse.Namespace, root: Path) -> None:
    """(c): the default graph idle after an English and a Chinese turn, PSS per process vs issue 22's targets
    (with ``--graph``: an L3 graph opened after the turns)."""
    from mock_llm import MockLLM

    with MockLLM("deepseek") as llm:
        llm.script([], default={"reasoning_content": "r", "content": "ok"})
        kernel = BenchKernel(root / "k-turns", provider_toml("mock", llm.base_url, max_retries=0), builtins=True)
        if args.graph:
            write_graph(kernel.data)
        seen: list[dict[str, int]] = []
        splits: list[Counter[str]] = []
        embedder = None
        for i in range(args.rounds):
            try:
                kernel.start()
                wait_idle(kernel)
                for text in TURNS:
                    _, result = kernel.ask(text)
                    assert result["output"] == "ok", result
                if args.graph:  # through the kernel (its control socket): the kernel opens the graph
                    done = subprocess.run(
                        [
                            sys.executable,
                            "-m",
                            "hologram",
                            "memory",
                            "search",
                            "Caroline pottery",
                            "--data",
                            str(kernel.data),
                        ],
                        capture_output=True,
                        text=True,
                        timeout=300,
                    )
                    assert done.returncode == 0 and "from the running kernel" in done.stdout, done.stderr
                    assert kernel.status()["memory"].get("l3_triples"), "the kernel opened the graph"
                wait_idle(kernel)
                seen.append(pss_by_process(kernel))
                splits.append(pss_by_mapping(int(kernel.status()["kernel"]["pid"])))
                embedder = kernel.status().get("memory", {}).get("embedder")
            finally:
                kernel.stop()
            print(f"  round {i + 1}: total PSS {sum(seen[-1].values()) / 1024:.1f} MB", flush=True)
    with_graph = ", an L3 graph of 4,000 triples open" if args.graph else ""
    print(f"default graph idle after an English and a Chinese turn (embedder {embedder}{with_graph}), PSS MB, "
          f"median of {args.rounds}:")  # fmt: skip
    roles = sorted(seen[0], key=lambda r: (r != "kernel", -seen[0][r]))
    for role in roles:
        mb = statistics.median(m.get(role, 0) for m in seen) / 1024
        target = KERNEL_TARGET_MB if role == "kernel" else PLUGIN_TARGET_MB if role.startswith("plugin") else None
        verdict = f"{mb / target:.2f}x the {target} MB target: {'ok' if mb <= target else 'MISSED'}" if target else ""
        print(f"  {role:28} {mb:6.1f}  {verdict}")
    forked = statistics.median(sum(v for r, v in m.items() if r != "kernel") for m in seen) / 1024
    print(f"  {'zygote + plugins':28} {forked:6.1f}  (what the zygote's children cost, whatever the kernel's noise)")
    kinds = {k: statistics.median(m[k] for m in splits) / 1024 for k in splits[0]}
    print("  kernel by mapping: " + ", ".join(f"{k} {v:.1f}" for k, v in sorted(kinds.items(), key=lambda kv: -kv[1])))
    total = statistics.median(sum(m.values()) for m in seen) / 1024
    verdict = "ok" if total <= TOTAL_TARGET_MB else "MISSED"
    print(f"  {'total (' + str(len(roles)) + ' processes)':28} {total:6.1f}  "
          f"{total / TOTAL_TARGET_MB:.2f}x the {TOTAL_TARGET_MB} MB target: {verdict}")  # fmt: skip


def kernels(args: argparse.Namespace, root: Path) -> None:
    big = ensure_cold(args.reuse or root / "big" / "cold.db", args.events)
    settings = provider_toml("idle", "http://127.0.0.1:9", max_retries=0)
    runs = {"empty": BenchKernel(root / "k-empty", settings, builtins=True)}
    runs["L2"] = BenchKernel(root / "k-full", settings, builtins=True)
    (runs["L2"].data / "cold.db").write_bytes(big.read_bytes())
    seen: dict[str, list[tuple[int, int, int, Counter[str]]]] = {"empty": [], "L2": []}
    for i in range(args.rounds):
        for name in ("empty", "L2") if i % 2 == 0 else ("L2", "empty"):
            kernel = runs[name]
            try:
                kernel.start()
                wait_idle(kernel)
                pid = int(kernel.status()["kernel"]["pid"])
                rss, pss = memory_kb(pid)
                seen[name].append((rss, pss, tree_pss_kb(pid), pss_by_mapping(pid)))
            finally:
                kernel.stop()
            rss, pss, tree, _ = seen[name][-1]
            print(
                f"  round {i + 1} {name:5}: kernel idle RSS {rss / 1024:.0f} MB, PSS {pss / 1024:.0f} MB; "
                f"process tree PSS {tree / 1024:.0f} MB",
                flush=True,
            )
    for name, label in (("empty", "empty data dir"), ("L2", f"{args.events:,}-event L2")):
        rss = statistics.median(m[0] for m in seen[name]) / 1024
        pss = statistics.median(m[1] for m in seen[name]) / 1024
        tree = statistics.median(m[2] for m in seen[name]) / 1024
        kinds = {k: statistics.median(m[3][k] for m in seen[name]) / 1024 for k in seen[name][0][3]}
        split = ", ".join(f"{k} {v:.0f}" for k, v in sorted(kinds.items(), key=lambda kv: -kv[1]))
        verdict = "ok" if rss <= TARGET_MB else "MISSED"
        print(
            f"kernel idle, {label}: RSS {rss:.0f} MB ({rss / TARGET_MB:.2f}x the {TARGET_MB} MB target: "
            f"{verdict}), PSS {pss:.0f} MB [{split}]; process tree PSS {tree:.0f} MB"
        )


_CHILD = """
import json, sys
from hologram.memory.embed.embedder import OnnxUSEEmbedder
def rss():
    return int(next(l for l in open("/proc/self/status") if l.startswith("VmRSS:")).split()[1])
before = rss()
e = OnnxUSEEmbedder(mapped_weights=sys.argv[1] == "1")
e.load()
loaded = rss()
e.embed(["sentence %d of a batch" % i for i in range(64)])
print(json.dumps([before, loaded, rss()]))
"""


def embedder(args: argparse.Namespace) -> None:
    from hologram.memory.embed.embedder import OnnxUSEEmbedder

    if not OnnxUSEEmbedder.available():
        print("embedder: the USE ONNX model is not installed; skipped")
        return
    for mapped, label in ((False, "model as installed"), (True, "mapped weights")):
        rows = [
            json.loads(subprocess.run([sys.executable, "-c", _CHILD, str(int(mapped))], capture_output=True,
                                      text=True, check=True).stdout)
            for _ in range(args.rounds)
        ]  # fmt: skip
        before, loaded, used = (statistics.median(r[i] for r in rows) / 1024 for i in range(3))
        print(
            f"embedder, {label}: process RSS +{loaded - before:.0f} MB for the load ({loaded:.0f} MB), "
            f"{used:.0f} MB after a batch of 64"
        )
    plain, mapped_ = OnnxUSEEmbedder(mapped_weights=False), OnnxUSEEmbedder()
    batch = [f"{SENTENCES[i % len(SENTENCES)]} ({i})" for i in range(64)]
    diff = max(float(abs(plain.embed(xs) - mapped_.embed(xs)).max()) for xs in (SENTENCES, batch))
    times: dict[str, tuple[list[float], list[float]]] = {"plain": ([], []), "mapped": ([], [])}
    for e in (plain, mapped_):
        e.embed(batch)
    for i in range(60):
        for name, e in (("plain", plain), ("mapped", mapped_)) if i % 2 else (("mapped", mapped_), ("plain", plain)):
            started = time.perf_counter()
            e.embed([SENTENCES[i % len(SENTENCES)]])
            times[name][0].append(time.perf_counter() - started)
            if i % 5 == 0:
                started = time.perf_counter()
                e.embed(batch)
                times[name][1].append(time.perf_counter() - started)
    p = {k: (statistics.median(s) * 1000, statistics.median(b) * 1000) for k, (s, b) in times.items()}
    print(
        f"embedder vectors, mapped vs as installed: max abs diff {diff:.2g}; latency p50 single "
        f"{p['mapped'][0]:.2f} vs {p['plain'][0]:.2f} ms ({p['mapped'][0] / p['plain'][0]:.2f}x), batch of 64 "
        f"{p['mapped'][1]:.1f} vs {p['plain'][1]:.1f} ms ({p['mapped'][1] / p['plain'][1]:.2f}x)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--reuse", type=Path, help="keep (or reuse) the built cold.db here")
    parser.add_argument("--no-kernel", action="store_true", help="only (b), the embedder")
    parser.add_argument("--turns", action="store_true", help="only (c), the default graph after two turns")
    parser.add_argument("--graph", action="store_true", help="with --turns: an L3 graph opened after the turns")
    parser.add_argument(
        "--kernel-env", action="append", default=[], metavar="NAME=VALUE", help="set for the kernel's process only"
    )
    args = parser.parse_args()
    kernel_env_option(args.kernel_env)
    if args.turns:
        with tempfile.TemporaryDirectory() as tmp:
            configure_bytecode(Path(tmp))  # as a user's install runs: compiled once, not at every start
            graph_after_turns(args, Path(tmp))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        if not args.no_kernel:
            kernels(args, Path(tmp))
    embedder(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
