"""Peak kernel memory for a huge turn input: 10 MB (refused at the limit) and 190 k characters (accepted,
stored, embedded, recalled), each over the control socket and HTTP, against the idle kernel in the same run.

    .venv/bin/python tools/bench/input_rss.py [--json]

A real `hologram up` with the http plugin and the strict mock, the memory stack loaded by a warm-up turn (so
"idle" is the kernel as it serves, not as it starts). The kernel's RSS is sampled every 5 ms from /proc while
each input is sent and its turn runs; the figure is the peak over idle. Target (issue 42): within +200 MB for
both inputs, on both paths. 10 MB of text used to take the kernel past 23 GB, until the OOM killer ended it.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/: mock_llm

import argparse
import asyncio
import json
import shutil
import tempfile
import threading
import time
from typing import Any

import httpx

from bench._kernel import BenchKernel, provider_toml
from hologram.clients import TurnClient
from hologram.rpc import RpcError
from mock_llm import MockLLM

REPO = Path(__file__).resolve().parents[2]
HUGE, LONG = 10 * 1024 * 1024, 190_000
TARGET_MB = 200.0


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


class Peak(threading.Thread):
    """The highest RSS of ``pid`` while it runs (sampled every 5 ms)."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.peak, self.done = pid, 0.0, threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            self.peak = max(self.peak, rss_mb(self.pid))
            time.sleep(0.005)

    def __enter__(self) -> Peak:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.done.set()
        self.join()


def text_of(size: int) -> str:
    """Mixed English and Chinese prose, as a pasted document is (jieba and the embedder see both)."""
    unit = "The quarterly report says revenue grew. 季度报告显示收入增长，成本下降。 "
    return (unit * (size // len(unit) + 1))[:size]


async def socket_turn(data: Path, text: str) -> str:
    async with await TurnClient.connect(data, client="bench") as client:
        try:
            turn = await client.start(text)
        except RpcError as exc:
            return f"refused: {exc.message[:80]}"
        ended = await turn.result()
        return f"answered ({ended.stop_reason})"


def http_turn(url: str, token: str, text: str) -> str:
    with httpx.Client(base_url=url, headers={"authorization": f"Bearer {token}"}, timeout=300) as client:
        response = client.post("/api/turns", json={"text": text})
        if response.status_code != 200:
            return f"refused: HTTP {response.status_code} {response.text[:80]}"
        session = response.json()["session"]
        with client.stream("GET", f"/api/sessions/{session}/events") as events:
            for line in events.iter_lines():
                if line.startswith("data: ") and '"turn.ended"' in line:
                    return "answered"
    return "no end"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="hologram-bench-input-"))
    rows: list[dict[str, Any]] = []
    with MockLLM("deepseek") as mock:
        mock.script([], default={"content": "Read it."})
        (root / "manifests").mkdir(parents=True)
        shutil.copy(REPO / "manifests" / "http.toml", root / "manifests" / "http.toml")
        shutil.copy(REPO / "manifests" / "http.config.schema.json", root / "manifests")
        settings = "[agent]\nmax_steps = 4\n\n[plugins.http]\nmax_body_bytes = 16777216\n\n" + provider_toml(
            "mock", mock.base_url, max_retries=0
        )
        kernel = BenchKernel(root, settings, manifests=["manifests"])
        try:
            kernel.start()
            assert kernel.process is not None
            pid = kernel.process.pid
            info = json.loads((kernel.data / "http.json").read_text())
            token = (kernel.data / "http-token").read_text().strip()
            asyncio.run(socket_turn(kernel.data, "hello, warm up"))  # the memory stack's loads
            time.sleep(2)  # the loads after the first answer settle
            idle = rss_mb(pid)
            for label, size in (("10 MB", HUGE), ("190 k chars", LONG)):
                text = text_of(size)
                for path in ("control socket", "HTTP"):
                    with Peak(pid) as peak:
                        if path == "HTTP":
                            outcome = http_turn(info["url"], token, text)
                        else:
                            outcome = asyncio.run(socket_turn(kernel.data, text))
                    over = peak.peak - idle
                    rows.append({"input": label, "path": path, "outcome": outcome, "peak_over_idle_mb": over})
        finally:
            kernel.stop()
            shutil.rmtree(root, ignore_errors=True)
    out = {"idle_mb": idle, "rows": rows, "target_mb": TARGET_MB}
    if options.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"kernel RSS, idle (memory stack loaded): {idle:.0f} MB; target: peak within +{TARGET_MB:.0f} MB")
    print(f"{'input':<14}{'path':<17}{'peak - idle':>12}  {'ratio to idle':>13}  outcome")
    for row in rows:
        over = row["peak_over_idle_mb"]
        print(f"{row['input']:<14}{row['path']:<17}{over:>9.0f} MB  {(idle + over) / idle:>12.2f}x  {row['outcome']}")
    return 0 if all(r["peak_over_idle_mb"] <= TARGET_MB for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
