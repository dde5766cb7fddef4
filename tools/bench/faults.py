"""Fault injection: kill -9 the kernel and its plugins at random points of tool-using turns, then check.

    .venv/bin/python tools/bench/faults.py [--kills 50] [--seed 1]

The default graph (`hologram build`: every built-in plugin), the strict mock as the provider, shell and code
allowed without asking. Every turn runs four tools — a shell command and a Python program that each leave a
process running in a new session (`setsid sleep …`, `Popen(start_new_session=True)`), a file write and a
note — and then answers. A turn is started with `hologram ask` (a new process, in one of a few sessions);
after a random delay the kernel or one of the tool plugins is killed with SIGKILL; then:

* after a plugin kill: it must come back (the crash policy restarts it; after four crashes within five
  minutes the run restarts it with `hologram plugin restart`), and nothing its calls started may be left;
* after a kernel kill: nothing the kernel, its plugins or their calls started may be left; the kernel is
  started again;
* at the end: the kernel is stopped and started once more; every session is read back (each tool call has
  exactly one result: `pairing_problems`), gets one more turn, which the strict mock must accept (it
  answers a broken history with the vendors' 400), and every turn that `hologram ask` reported finished
  must still be there (its output event, by turn id): nothing acknowledged was lost.

Printed: kills by target, orphaned processes (target 0), sessions the mock rejected (target 0), lost
acknowledged turns (target 0). Exit status 1 if any target is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from hologram.api import turn as api

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/: mock_llm, bench

from bench._kernel import HOLOGRAM, BenchKernel, provider_toml
from hologram.kernel.control import call
from hologram.sessions import SessionStore, pairing_problems
from mock_llm import MockLLM

MARK = "7919"  # the sleep duration tool calls leave behind: the marker of what must not survive
TOOLS = ("shell", "code", "files", "notes")


def turn_step() -> dict[str, Any]:
    code = (
        "import subprocess, time\n"
        f"subprocess.Popen(['sleep', '{MARK}.2'], start_new_session=True)\n"
        "time.sleep(0.4)\nprint('code ok')\n"
    )
    shell = f"setsid sleep {MARK}.1 & sleep 0.4; echo sh"
    calls = [
        {"id": "s{n}", "name": "shell_run", "arguments": json.dumps({"command": shell})},
        {"id": "c{n}", "name": "code_run", "arguments": json.dumps({"code": code})},
        {"id": "f{n}", "name": "files_write", "arguments": json.dumps({"path": "faults.txt", "content": "x\n"})},
        {"id": "n{n}", "name": "notes_create", "arguments": json.dumps({"title": "fault {n}", "body": "b"})},
    ]  # fmt: skip
    return {
        "by_last_role": {
            "user": {"reasoning_content": "use the tools", "tool_calls": calls},
            "tool": {"reasoning_content": "done", "content": "all done"},
        }
    }


def survivors(root: Path) -> list[str]:
    """Processes left of the run: a marked sleep, or anything running with a working directory in `root`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if f"sleep {MARK}" in cmdline or cwd.startswith(str(root)):
            found.append(f"{entry.name}: {cmdline[:80]} (cwd {cwd})")
    return found


def wait_for(predicate: Any, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return bool(predicate())


def plugin_pids(kernel: BenchKernel) -> dict[str, int]:
    try:
        status = kernel.status()
    except Exception:
        return {}
    return {p["name"]: p["pid"] for p in status["plugins"] if p["name"] in TOOLS and p["pid"] and p["state"] == "ready"}


def all_ready(kernel: BenchKernel) -> bool:
    try:
        plugins = kernel.status()["plugins"]
    except Exception:
        return False
    for plugin in plugins:
        if plugin["state"] == "failed":  # four crashes within five minutes: a person would restart it
            subprocess.run([*HOLOGRAM, "plugin", "restart", plugin["name"], "--data", str(kernel.data)], check=False)
    return all(p["state"] == "ready" or p.get("on_demand") for p in plugins)  # lazy: up until a call


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kills", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--sessions", type=int, default=3)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp, MockLLM("deepseek") as mock:
        root = Path(tmp)
        mock.script([], default=turn_step())
        settings = (
            "[agent]\nmax_steps = 4\ntool_timeout_s = 30\n\n"
            + provider_toml("mock", mock.base_url, max_retries=0, timeout_s=20)
            + '\n[plugins.shell]\nmode = "allow"\n\n[plugins.code]\nmode = "allow"\n'
        )
        kernel = BenchKernel(root, settings, builtins=True)
        kernel.start()
        sessions: list[str | None] = [None] * args.sessions
        acknowledged: list[tuple[str, str]] = []
        kills: Counter[str] = Counter()
        orphans: list[str] = []
        for i in range(args.kills):
            slot = i % args.sessions
            command = [*HOLOGRAM, "ask", "--json", "--data", str(kernel.data)]
            if sessions[slot]:
                command += ["--session", str(sessions[slot])]
            client = subprocess.Popen(
                [*command, f"turn {i}"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
            time.sleep(rng.uniform(0.05, 2.0))  # a random point of the turn (spread, not a synchronisation)
            target = "kernel" if rng.random() < 0.3 else rng.choice(TOOLS)
            pids = plugin_pids(kernel)
            if target != "kernel" and target in pids:
                os.kill(pids[target], signal.SIGKILL)
            else:
                target = "kernel"
                assert kernel.process is not None
                kernel.process.send_signal(signal.SIGKILL)
            kills[target] += 1
            out, _ = client.communicate(timeout=120)
            if client.returncode == 0:
                result = json.loads(out)
                sessions[slot] = result.get("session") or sessions[slot]
                if result.get("turn"):
                    acknowledged.append((result["session"], result["turn"]))
            if target == "kernel":
                assert kernel.process is not None
                kernel.process.wait(timeout=30)
                if not wait_for(lambda: not survivors(root), 15):
                    orphans += [f"after kill {i} (kernel): {s}" for s in survivors(root)]
                kernel.start()
            else:
                if not wait_for(lambda: all_ready(kernel), 60):
                    raise SystemExit(f"kill {i}: the graph did not come back: {kernel.status()}")
                left = [s for s in survivors(root) if f"sleep {MARK}" in s]
                if left and not wait_for(lambda: not [s for s in survivors(root) if f"sleep {MARK}" in s], 15):
                    orphans += [f"after kill {i} ({target}): {s}" for s in left]
            if sessions[slot] is None:  # the turn died before it said its session: take the newest
                listed = call(kernel.data, api.SESSIONS_LIST)["sessions"]
                known = {s for s in sessions if s}
                fresh = [s["id"] for s in listed if s["id"] not in known]
                sessions[slot] = fresh[0] if fresh else None
        kernel.stop()
        if not wait_for(lambda: not survivors(root), 15):
            orphans += [f"after the final stop: {s}" for s in survivors(root)]
        store = SessionStore(kernel.data / "sessions.db")
        every = [s["id"] for s in store.list_sessions()]
        broken = {sid: pairing_problems(store.events(sid)) for sid in every}
        present = {(e.session, e.turn) for sid in every for e in store.events(sid) if e.kind == "output"}
        store.close()
        lost = [turn for turn in acknowledged if turn not in present]
        kernel.start()
        mock.reset()
        mock.script([], default={"reasoning_content": "r", "content": "still fine"})
        rejected = []
        for sid in every:
            done = subprocess.run(
                [*HOLOGRAM, "ask", "--json", "--data", str(kernel.data), "--session", sid, "are we ok?"],
                capture_output=True,
                text=True,
                timeout=120,
            )
            if done.returncode != 0:
                rejected.append(f"{sid}: {done.stderr.strip()[:200]}")
        rejected += [f"{r.status}: {r.body}"[:200] for r in mock.rejections]
        kernel.stop()
        if not wait_for(lambda: not survivors(root), 15):
            orphans += [f"at the end: {s}" for s in survivors(root)]
    print(f"kills: {sum(kills.values())} ({', '.join(f'{k} {v}' for k, v in sorted(kills.items()))})")
    print(f"turns acknowledged by hologram ask: {len(acknowledged)}; sessions: {len(every)}")
    print(f"orphaned processes: {len(orphans)}")
    for line in orphans[:20]:
        print(f"  {line}")
    print(f"sessions with broken pairing on disk: {sum(1 for p in broken.values() if p)}")
    print(f"sessions the strict mock rejected afterwards: {len(rejected)}")
    for line in rejected[:10]:
        print(f"  {line}")
    print(f"acknowledged turns lost: {len(lost)}")
    return 0 if not orphans and not rejected and not lost and not any(broken.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
