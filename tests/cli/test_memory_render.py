"""`hologram memory distill`'s report: failures are grouped by reason.

Seen using it as a newcomer: with a provider that does not answer the extraction prompt in JSON, every eligible
event fails the same way and the report printed one line per event (27 identical lines). Now one line per
reason, with how many events share it and the setting that distills without the model.

Mutation check (done): printing one line per failure again fails `test_identical_failures_are_one_line`.
"""

from __future__ import annotations

from pathlib import Path

from hologram.cli.memory_render import render


def _failure(event: str, why: str) -> dict[str, str]:
    return {"event": event, "why": f"ExtractionError: event {event}: {why}"}


def test_identical_failures_are_one_line() -> None:
    why = "the model's answer is not JSON (Expecting value at 0): 'Noted.'"
    report = {
        "eligible": 4, "moved": 0, "triples": 0, "held_back": 0, "failed": 4, "reconciled": 0,
        "failures": [*(_failure(f"ev_{i}", why) for i in range(3)), _failure("ev_9", "timed out")],
    }  # fmt: skip
    text = render("distill", report, where="the running kernel", data=Path(".hologram"))
    lines = [line for line in text.splitlines() if line.startswith("  ev_")]
    assert lines == [f"  ev_0 and 2 more: ExtractionError: {why}", "  ev_9: ExtractionError: timed out"]
    assert 'extractor = "rules"' in text  # the fix for a model that does not answer in JSON
