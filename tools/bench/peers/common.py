"""What every peer's measurement shares: the mock out of process, process-tree PSS, waiting, the table.

Kept apart from the peers' drivers so that each driver is only what is peculiar to that peer (how it is
installed, configured, launched, asked), and so that the numbers of all peers are taken the same way.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.proctree import tree

ROOT = Path(__file__).resolve().parents[3]


class PeerError(RuntimeError):
    """A peer could not be installed or driven; the message becomes its one-line cell in the table."""


# --- the mock ---------------------------------------------------------------------------------------


class MockProcess:
    """The strict mock (`hologram.testing.mock_llm`) in a process of its own, so its CPU is not the peer's and the
    peers reach it over real HTTP as they would a vendor. Every request answers with `reply` (a plain
    text step): the measured turns use no tools, so a peer's extra requests (OpenClaw's `user` message
    after tool results, a title request) are answered too and show up as requests, not as a new turn."""

    def __init__(self, workdir: Path, *, vendor: str = "openai", reply: str = "hello") -> None:
        self.workdir, self.vendor = workdir, vendor
        self.script = workdir / "mock-steps.json"
        self.script.write_text(json.dumps({"steps": [], "default": {"content": reply}}))
        self.proc: subprocess.Popen[str] | None = None
        self.base_url = ""

    def __enter__(self) -> MockProcess:
        env = {**os.environ, "PYTHONPATH": str(ROOT / "tools")}
        argv = [sys.executable, "-m", "mock_llm", "--port", "0", "--vendor", self.vendor, "--script", str(self.script)]
        self.proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if "listening on" not in line:
            raise PeerError(f"mock_llm did not start (printed {line!r}); run {' '.join(argv)} to see why")
        self.base_url = line.split("listening on", 1)[1].strip()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=10)

    def _call(self, method: str, path: str) -> Any:
        root = self.base_url.removesuffix("/v1")
        req = urllib.request.Request(root + path, method=method, data=b"{}" if method == "POST" else None)
        with urllib.request.urlopen(req, timeout=10) as resp:
            return json.loads(resp.read())

    def requests(self) -> list[dict[str, Any]]:
        return list(self._call("GET", "/_mock/requests"))

    def reset(self) -> None:
        self._call("POST", "/_mock/reset")
        # reset drops the default step too: put it back.
        payload = json.dumps({"steps": [], **json.loads(self.script.read_text())}).encode()
        req = urllib.request.Request(self.base_url.removesuffix("/v1") + "/_mock/script", data=payload, method="POST")
        with urllib.request.urlopen(req, timeout=10):
            pass


def request_size(record: dict[str, Any]) -> dict[str, Any]:
    """Bytes of one chat request as the mock received it, ≈ tokens (bytes/4), its tools and system prompt."""
    body = record.get("body")
    size = int(record.get("headers", {}).get("content-length") or len(json.dumps(body)))
    out: dict[str, Any] = {"bytes": size, "tokens": size // 4, "status": record.get("status")}
    if isinstance(body, dict):
        tools = body.get("tools") or []
        out["tools"] = len(tools)
        out["tool_schema_bytes"] = len(json.dumps(tools))
        system = [
            m for m in body.get("messages") or [] if isinstance(m, dict) and m.get("role") in ("system", "developer")
        ]
        out["system_bytes"] = sum(len(json.dumps(m.get("content"))) for m in system)
        out["messages"] = len(body.get("messages") or [])
    return out


# --- processes --------------------------------------------------------------------------------------


def tree_pss_kb(root: int) -> tuple[int, int]:
    """(PSS in kB, number of processes) of `root`'s whole tree: a peer's helpers (Node workers, a gateway
    the CLI started) are its memory too."""
    total = count = 0
    for pid in tree(root):
        with contextlib.suppress(OSError, StopIteration):
            rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
            total += int(next(line for line in rollup.splitlines() if line.startswith("Pss:")).split()[1])
            count += 1
    return total, count


def kill_tree(proc: subprocess.Popen[Any]) -> None:
    """SIGTERM the peer's process group (it was started in its own session), then SIGKILL what is left."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=15)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)


def wait_for(
    probe: Callable[[], bool], *, timeout: float, what: str, proc: subprocess.Popen[Any] | None = None
) -> float:
    """Poll `probe` every 20 ms until it is true; the monotonic time it became true. Fails early, naming
    the peer's exit code, when the peer's process died meanwhile."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if probe():
            return time.monotonic()
        if proc is not None and proc.poll() is not None:
            raise PeerError(f"{what}: the process exited with code {proc.returncode} before it was ready")
        time.sleep(0.02)
    raise PeerError(f"{what}: not ready after {timeout:.0f} s")


def http(
    method: str, url: str, payload: Any = None, *, headers: dict[str, str] | None = None, timeout: float = 120
) -> tuple[int, bytes]:
    data = json.dumps(payload).encode() if payload is not None else None
    req = urllib.request.Request(
        url, data=data, method=method, headers={"Content-Type": "application/json", **(headers or {})}
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def http_up(url: str, headers: dict[str, str] | None = None) -> Callable[[], bool]:
    """A probe: the URL answers with any HTTP status below 500 (the server is listening and routing)."""

    def probe() -> bool:
        try:
            status, _ = http("GET", url, headers=headers, timeout=2)
        except (OSError, urllib.error.URLError):
            return False
        return status < 500

    return probe


def dir_size_bytes(*paths: Path) -> int:
    """Bytes on disk (allocated blocks, as `du` counts) of the install directories, hard links once."""
    seen: set[tuple[int, int]] = set()
    total = 0
    for root in paths:
        for dirpath, _dirs, files in os.walk(root):
            for name in files:
                with contextlib.suppress(OSError):
                    st = os.lstat(os.path.join(dirpath, name))
                    if (st.st_dev, st.st_ino) not in seen:
                        seen.add((st.st_dev, st.st_ino))
                        total += st.st_blocks * 512
    return total


def run(argv: list[str], *, env: dict[str, str] | None = None, timeout: float = 1200, log: Path | None = None) -> str:
    """Run a set-up command; on failure the error names the command, its exit code and its last output."""
    try:
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        raise PeerError(f"`{' '.join(argv[:4])}` timed out after {timeout:.0f} s") from exc
    if log is not None:
        with log.open("a") as fh:
            fh.write(f"$ {' '.join(argv)}\n{done.stdout}\n{done.stderr}\n")
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise PeerError(f"`{' '.join(argv[:4])}` exited {done.returncode}: {' | '.join(tail)}")
    return done.stdout


# --- results ----------------------------------------------------------------------------------------


@dataclass
class Result:
    """One system's column: measure key -> value (a number in the row's unit), and why a cell is empty."""

    system: str
    values: dict[str, float | None] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    error: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
