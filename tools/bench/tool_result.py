"""What a tool's long result costs the kernel's memory: CPU seconds, texts embedded and peak RSS over idle for a
turn whose one tool call returns 5 MB of text, against the same turn returning 5 kB in the same run.

    .venv/bin/python tools/bench/tool_result.py [--json] [--sizes 5120,5242880]

A real `hologram up` with a plugin whose tool returns N bytes of prose, the strict mock calling it and then
answering, the embedding model loaded first. Each turn runs in its own session through `hologram ask`; the
measure ends once the session's passages are embedded (`hologram status`'s ``memory.indexing`` back at 0).
CPU is the kernel process's own (utime + stime from /proc), not its plugins'. Memory indexes the first 50,000
characters of an event and embeds its first 64 passages (hologram/memory/text/bounds.py): the long result costs a
bounded multiple of the short one, not one proportional to its length (it was 22,094 passages and ~400 s of
CPU before the bound, issue 42).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/: mock_llm, bench

import argparse
import json
import os
import shutil
import tempfile
import time
from typing import Any

from bench._kernel import BenchKernel, provider_toml
from bench.input_rss import Peak, rss_mb
from mock_llm import MockLLM

UNIT = "The quarterly report says revenue grew in the north. 季度报告显示收入增长，成本下降。 "

MANIFEST = """\
[plugin]
name = "bulk"
version = "0.1.0"
description = "returns a long document"
run = {{ module = "bulk", env = {{ PYTHONPATH = "{code}" }} }}

[[tools]]
name = "bulk_read"
description = "read the long document"
parallel_safe = true
parameters = {{ type = "object", properties = {{ size = {{ type = "integer" }} }}, required = ["size"] }}
"""

SOURCE = f"""\
from hologram.sdk import Plugin

plugin = Plugin("bulk")


@plugin.tool("bulk_read")
def bulk_read(size: int) -> str:
    unit = {UNIT!r}
    return (unit * (size // len(unit) + 1))[:size]


if __name__ == "__main__":
    plugin.run()
"""


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def settled(kernel: BenchKernel, timeout: float) -> tuple[dict[str, Any], bool]:
    """The memory section once no session's passages are being embedded, and True; at `timeout`, the section
    then and False (a kernel before ``memory.indexing`` existed is measured up to the timeout: ``--max-wait``)."""
    deadline = time.monotonic() + timeout
    while True:
        memory: dict[str, Any] = kernel.status()["memory"]
        if memory.get("indexing", 1) == 0 and memory["embedder_ready"]:
            return memory, True
        if time.monotonic() > deadline:
            return memory, False
        time.sleep(0.05)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--sizes", default="5120,5242880", help="tool result sizes in bytes; the first is the baseline")
    parser.add_argument("--max-wait", type=float, default=1800, help="seconds a turn's embedding may take")
    options = parser.parse_args()
    sizes = [int(s) for s in options.sizes.split(",")]
    root = Path(tempfile.mkdtemp(prefix="hologram-bench-toolresult-"))
    rows: list[dict[str, Any]] = []
    with MockLLM("deepseek") as mock:
        (root / "extra").mkdir(parents=True)
        (root / "code").mkdir()
        (root / "code" / "bulk.py").write_text(SOURCE)
        (root / "extra" / "bulk.toml").write_text(MANIFEST.format(code=root / "code"))
        settings = "[agent]\nmax_steps = 4\n\n" + provider_toml("mock", mock.base_url, max_retries=0, timeout_s=120)
        kernel = BenchKernel(root, settings, manifests=["extra"])
        try:
            kernel.start()
            assert kernel.process is not None
            pid = kernel.process.pid
            mock.script([], default={"reasoning_content": "ok", "content": "Hello."})
            kernel.ask("hello, warm up")  # the memory stack's loads
            settled(kernel, min(options.max_wait, 10))
            idle = rss_mb(pid)
            for n, size in enumerate(sizes):
                call = [{"id": f"b{n}", "name": "bulk_read", "arguments": json.dumps({"size": size})}]
                mock.script(
                    [{"reasoning_content": "read", "tool_calls": call}, {"reasoning_content": "ok", "content": "Read."}]
                )
                before, embedded = cpu_s(pid), settled(kernel, 0)[0]["texts_embedded"]
                started = time.perf_counter()
                with Peak(pid) as peak:
                    subprocess_seconds, _ = kernel.ask(f"read the document, take {n}")
                    memory, done = settled(kernel, options.max_wait)
                rows.append(
                    {
                        "size": size,
                        "turn_s": subprocess_seconds,
                        "until_indexed_s": time.perf_counter() - started,
                        "kernel_cpu_s": cpu_s(pid) - before,
                        "texts_embedded": memory["texts_embedded"] - embedded,
                        "peak_over_idle_mb": peak.peak - idle,
                        "indexed": done,
                    }
                )
        finally:
            kernel.stop()
            shutil.rmtree(root, ignore_errors=True)
    base = rows[0]
    out = {"idle_mb": idle, "rows": rows}
    if options.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"kernel RSS idle (memory stack loaded): {idle:.0f} MB; baseline: a {base['size']:,}-byte result")
    print(
        f"{'result':>12} {'turn':>7} {'indexed':>8} {'kernel CPU':>11} {'x base':>7} {'embedded':>9} {'peak-idle':>10}"
    )
    for row in rows:
        ratio = row["kernel_cpu_s"] / max(base["kernel_cpu_s"], 0.01)
        print(
            f"{row['size']:>12,} {row['turn_s']:>6.2f}s {row['until_indexed_s']:>7.2f}s {row['kernel_cpu_s']:>10.2f}s "
            f"{ratio:>6.1f}x {row['texts_embedded']:>9} {row['peak_over_idle_mb']:>7.0f} MB"
            + ("" if row["indexed"] else "  (still embedding when measured)")
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
