"""The start gate (hologram/supervisor/gate.py): how many plugins may be coming up at once, with real
plugin processes, and what gives a slot back."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from hologram.kernel import plugin_specs
from hologram.plan.lock import read_lock
from hologram.supervisor import State, Supervisor
from hologram.supervisor.gate import StartGate, default_slots
from tests.launcher.kit import events, lock_for, wait_state, write_plugin

pytestmark = pytest.mark.slow


def gated_supervisor(directory: Path, gate: StartGate) -> Supervisor:
    lock = read_lock(lock_for(directory))
    return Supervisor(plugin_specs(lock), directory / "data", kernel_facilities=list(lock.kernel.provides), gate=gate)


def test_no_more_plugins_come_up_at_once_than_the_gate_has_slots(tmp_path: Path) -> None:
    """Six plugins that need only the kernel are all released at once; two slots let two come up at a time,
    and all six get ready. Mutation check (done): `ManagedPlugin.start` spawning outside the gate turns this
    red (nobody ever inside); `StartGate` not taking the semaphore turns it red (more than 2 inside)."""
    names = [f"p{i}" for i in range(6)]
    for name in names:
        write_plugin(tmp_path, name, provides=[f"{name}.f"])
    gate = StartGate(slots=2, hold_s=60)

    async def scenario() -> None:
        supervisor = gated_supervisor(tmp_path, gate)
        supervisor.start()
        try:
            for name in names:
                await wait_state(supervisor, name, State.READY)
        finally:
            await supervisor.shutdown()

    asyncio.run(scenario())
    assert gate.most_inside == 2
    assert gate.inside == 0


def test_a_plugin_waiting_in_on_start_gives_its_slot_back(tmp_path: Path) -> None:
    """`alpha` waits in on_start for a file that `beta` writes in its own on_start; one slot, held for a
    minute at most. Only `$/starting` (sent by the SDK when `initialize` arrives, before on_start) lets beta
    in while alpha waits: without it alpha would keep the slot until its hold ran out.
    Mutation check (done): the SDK not sending `$/starting` turns this red (beta never starts in 20 s)."""
    opened = tmp_path / "alpha-may-be-ready"
    write_plugin(tmp_path, "alpha", provides=["alpha.f"], config={"ready_gate": str(opened)}, timeout_s=120)
    write_plugin(tmp_path, "beta", provides=["beta.f"], config={"touch_on_start": str(opened)})
    gate = StartGate(slots=1, hold_s=60)

    async def scenario() -> None:
        supervisor = gated_supervisor(tmp_path, gate)
        assert supervisor.order.index("alpha") < supervisor.order.index("beta"), "alpha must take the slot first"
        supervisor.start()
        try:
            await wait_state(supervisor, "beta", State.READY)
            await wait_state(supervisor, "alpha", State.READY)
        finally:
            await supervisor.shutdown()

    asyncio.run(scenario())
    started = [e["plugin"] for e in events(tmp_path) if e["event"] == "start"]
    assert started == ["alpha", "beta"], started  # alpha was inside, waiting, when beta came in


def test_a_slot_comes_back_after_its_hold_whatever_the_plugin_does() -> None:
    """A plugin that never says it is up (no `$/starting`, no answer) keeps its slot for `hold_s` only."""

    async def scenario() -> None:
        gate = StartGate(slots=1, hold_s=0.05)
        never = asyncio.Event()

        async def stuck() -> None:
            async with gate.admit():
                await never.wait()

        holder = asyncio.ensure_future(stuck())
        while gate.inside == 0:
            await asyncio.sleep(0)
        async with gate.admit() as release:
            assert not holder.done(), "the first is still inside its block; its slot came back by the hold"
            release()
            release()  # idempotent: the slot is given back once
        assert gate.inside == 0 and gate.most_inside == 1
        holder.cancel()

    asyncio.run(asyncio.wait_for(scenario(), 30))


def test_the_default_is_four_slots_a_core() -> None:
    import os

    assert default_slots() == max(4, 4 * len(os.sched_getaffinity(0)))
