"""The crash policy's arithmetic, with a fake clock (the real-time behaviour is in test_supervisor)."""

from __future__ import annotations

from hologram.supervisor import CrashPolicy


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_delays_then_stop_on_the_fourth_crash_within_five_minutes() -> None:
    clock = Clock()
    policy = CrashPolicy(clock=clock)
    delays = []
    for _ in range(4):
        delays.append(policy.record_crash())
        clock.now += 30
    assert delays == [1.0, 2.0, 3.0, None]


def test_the_window_slides() -> None:
    clock = Clock()
    policy = CrashPolicy(clock=clock)
    assert [policy.record_crash() for _ in range(3)] == [1.0, 2.0, 3.0]
    clock.now += 301  # all three are now older than five minutes
    assert policy.record_crash() == 1.0
    clock.now += 200
    assert policy.record_crash() == 2.0, "the crash 200 s ago still counts"
    assert policy.recent_crashes == 2


def test_reset_after_a_manual_restart() -> None:
    policy = CrashPolicy(clock=Clock())
    for _ in range(4):
        policy.record_crash()
    policy.reset()
    assert policy.record_crash() == 1.0
