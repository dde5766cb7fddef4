"""Agent-turn benchmark: the kernel's own overhead per turn, and the cost of a stage hook call.

    .venv/bin/python tools/bench/turn.py [--quick] [--json]

What is measured (all in this run, on this machine):
  * kernel overhead per turn at 1, 10, 50 tool calls per turn and 0 / 7 / 28 stage hooks: the whole turn
    loop — stage dispatch, argument validation, tool execution and result finalising, SQLite persistence of
    every event, history rebuild — with an in-process LLM that answers instantly from a script. The mock
    LLM's own time is therefore zero by construction; the provider/HTTP client is *not* included (its
    cost per request is in the llm tests' domain). Tools are kernel tools returning at once.
    Target: < 5 ms per turn (+ 0.3 ms per remote hook call).
  * pluggy dispatch cost per in-process hook: `StageDispatcher.run` with N no-op function hooks, per hook.
  * remote hook call: a real SDK plugin process hooking `before_output`, called through the supervisor
    (`stage/invoke` over stdio JSON-RPC), per call.
Ratios are printed against the baseline turn (1 tool call, 0 hooks) measured in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

from hologram.agent import Agent, KernelTool, ToolInvocation, ToolRegistry
from hologram.llm import ChatRequest, ChatResult, ToolCall
from hologram.protocol import STAGE_NAMES
from hologram.sessions import SessionStore
from hologram.settings import AgentSettings
from hologram.stages import FunctionHook, RemoteHook, StageContext, StageDispatcher

SCHEMA = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}


class ScriptedLLM:
    """Answers instantly: a response with N tool calls, then a plain answer; repeat."""

    def __init__(self, calls: int) -> None:
        self.calls = calls
        self.step = 0

    async def complete(self, request: ChatRequest, on_delta: Any = None) -> ChatResult:
        self.step += 1
        if self.step % 2:
            tool_calls = tuple(ToolCall(f"c{self.step}_{i}", "echo", json.dumps({"x": i})) for i in range(self.calls))
            return ChatResult("", "think", tool_calls, None, "tool_calls")
        return ChatResult("done", "final", (), None, "stop")


async def echo(arguments: dict[str, Any], invocation: ToolInvocation) -> str:
    return str(arguments["x"])


def noop(view: dict[str, Any]) -> None:
    return None


def make_agent(db: Path, calls: int, hooks: int) -> Agent:
    stages = StageDispatcher()
    per_stage = hooks // len(STAGE_NAMES)
    for stage in STAGE_NAMES:
        stages.register_all(stage, [(f"h{i}", FunctionHook(f"h{i}", stage, noop)) for i in range(per_stage)])
    tools = ToolRegistry()
    tools.add_kernel_tool(KernelTool("echo", "echo x", echo, SCHEMA, parallel_safe=True))
    return Agent(llm=ScriptedLLM(calls), store=SessionStore(db), tools=tools, stages=stages, settings=AgentSettings())


async def turn_cost(root: Path, calls: int, hooks: int, turns: int) -> dict[str, float]:
    agent = make_agent(root / f"s-{calls}-{hooks}.db", calls, hooks)
    samples = []
    for i in range(turns + 3):
        sid = f"s{i}"  # a fresh session per turn: the history rebuild stays the same size
        started = time.perf_counter()
        await agent.run_turn("go", session_id=sid)
        if i >= 3:  # warm-up
            samples.append((time.perf_counter() - started) * 1000)
    agent.store.close()
    hook_calls = (hooks // 7) * (5 + 2 * calls)  # 5 once-per-turn stages (post_action twice) …
    hook_calls += hooks // 7  # … second post_action
    return {
        "calls": calls,
        "hooks": hooks,
        "hook_calls": hook_calls,
        "p50_ms": statistics.median(samples),
        "mean_ms": statistics.fmean(samples),
    }


async def dispatch_cost(hooks: int, rounds: int) -> float:
    stages = StageDispatcher()
    stages.register_all("on_input", [(f"h{i}", FunctionHook(f"h{i}", "on_input", noop)) for i in range(hooks)])
    ctx = StageContext("s", "t", input="hello")
    started = time.perf_counter()
    for _ in range(rounds):
        await stages.run("on_input", ctx)
    return (time.perf_counter() - started) / rounds / hooks * 1e6


PLUGIN = textwrap.dedent(
    """
    from hologram.sdk import Plugin
    plugin = Plugin("benchhook")

    @plugin.stage("before_output")
    def hook(ctx):
        return {"output": ctx["output"]}

    if __name__ == "__main__":
        plugin.run()
    """
)
MANIFEST = """\
[plugin]
name = "benchhook"
version = "0.1.0"
description = "bench"
run = {{ module = "benchhook", env = {{ PYTHONPATH = "{path}" }} }}

[stages]
before_output = {{ order = 1 }}
"""


async def remote_hook_cost(rounds: int) -> float:
    from hologram.sdk.testing import PluginHarness

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "benchhook.py").write_text(PLUGIN)
        (root / "benchhook.toml").write_text(MANIFEST.format(path=root))
        async with PluginHarness.from_manifest(root / "benchhook.toml") as harness:
            stages = StageDispatcher()
            stages.register(
                "before_output",
                "benchhook",
                RemoteHook(harness.supervisor, "benchhook", "before_output", timeout_s=5, scope="all"),
            )
            ctx = StageContext("s", "t", output="x" * 200)
            for _ in range(50):
                await stages.run("before_output", ctx)
            started = time.perf_counter()
            for _ in range(rounds):
                await stages.run("before_output", ctx)
            assert not ctx.errors, ctx.errors
            return (time.perf_counter() - started) / rounds * 1000


async def main(quick: bool, as_json: bool) -> int:
    turns = 20 if quick else 100
    out: dict[str, Any] = {"turns": []}
    with tempfile.TemporaryDirectory() as tmp:
        for calls in (1, 10, 50):
            for hooks in (0, 7, 28):
                out["turns"].append(await turn_cost(Path(tmp), calls, hooks, turns))
    base = out["turns"][0]["p50_ms"]
    out["dispatch_us_per_hook"] = {n: await dispatch_cost(n, 200 if quick else 2000) for n in (1, 7, 28)}
    out["remote_hook_ms"] = await remote_hook_cost(200 if quick else 1000)
    if as_json:
        print(json.dumps(out, indent=2))
        return 0
    print("kernel overhead per turn (LLM answers instantly; p50 over", turns, "turns)")
    print(f"{'calls':>6} {'hooks':>6} {'hook calls':>11} {'p50 ms':>8} {'mean ms':>8} {'× base':>7}  target")
    worst = 0.0
    for row in out["turns"]:
        verdict = "ok" if row["p50_ms"] < 5.0 else "OVER 5 ms"
        worst = max(worst, row["p50_ms"])
        print(
            f"{row['calls']:>6} {row['hooks']:>6} {row['hook_calls']:>11} {row['p50_ms']:>8.2f} "
            f"{row['mean_ms']:>8.2f} {row['p50_ms'] / base:>7.1f}  {verdict}"
        )
    print(
        "pluggy dispatch per in-process hook:",
        ", ".join(f"{n} hooks {v:.1f} µs" for n, v in out["dispatch_us_per_hook"].items()),
    )
    print(f"remote hook call (real plugin process, stage/invoke): {out['remote_hook_ms']:.3f} ms  (target 0.3 ms)")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    sys.exit(asyncio.run(main(options.quick, options.json)))
