"""A peer's driver and the one measurement that runs every driver the same way.

A driver says only what is peculiar to its peer: how it is installed (`install`), configured against the
mock (`configure`), launched (`launch`), when it is ready (`ready`) and how a turn is sent (`turn`). The
measurement (`measure`) owns the clock, the mock's record and the process tree, so all columns are taken
alike: t0 is just before the launch command's process is created, "ready" is the peer's own readiness
signal (its health endpoint), "first answer" is the reply to a turn sent as soon as it is ready.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from bench.peers.common import (
    MockProcess,
    PeerError,
    Result,
    dir_size_bytes,
    kill_tree,
    request_size,
    run,
    tree_pss_kb,
    wait_for,
)


class Peer:
    name = "peer"
    version = ""
    # how the warm turn is sent, for the table's note: "HTTP" or "CLI"
    via = "HTTP"
    # the mock's vendor rules the peer is held to
    vendor = "openai"
    # seconds one install command may take (`--install-timeout`): installs are time-boxed, not awaited
    install_timeout = 1200.0

    def __init__(self, root: Path, port: int) -> None:
        self.root = root / self.key
        self.port = port
        self.home = self.root / "home"
        self.log = self.root / "run.log"

    @property
    def key(self) -> str:
        return self.name.lower()

    @property
    def system(self) -> str:
        return f"{self.name} {self.version}"

    # --- what a driver provides ---------------------------------------------------------------------

    def installed(self) -> bool:
        raise NotImplementedError

    def install(self) -> None:
        raise NotImplementedError

    def install_dirs(self) -> list[Path]:
        raise NotImplementedError

    def configure(self, mock_url: str) -> None:
        raise NotImplementedError

    def launch(self) -> tuple[list[str], dict[str, str]]:
        raise NotImplementedError

    def ready(self) -> Callable[[], bool]:
        raise NotImplementedError

    def turn(self, text: str, session: str) -> str:
        raise NotImplementedError

    # --- shared helpers -----------------------------------------------------------------------------

    def venv_install(self, spec: str) -> None:
        """A venv of its own, `pip install SPEC`: what a newcomer does."""
        venv = self.root / "venv"
        if not (venv / "bin" / "python").exists():
            run(["python3", "-m", "venv", str(venv)], log=self.log)
        run([str(venv / "bin" / "pip"), "install", "-q", spec], log=self.log, timeout=self.install_timeout)

    def env(self, **extra: str) -> dict[str, str]:
        """The environment a peer runs in: HOME is its own throwaway directory (peers keep their state
        under ~), no proxies or vendor keys leak in from the caller."""
        keep = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TERM", "TZ")}
        return {**keep, "HOME": str(self.home), "NO_COLOR": "1", **extra}


def _settled_pss(pid: int, *, timeout: float = 20.0) -> tuple[int, int]:
    """PSS of the tree once it stops moving (two samples 1 s apart within 1%), or after `timeout`:
    "idle" means after the turn's background work (a memory write, a title) has run."""
    last = tree_pss_kb(pid)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(1.0)
        now = tree_pss_kb(pid)
        if abs(now[0] - last[0]) <= 0.01 * max(1, last[0]):
            return now
        last = now
    return last


def _launch(peer: Peer, log: TextIO) -> tuple[subprocess.Popen[bytes], float]:
    argv, env = peer.launch()
    log.write(f"$ {' '.join(argv)}\n")
    log.flush()
    t0 = time.monotonic()
    proc = subprocess.Popen(
        argv,
        env=env,
        cwd=peer.home,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    return proc, t0


def _cold_start(peer: Peer, log: TextIO, ready_timeout: float, session: str) -> tuple[float, float]:
    """One more launch of the configured peer: (until ready, until the first answer), then stopped."""
    proc, t0 = _launch(peer, log)
    try:
        t_ready = wait_for(peer.ready(), timeout=ready_timeout, what=f"{peer.system} ready", proc=proc)
        peer.turn("hello", session)
        return t_ready - t0, time.monotonic() - t0
    finally:
        kill_tree(proc)


def measure(
    peer: Peer, mock: MockProcess, result: Result, *, warm_turns: int = 5, launches: int = 1, ready_timeout: float = 300
) -> None:
    """Fill `result` as far as the peer lets itself be driven; an exception leaves the cells measured so far.

    The first launch is on a fresh home (configured just before); with `launches` > 1 the peer is started
    again on that home and the start-up cells are the median of all launches (each one in `details`)."""
    result.values["install_mb"] = round(dir_size_bytes(*peer.install_dirs()) / 1e6)
    if peer.home.exists():
        shutil.rmtree(peer.home)
    peer.home.mkdir(parents=True)
    peer.configure(mock.base_url)
    mock.reset()
    with peer.log.open("a") as log:
        proc, t0 = _launch(peer, log)
        try:
            t_ready = wait_for(peer.ready(), timeout=ready_timeout, what=f"{peer.system} ready", proc=proc)
            result.values["ready_s"] = round(t_ready - t0, 3)
            reply = peer.turn("hello", "bench-1")
            t_first = time.monotonic()
            result.values["first_answer_s"] = round(t_first - t0, 3)
            result.details["first_reply"] = reply[:80]
            chats = [r for r in mock.requests() if "chat/completions" in r["path"]]
            if not chats:
                raise PeerError(f"{peer.system} answered {reply[:40]!r} without asking the model")
            sizes = [request_size(r) for r in chats]
            result.details["first_turn_requests"] = sizes
            # the turn's own request is the largest: the others are side calls (a title, a probe)
            turn_req = max(sizes, key=lambda s: int(s["bytes"]))
            result.values["request_hello_bytes"] = turn_req["bytes"]
            result.values["request_hello_tokens"] = turn_req["tokens"]
            for key in ("tools", "tool_schema_bytes", "system_bytes"):
                result.values[f"request_hello_{key}"] = turn_req.get(key)
            if len(sizes) > 1:
                result.notes["request_hello_tokens"] = f"{len(sizes)} requests in the turn, the largest counted"
            pss, procs = _settled_pss(proc.pid)
            result.values["idle_pss_mb"] = round(pss / 1024)
            result.values["idle_processes"] = procs
            times = []
            for n in range(warm_turns):
                started = time.monotonic()
                peer.turn("hello", "bench-1" if n % 2 else f"bench-warm-{n}")
                times.append(time.monotonic() - started)
            result.details["warm_turns_s"] = [round(t, 4) for t in times]
            result.values["warm_turn_s"] = round(statistics.median(times), 4)
            result.notes["warm_turn_s"] = peer.via
            rejected = [r for r in mock.requests() if r.get("rejected")]
            if rejected:
                result.details["mock_rejections"] = [str(r.get("status")) for r in rejected]
        finally:
            kill_tree(proc)
        starts = [(t_ready - t0, t_first - t0)]
        for n in range(1, launches):
            starts.append(_cold_start(peer, log, ready_timeout, f"bench-launch-{n}"))
    result.details["launches_s"] = [[round(r, 3), round(f, 3)] for r, f in starts]
    if launches > 1:
        result.values["ready_s"] = round(statistics.median(r for r, _ in starts), 3)
        result.values["first_answer_s"] = round(statistics.median(f for _, f in starts), 3)
        for key in ("ready_s", "first_answer_s"):
            result.notes[key] = f"median of {launches} launches"


def describe(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:160]


def summary(results: list[Result]) -> list[dict[str, Any]]:
    return [{"system": r.system, "error": r.error, "details": r.details} for r in results]
