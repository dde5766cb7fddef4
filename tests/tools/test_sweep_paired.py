"""The soak's side-by-side latency (tools/bench/_paired.py) on the product's path: two real kernels of the
default graph, the strict mock, turns through the turn API. Asserts the path was taken — the early kernel
was fed exactly the early turns and then as many counted turns as the late one, the late one went on from
where its soak stopped, in its own sessions — and that the early kernel is gone afterwards."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from bench import sweep
from bench._kernel import BenchKernel, configure_bytecode
from hologram.sessions import SessionStore
from mock_llm import MockLLM


def inputs_by_session(data: Path) -> dict[str, int]:
    """Each session of a (stopped) kernel's data directory: how many turns it was given (its input events)."""
    store = SessionStore.in_data_dir(data)
    try:
        return {s["id"]: sum(e.kind == "input" for e in store.events(s["id"])) for s in store.list_sessions()}
    finally:
        store.close()


def test_the_soak_ends_with_its_kernel_beside_an_early_one(tmp_path: Path) -> None:
    configure_bytecode(tmp_path)
    logged: list[str] = []
    started: list[tuple[Path, int]] = []
    with MockLLM("deepseek") as mock:
        settings = sweep.settings_for(mock, context_window=6000)
        kernel = BenchKernel(tmp_path / "soak", settings, builtins=True)
        start_early = sweep.early_kernel_at(tmp_path / "soak-early", settings)  # the sweep's own

        def early_kernel() -> tuple[Path, int, Callable[[], None]]:
            data, pid, stop = start_early()
            started.append((data, pid))
            return data, pid, stop

        try:
            kernel.start()
            turns = 60  # the warm-up is 50 turns: the early kernel is fed 75
            got = sweep.measure_soak(kernel, mock, turns, 4, logged.append, early_kernel=early_kernel, paired_rounds=6)
        finally:
            kernel.stop()
    paired = got["paired"]
    assert paired["early_turns"] == 75 and paired["late_turns"] == turns and paired["rounds"] == 6
    assert paired["latency_s"]["early"] > 0 and paired["latency_s"]["end"] > 0
    assert paired["kernel_cpu_ms_per_turn"]["early"] > 0 and paired["kernel_cpu_ms_per_turn"]["end"] > 0
    assert 0.0 <= paired["host_steal_share"] < 1.0
    assert got["mock_rejections"] == 0
    # the early kernel took its feed, then its counted rounds and the 4 left out (a session each), in 4
    # sessions; the late kernel went on in its soak's 4 sessions: 60 turns, then as many rounds
    ((early_data, early_pid),) = started
    early_turns, late_turns = inputs_by_session(early_data), inputs_by_session(kernel.data)
    assert len(early_turns) == 4 and sum(early_turns.values()) == 75 + 6 + 4
    assert len(late_turns) == 4 and sum(late_turns.values()) == 60 + 6 + 4
    assert not Path(f"/proc/{early_pid}").exists()  # the early kernel was stopped after its rounds
    assert any("paired: an early kernel fed 75 turns" in line for line in logged)
