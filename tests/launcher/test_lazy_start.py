"""``[start] lazy = true`` (docs/manifest.md): the supervisor leaves such a plugin stopped at start, offers its
manifest's tools, and the first call of one starts it and is answered by it; a lazy plugin that another
plugin depends on, or with stage hooks, starts at once. Real plugin processes (tests/launcher/testplug.py).

Mutation checks (done): `Supervisor.start` not leaving lazy plugins stopped turns
``test_a_lazy_plugin_starts_at_the_first_call_of_its_tools`` red (it starts at once: a "start" event before the
call); `invoke_tool` not starting it turns it red (NOT_READY: "plugin idle is stopped"); `waits_for_a_call`
ignoring dependents turns ``test_a_lazy_plugin_another_one_needs_starts_at_once`` red (``needs`` waits for ever).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from hologram.supervisor import State
from hologram.supervisor.core import ON_DEMAND_REASON
from hologram.tools.outcome import ToolOutcome
from tests.kit.wait import wait_until_async
from tests.launcher.kit import events, specs_for, supervisor_for, wait_state, write_plugin

pytestmark = pytest.mark.slow

ECHO = """
[[tools]]
name = "echo"
description = "echo the text"
parameters = { type = "object", properties = { text = { type = "string" } }, required = ["text"] }
"""


def starts(directory: Path, name: str) -> int:
    return sum(1 for e in events(directory) if e["plugin"] == name and e["event"] == "start")


def test_a_lazy_plugin_starts_at_the_first_call_of_its_tools(tmp_path: Path) -> None:
    write_plugin(tmp_path, "idle", lazy=True, extra=ECHO)
    write_plugin(tmp_path, "eager", provides=["eager.f"])

    async def scenario() -> tuple[ToolOutcome, ToolOutcome]:
        supervisor = supervisor_for(tmp_path)
        supervisor.start()
        try:
            await wait_state(supervisor, "eager", State.READY)
            idle = supervisor.plugins["idle"]
            assert (idle.state, idle.reason, idle.pid) == (State.STOPPED, ON_DEMAND_REASON, None)
            row = next(p for p in supervisor.snapshot()["plugins"] if p["name"] == "idle")
            assert row["on_demand"] is True and row["state"] == "stopped"
            assert [t["name"] for t in supervisor.tool_catalog() if t["plugin"] == "idle"] == ["echo"]
            assert starts(tmp_path, "idle") == 0, "not started before a call"
            # two calls at once: one start, both answered by the plugin
            first, second = await asyncio.gather(
                supervisor.invoke_tool("idle", "echo", {"text": "a"}, call_id="c1", session_id=None),
                supervisor.invoke_tool("idle", "echo", {"text": "b"}, call_id="c2", session_id=None),
            )
            assert idle.state is State.READY and idle.pid is not None
            assert not next(p for p in supervisor.snapshot()["plugins"] if p["name"] == "idle")["on_demand"]
            return first, second
        finally:
            await supervisor.shutdown()

    assert asyncio.run(scenario()) == (ToolOutcome("idle: a"), ToolOutcome("idle: b"))
    assert starts(tmp_path, "idle") == 1


def test_a_lazy_plugin_another_one_needs_starts_at_once(tmp_path: Path) -> None:
    write_plugin(tmp_path, "store", provides=["store.f"], lazy=True, extra=ECHO)
    write_plugin(tmp_path, "needs", requires=["store.f"])
    write_plugin(tmp_path, "toolless", lazy=True)  # no [[tools]]: nothing could ever start it, so it starts

    async def scenario() -> None:
        supervisor = supervisor_for(tmp_path)
        supervisor.start()
        try:
            for name in ("store", "needs", "toolless"):
                await wait_state(supervisor, name, State.READY)
            assert not any(p.on_demand for p in supervisor.plugins.values())
        finally:
            await supervisor.shutdown()

    asyncio.run(scenario())


def test_a_lazy_plugin_a_person_stopped_is_not_started_by_a_call(tmp_path: Path) -> None:
    write_plugin(tmp_path, "idle", lazy=True, extra=ECHO)

    async def scenario() -> str:
        supervisor = supervisor_for(tmp_path)
        supervisor.start()
        try:
            await wait_state(supervisor, "idle", State.STOPPED)
            await supervisor.stop_plugin("idle")
            assert not any(t["plugin"] == "idle" for t in supervisor.tool_catalog()), "its tools went with it"
            try:
                await supervisor.invoke_tool("idle", "echo", {"text": "a"}, call_id="c1", session_id=None)
            except Exception as exc:  # RpcError NOT_READY
                return str(exc)
            return "answered"
        finally:
            await supervisor.shutdown()

    assert "plugin idle is stopped" in asyncio.run(scenario())
    assert starts(tmp_path, "idle") == 0


def test_a_plugin_added_at_run_time_wakes_the_lazy_provider_it_requires(tmp_path: Path) -> None:
    """`hologram plugin add` of a plugin requiring a facility of a lazy one left stopped: the provider starts
    for it (the added plugin would otherwise wait for a tool call that never comes). Mutation-checked:
    `schedule` not calling `_wake_on_demand` turns it red (``needs`` waits for store.f for ever)."""
    write_plugin(tmp_path, "store", provides=["store.f"], lazy=True, extra=ECHO)

    async def scenario() -> None:
        supervisor = supervisor_for(tmp_path)
        supervisor.start()
        try:
            store = supervisor.plugins["store"]
            await wait_until_async(lambda: store.state is State.STOPPED, timeout=20, what="store left on demand")
            assert store.on_demand and starts(tmp_path, "store") == 0
            write_plugin(tmp_path, "needs", requires=["store.f"])
            await supervisor.replace_specs(specs_for(tmp_path))
            for name in ("store", "needs"):
                await wait_state(supervisor, name, State.READY)
            assert not store.on_demand, "running for a plugin that needs it, not waiting for a call"
        finally:
            await supervisor.shutdown()

    asyncio.run(scenario())
    assert starts(tmp_path, "store") == 1
