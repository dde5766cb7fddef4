"""The supervisor with real plugin processes: readiness-driven start, timeouts, crashes, stop order."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

import pytest

from hologram.supervisor import State
from hologram.tools.outcome import ToolOutcome
from tests.kit.wait import wait_until_async
from tests.launcher.kit import events, first, supervisor_for, wait_state, write_plugin

pytestmark = pytest.mark.slow


def test_dependent_starts_when_its_requirement_is_ready_not_after_unrelated_plugins(tmp_path: Path) -> None:
    """A wave launcher would start `dependent` only after `laggard` (same level as `slow`) is ready.

    `laggard` is held starting by a gate file that the test opens only once `dependent` is ready, so "still
    starting" does not depend on how long the processes take to start (a wave launcher never gets
    `dependent` ready: red). "The moment slow.f was announced" is measured in the supervisor (its state
    changes), where it is a matter of the event loop, not of a new process's Python start-up."""
    gate = tmp_path / "laggard-may-be-ready"
    write_plugin(tmp_path, "slow", provides=["slow.f"], config={"ready_delay": 1.0})
    write_plugin(tmp_path, "laggard", provides=["lag.f"], config={"ready_gate": str(gate)}, timeout_s=60)
    write_plugin(tmp_path, "dependent", requires=["slow.f"])
    changes: list[tuple[str, State, float]] = []

    async def scenario() -> None:
        supervisor = supervisor_for(tmp_path)
        supervisor.listeners.append(lambda p: changes.append((p.name, p.state, time.monotonic())))
        supervisor.start()
        try:
            await wait_state(supervisor, "dependent", State.READY)
            assert supervisor.plugins["laggard"].state is State.STARTING, "the unrelated plugin is still starting"
            gate.touch()
            await wait_state(supervisor, "laggard", State.READY)
        finally:
            await supervisor.shutdown()

    asyncio.run(scenario())
    slow_ready = first(tmp_path, "slow", "ready")
    dependent_start = first(tmp_path, "dependent", "start")
    laggard_ready = first(tmp_path, "laggard", "ready")
    assert slow_ready <= dependent_start < laggard_ready
    (slow_ready_at,) = [t for name, state, t in changes if name == "slow" and state is State.READY]
    (dependent_spawned_at,) = [t for name, state, t in changes if name == "dependent" and state is State.STARTING]
    assert abs(dependent_spawned_at - slow_ready_at) < 0.8, "spawned the moment slow.f was announced"


def test_start_timeout_fails_the_plugin_and_blocks_only_its_dependents(tmp_path: Path) -> None:
    write_plugin(tmp_path, "stuck", provides=["stuck.f"], config={"never_ready": True}, timeout_s=1, restart="never")
    # `mute` must answer initialize within its start timeout (a Python start-up) to be failed for never announcing
    # its facility: 5 s, not 1 s, so a slow or busy machine does not turn it into "no answer to initialize"
    write_plugin(tmp_path, "mute", provides=["mute.f"], timeout_s=5, restart="never", env={"TESTPLUG_SKIP_READY": "1"})
    write_plugin(tmp_path, "victim", requires=["stuck.f"])
    write_plugin(tmp_path, "bystander", provides=["ok.f"])

    async def scenario() -> None:
        supervisor = supervisor_for(tmp_path)
        supervisor.start()
        try:
            await wait_state(supervisor, "stuck", State.FAILED)
            await wait_state(supervisor, "bystander", State.READY)
            stuck = supervisor.plugins["stuck"]
            assert stuck.reason == "start failed: not ready within 1 s (no answer to initialize)"
            await wait_state(supervisor, "mute", State.FAILED)
            assert supervisor.plugins["mute"].reason == "start failed: not ready within 5 s (never announced mute.f)"
            assert stuck.pid is None, "the stuck process was killed"
            victim = supervisor.snapshot()["plugins"][
                [p["name"] for p in supervisor.snapshot()["plugins"]].index("victim")
            ]
            assert victim["state"] == "waiting"
            assert victim["waiting_on"] == [{"facility": "stuck.f", "provider": "stuck"}]
            assert victim["reason"].startswith("waiting on stuck.f from stuck, which failed: start failed: not ready")
        finally:
            await supervisor.shutdown()

    asyncio.run(scenario())
    assert not [e for e in events(tmp_path) if e["plugin"] == "victim"], "the dependent was never spawned"


def test_crash_restarts_after_1_2_3_seconds_then_stops_on_the_4th(tmp_path: Path) -> None:
    """The delays are bounded from below by what the processes did (crash, then the next start) and from above
    by the supervisor's own state changes (crashed → restarted): the plugin's Python start-up is in the first
    gap and not in the second, so a slow machine cannot push either past its bound."""
    write_plugin(tmp_path, "flaky", provides=["flaky.f"], config={"crash_after": 0.2})
    changes: list[tuple[State, float]] = []

    async def scenario() -> list[str]:
        supervisor = supervisor_for(tmp_path)
        seen: list[str] = []
        supervisor.listeners.append(lambda p: seen.append(f"{p.state.value}: {p.reason}"))
        supervisor.listeners.append(lambda p: changes.append((p.state, time.monotonic())))
        supervisor.start()
        try:
            await wait_state(supervisor, "flaky", State.FAILED, timeout=60)
            return seen
        finally:
            await supervisor.shutdown()

    seen = asyncio.run(scenario())
    crashes = [e["t"] for e in events(tmp_path) if e["event"] == "crash"]
    starts = [e["t"] for e in events(tmp_path) if e["event"] == "start"]
    assert len(crashes) == 4 and len(starts) == 4
    gaps = [starts[i + 1] - crashes[i] for i in range(3)]
    crashed_at = [t for state, t in changes if state is State.CRASHED]
    relaunched_at = [t for state, t in changes if state is State.STARTING][1:]
    assert len(crashed_at) == len(relaunched_at) == 3, changes
    waits = [b - a for a, b in zip(crashed_at, relaunched_at, strict=True)]
    for gap, wait, delay in zip(gaps, waits, (1.0, 2.0, 3.0), strict=True):
        assert delay <= gap, f"restart gaps {gaps}"
        assert delay <= wait < delay + 1.0, f"the supervisor waited {waits}"
    assert [s.split(";")[-1].strip() for s in seen if s.startswith("crashed")] == [
        "restarting in 1 s",
        "restarting in 2 s",
        "restarting in 3 s",
    ]
    final = seen[-1]
    assert final.startswith("failed: killed by") or final.startswith("failed: exited with code 3")
    assert "crashed 4 times within 5 minutes, automatic restarts stopped (run `hologram plugin restart flaky`)" in final


def test_kill_9_of_a_plugin_detaches_it_and_the_kernel_keeps_serving(tmp_path: Path) -> None:
    write_plugin(tmp_path, "victim", provides=["victim.f"])
    write_plugin(tmp_path, "survivor", provides=["survivor.f"])
    write_plugin(tmp_path, "user", requires=["victim.f"], config={})

    async def scenario() -> None:
        supervisor = supervisor_for(tmp_path)
        supervisor.start()
        try:
            for name in ("victim", "survivor", "user"):
                await wait_state(supervisor, name, State.READY)
            assert any(t["plugin"] == "victim" for t in supervisor.tool_catalog())
            pid = supervisor.plugins["victim"].pid
            assert pid is not None
            os.kill(pid, signal.SIGKILL)
            await wait_state(supervisor, "victim", State.CRASHED)
            assert supervisor.plugins["victim"].reason == "killed by SIGKILL; restarting in 1 s"
            assert not any(t["plugin"] == "victim" for t in supervisor.tool_catalog()), "its tools are detached"
            result = await supervisor.invoke_tool(
                "survivor", "echo", {"text": "still here"}, call_id="c", session_id=None
            )
            assert result == ToolOutcome("survivor: still here")
            await wait_state(supervisor, "victim", State.READY, timeout=10)
            assert supervisor.plugins["victim"].pid != pid
            assert supervisor.plugins["victim"].restarts == 1
        finally:
            await supervisor.shutdown()

    asyncio.run(scenario())


def test_dependents_that_cannot_live_without_a_crashed_provider_are_restarted(tmp_path: Path) -> None:
    """`needy` has no facility/status handler: it goes back to waiting and restarts when `store` is back.
    `hardy` listens for facility/status, declares it survives, keeps its process and is told both ways."""
    write_plugin(tmp_path, "store", provides=["store.f"])
    write_plugin(tmp_path, "needy", provides=["needy.f"], requires=["store.f"])
    write_plugin(tmp_path, "hardy", requires=["store.f"], env={"TESTPLUG_SURVIVE": "1"})
    write_plugin(tmp_path, "top", requires=["needy.f"])

    async def scenario() -> None:
        supervisor = supervisor_for(tmp_path)
        supervisor.start()
        try:
            for name in ("store", "needy", "hardy", "top"):
                await wait_state(supervisor, name, State.READY)
            pids = {n: supervisor.plugins[n].pid for n in ("store", "needy", "hardy", "top")}
            assert pids["store"] is not None
            os.kill(pids["store"], signal.SIGKILL)
            await wait_until_async(
                lambda: supervisor.plugins["needy"].pid not in (None, pids["needy"]), timeout=15, what="needy restarted"
            )
            for name in ("store", "needy", "top"):
                await wait_state(supervisor, name, State.READY)
            assert supervisor.plugins["hardy"].pid == pids["hardy"], "a plugin that copes keeps running"
            assert supervisor.plugins["top"].pid != pids["top"], "the restart cascades to what needed needy"
            assert supervisor.plugins["needy"].restarts == 1
        finally:
            await supervisor.shutdown()

    asyncio.run(scenario())
    told = [(e["facility"], e["ready"]) for e in events(tmp_path) if e["event"] == "facility_status"]
    assert told[:2] == [("store.f", False), ("store.f", True)]


def test_garbage_on_stdout_is_counted_and_repeated_garbage_restarts_the_plugin(tmp_path: Path) -> None:
    write_plugin(tmp_path, "noisy", provides=["noisy.f"], config={"garbage_lines": 3})
    write_plugin(tmp_path, "flood", config={"garbage_lines": 60}, restart="on-failure")

    async def scenario() -> None:
        supervisor = supervisor_for(tmp_path)
        supervisor.start()
        try:
            await wait_state(supervisor, "noisy", State.READY)
            noisy = supervisor.plugins["noisy"]
            assert noisy.runtime is not None
            await wait_until_async(
                lambda: noisy.runtime is not None and noisy.runtime.connection.malformed_count == 3,
                timeout=20,
                what="3 malformed lines counted",
            )
            result = await supervisor.invoke_tool("noisy", "echo", {"text": "ok"}, call_id="c", session_id=None)
            assert result.content == "noisy: ok", "the connection survived the garbage"
            await wait_until_async(
                lambda: supervisor.plugins["flood"].reason,
                accept=lambda reason: "killed after 50 malformed lines within 10 s" in reason,
                timeout=15,
                what="flood killed for its garbage",
            )
            assert supervisor.plugins["noisy"].state is State.READY
        finally:
            await supervisor.shutdown()

    asyncio.run(scenario())


def test_graceful_shutdown_stops_dependents_first(tmp_path: Path) -> None:
    write_plugin(tmp_path, "base", provides=["base.f"])
    write_plugin(tmp_path, "middle", provides=["middle.f"], requires=["base.f"])
    write_plugin(tmp_path, "top", requires=["middle.f"])
    write_plugin(tmp_path, "side", requires=["base.f"])

    async def scenario() -> None:
        supervisor = supervisor_for(tmp_path)
        supervisor.start()
        for name in ("base", "middle", "top", "side"):
            await wait_state(supervisor, name, State.READY)
        await supervisor.shutdown()
        assert all(p.state is State.STOPPED for p in supervisor.plugins.values())

    asyncio.run(scenario())
    stops = {e["plugin"]: e["t"] for e in events(tmp_path) if e["event"] == "stop"}
    assert set(stops) == {"base", "middle", "top", "side"}, "every plugin got the shutdown request"
    assert stops["top"] <= stops["middle"] <= stops["base"]
    assert stops["side"] <= stops["base"]


def test_manual_restart_resets_the_crash_policy(tmp_path: Path) -> None:
    write_plugin(tmp_path, "once", provides=["once.f"], config={"crash_on_start": True}, restart="never")

    async def scenario() -> None:
        supervisor = supervisor_for(tmp_path)
        supervisor.start()
        try:
            await wait_state(supervisor, "once", State.FAILED)
            assert supervisor.plugins["once"].reason.startswith("start failed: exited with code 2")
            await supervisor.restart_plugin("once")
            await wait_state(supervisor, "once", State.FAILED)
            assert supervisor.plugins["once"].restarts == 1
        finally:
            await supervisor.shutdown()

    asyncio.run(scenario())
    assert sum(e["event"] == "start" for e in events(tmp_path)) == 2
