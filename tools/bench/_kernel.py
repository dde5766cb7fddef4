"""A real `hologram up` for the benchmarks: a scratch directory, a lock, settings, the process, and turns.

Benchmarks measure the product's real path, so they start the kernel the way a user does (a subprocess
running `hologram up`) and talk to it the way clients do (`hologram ask`, or the control socket).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import FrameType
from typing import Any

from hologram.kernel.control import call

HOLOGRAM = [sys.executable, "-m", "hologram"]

KERNEL_ENV: dict[str, str] = {}
"""Variables set for the kernel's process only (``hologram up``), over this process's environment: an A/B of an
interpreter setting read at start-up (``PYTHONMALLOC=malloc``) without changing the bench's own interpreter.
Plugins never see them unless the kernel passes them on (hologram/supervisor/environment.py)."""


def kernel_env_option(values: list[str]) -> None:
    """``--kernel-env NAME=VALUE`` (repeatable) into :data:`KERNEL_ENV`."""
    for value in values:
        name, sep, setting = value.partition("=")
        if not sep or not name:
            raise SystemExit(f"--kernel-env {value!r}: give NAME=VALUE")
        KERNEL_ENV[name] = setting


def configure_bytecode(scratch: Path, cache: bool = True) -> str:
    """Give the processes a benchmark starts a bytecode cache, as a user's install has one: with
    PYTHONDONTWRITEBYTECODE=1 inherited (set on some CI and sandbox machines) every `hologram` process compiles
    the project's own modules again at every start (an editable install has no .pyc), which is not what users
    run. The cache is private to `scratch` (PYTHONPYCACHEPREFIX), so nothing lands in the repository; the
    benchmarks' warm-up runs fill it. `cache` False keeps the environment as it is. Returns what was done."""
    if not cache:
        return f"as inherited (PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', 'unset')})"
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = str(scratch / "pycache")
    return "private cache (PYTHONPYCACHEPREFIX), warmed"


def provider_toml(name: str, base_url: str, *, kind: str = "deepseek", **extra: Any) -> str:
    lines = ["[[providers]]", f'name = "{name}"', f'kind = "{kind}"', f'base_url = "{base_url}"']
    lines.append('model = "deepseek-chat"' if kind == "deepseek" else 'model = "gpt-4o-mini"')
    lines += [f"{key} = {json.dumps(value)}" for key, value in extra.items()]
    return "\n".join(lines) + "\n"


def stop_on_terminate() -> None:
    """Make a SIGTERM to this process end it as Ctrl-C does, so the ``finally`` blocks that stop its kernels run.

    Why: a bench tool killed with the default SIGTERM ends at once, and the kernel it started — a process of its own
    — ran on (an orphaned `soak_diag.py` kernel at ~20 % of a core spoiled the next soak's start, issue 39 item 7).
    Called by :meth:`BenchKernel.start` and by every tool that starts `hologram up` itself, before the process.
    Only from the main thread (where Python runs signal handlers) and only over the default action, never over a
    handler someone else installed."""
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return

    def terminate(signum: int, _frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, terminate)


class BenchKernel:
    """`hologram up` in `root` with `settings` (TOML text); builtins only when `builtins` is true; `manifests`:
    directories (relative to `root`) of more manifests (`hologram build -m`)."""

    def __init__(
        self, root: Path, settings: str, *, builtins: bool = False, manifests: list[str] | None = None
    ) -> None:
        self.root = root
        self.data = root / "data"
        self.lock = root / "hologram.lock"
        self.process: subprocess.Popen[str] | None = None
        root.mkdir(parents=True, exist_ok=True)
        args = ["build", "-o", str(self.lock)] + ([] if builtins else ["--no-discover"])
        for directory in manifests or []:
            args += ["-m", directory]
        subprocess.run([*HOLOGRAM, *args], check=True, capture_output=True, cwd=root)
        self.data.mkdir(exist_ok=True)
        path = self.data / "settings.toml"
        path.write_text(settings)
        path.chmod(0o600)

    def start(self, timeout: float = 60) -> float:
        """Start and wait until every plugin is ready; returns the seconds that took."""
        stop_on_terminate()
        started = time.perf_counter()
        self.process = subprocess.Popen(
            [*HOLOGRAM, "up", "--port", "0", "--lock", str(self.lock), "--data", str(self.data)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=self.root,
            env={**os.environ, **KERNEL_ENV},
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"hologram up exited with {self.process.returncode}")
            try:
                status = call(self.data, "status", timeout=5)
            except Exception:
                time.sleep(0.02)
                continue
            if all(p["state"] == "ready" or p.get("on_demand") for p in status["plugins"]):
                return time.perf_counter() - started
            time.sleep(0.02)
        raise RuntimeError("the kernel did not get ready")

    def ask(self, text: str) -> tuple[float, dict[str, Any]]:
        """One `hologram ask --json` (a new process, as a user runs it): (seconds, result)."""
        started = time.perf_counter()
        done = subprocess.run(
            [*HOLOGRAM, "ask", "--json", "--data", str(self.data), text], capture_output=True, text=True, timeout=120
        )
        elapsed = time.perf_counter() - started
        if done.returncode != 0:
            raise RuntimeError(f"hologram ask failed: {done.stderr}")
        result: dict[str, Any] = json.loads(done.stdout)
        return elapsed, result

    def status(self) -> dict[str, Any]:
        result: dict[str, Any] = call(self.data, "status")
        return result

    def stop(self) -> None:
        if self.process is not None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self.process = None
