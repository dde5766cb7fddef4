"""The soak's windowed figures (tools/bench/sweep.py `_windowed`): each side a median over a window of
samples, so one sample in a trough of the heap's trim cycle does not decide the growth, and the kernel's CPU a
turn from its cumulative CPU seconds over each window."""

from __future__ import annotations

from typing import Any

from bench.sweep import _windowed


def samples(anon: list[float], every: int = 100, cpu_ms: float = 50.0) -> list[dict[str, Any]]:
    return [
        {
            "turn": every * (i + 1),
            "kernel_pss_mb": a + 10,
            "kernel_pss_anon_mb": a,
            "kernel_pss_file_mb": 10.0,
            "kernel_anon_mb": a,
            "kernel_cpu_s": every * (i + 1) * cpu_ms / 1000,
        }
        for i, a in enumerate(anon)
    ]


def test_a_trough_at_the_first_window_does_not_make_the_growth() -> None:
    # turns 100..1000; window 200: first = samples at 200, 300, 400; end = 800, 900, 1000
    anon = [70, 60, 70, 71, 70, 70, 70, 71, 70, 70]  # the turn-200 sample is a trough
    out = _windowed(samples(anon), [0.1] * 1000, 200)
    assert out["first"] == [200, 400] and out["end"] == [800, 1000]
    assert out["kernel_anon_mb"]["early"] == 70 and out["kernel_anon_mb"]["end"] == 70
    assert out["kernel_pss_mb"]["ratio"] == 1.0
    assert out["kernel_pss_file_mb"]["growth"] == 0
    assert abs(out["kernel_cpu_ms_per_turn"]["ratio"] - 1.0) < 1e-9
    assert abs(out["kernel_cpu_ms_per_turn"]["early"] - 50.0) < 1e-9


def test_latency_is_the_median_of_each_window_of_turns() -> None:
    latencies = [1.0] * 200 + [0.1] * 200 + [0.5] * 400 + [0.2] * 200
    out = _windowed(samples([70] * 10), latencies, 200)
    assert out["latency_s"]["early"] == 0.1 and out["latency_s"]["end"] == 0.2
    assert out["latency_s"]["ratio"] == 2.0


def test_a_run_too_short_for_two_windows_has_none() -> None:
    assert _windowed(samples([70] * 5), [0.1] * 500, 200) == {}


def test_latency_over_calibration_sits_beside_the_raw_ratio() -> None:
    """A host twice as slow at the end (calibration 50 -> 100 ms) and a latency twice as long: 2x raw, 1x
    normalised; the raw ratio is unchanged by the new line, and a run without calibrations has no such line."""
    rows = samples([70] * 10)
    for row in rows:
        row["calibration_ms"] = 50.0 if row["turn"] <= 400 else 100.0
    latencies = [0.1] * 400 + [0.2] * 600
    out = _windowed(rows, latencies, 200)
    assert out["latency_s"]["ratio"] == 2.0
    assert out["latency_per_calibration"] == {"early_cal_ms": 50.0, "end_cal_ms": 100.0, "ratio": 1.0}
    assert "latency_per_calibration" not in _windowed(samples([70] * 10), latencies, 200)
