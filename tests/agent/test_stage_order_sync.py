"""`hologram up --watch` adopts a rebuilt lock with `Kernel.replace_lock`; the agent's lock-changed listener
re-installs the stage hooks from it, so the next turn runs them in the new order (`StageOrderSync`, which
`attach_agent` registers with `Kernel.on_lock_changed`).

Real objects: `Kernel` (not run; its supervisor's plugins are marked ready by hand), `Lock`, in-process SDK
plugins whose hooks run in the turn, and the turn loop with an instant scripted LLM.

Mutation check (done): making `StageOrderSync.__call__` return before re-installing turns
``test_a_rebuilt_lock_reorders_the_hooks_before_the_next_turn`` red (the second turn still runs a, b and
never c); so does `Kernel.replace_lock` not calling its listeners.
"""

from __future__ import annotations

import asyncio
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hologram.agent import Agent, ToolRegistry
from hologram.agent.attach import StageOrderSync
from hologram.kernel import Kernel
from hologram.llm import ChatRequest, ChatResult
from hologram.plan.lock import LOCK_VERSION, Lock
from hologram.sdk.local import LocalEndpoint
from hologram.sessions import SessionStore
from hologram.stages import StageDispatcher
from hologram.supervisor import State

HOOK = """
from hologram.sdk import Plugin
plugin = Plugin("{name}")

@plugin.stage("on_input")
def hook(ctx):
    return {{"input": ctx["input"] + " {name}"}}
"""


class Instant:
    async def complete(self, request: ChatRequest, on_delta: Any = None) -> ChatResult:
        return ChatResult("ok", None, (), None, "stop")


@pytest.fixture
def modules(tmp_path: Path) -> Iterator[None]:
    for name in ("a", "b", "c"):
        (tmp_path / f"order_sync_{name}.py").write_text(textwrap.dedent(HOOK.format(name=name)))
    sys.path.insert(0, str(tmp_path))
    yield
    sys.path.remove(str(tmp_path))
    for name in ("a", "b", "c"):
        sys.modules.pop(f"order_sync_{name}", None)


def entry(name: str, order: int) -> dict[str, Any]:
    return {"name": name, "run": {"inproc": f"order_sync_{name}"}, "stages": {"on_input": {"order": order}}}


def lock(path: Path, content_hash: str, order: list[str]) -> Lock:
    """Every lock has the same three plugins (nothing restarts when it is adopted); the order differs."""
    entries = [{"name": "kernel"}, *(entry(n, 10) for n in ("a", "b", "c"))]
    data = {
        "lock-version": LOCK_VERSION,
        "content-hash": content_hash,
        "stages": {"on_input": order},
        "plugin": entries,
    }
    return Lock.from_data(path, data)


def inputs(store: SessionStore, sid: str) -> list[str]:
    return [str(e.data["text"]) for e in store.events(sid) if e.kind == "input"]


def test_a_rebuilt_lock_reorders_the_hooks_before_the_next_turn(tmp_path: Path, modules: None) -> None:
    path = tmp_path / "hologram.lock"
    kernel = Kernel(lock(path, "h1", ["a", "b"]), tmp_path)
    for plugin in kernel.supervisor.plugins.values():
        plugin.state = State.READY
        plugin.local = LocalEndpoint.load(f"order_sync_{plugin.name}")  # as its start does
    stages = StageDispatcher()
    sync = StageOrderSync(kernel.supervisor, stages)
    sync(kernel.lock)  # as attach_agent does
    kernel.on_lock_changed(sync)
    store = SessionStore(tmp_path / "sessions.db")
    agent = Agent(llm=Instant(), store=store, tools=ToolRegistry(), stages=stages)

    asyncio.run(agent.run_turn("x", session_id="s"))
    assert asyncio.run(kernel.replace_lock(lock(path, "h2", ["c", "b", "a"]))) == []  # what watch.rebuild does
    asyncio.run(agent.run_turn("y", session_id="s"))
    asyncio.run(agent.run_turn("z", session_id="s"))
    assert inputs(store, "s") == ["x a b", "y c b a", "z c b a"]
    assert sync.installs == 2  # once at attach, once for the rebuilt lock; turns cost nothing

    asyncio.run(kernel.replace_lock(lock(path, "h2", ["a", "c"])))
    asyncio.run(agent.run_turn("w", session_id="s"))
    assert inputs(store, "s")[-1] == "w a c"
    assert list(kernel.lock.stages["on_input"]) == ["a", "c"]
    store.close()
    kernel.ring.close()
