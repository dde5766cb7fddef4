"""reminders as a real subprocess (the conformance harness), with ``kernel.turns`` served by the test.

Time is the plugin's own test seam, `HOLOGRAM_REMINDERS_CLOCK`: a file holding "now", which the test moves
forward (hours, days) and the plugin reads — nothing of the plugin is patched. One test uses the real clock
and a real delay of one second. A stop and a start of the plugin on the same data directory is the kernel's
restart as the plugin sees it (tests/e2e/test_reminders_e2e.py does it with `hologram up`).

Mutation checks (done): the start's first pass (``fire_due`` in ``on_start``) removed turns
test_missed_while_down_fires_once_late_on_start red (the missed reminder had not fired once the plugin was
ready); ``LATE_AFTER`` a day turns it red (not marked late); a repeating reminder's next time not stored after
it fired turns test_a_repeating_reminder_missed_three_times_says_so_once red.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from hologram.sdk.testing import PluginHarness
from tests.kit.loop import run
from tests.kit.wait import wait_until_async
from tests.plugins.helpers import MANIFESTS, err, ok

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=timezone.utc)


class Turns:
    """``kernel.turns`` as the kernel serves it to the plugin, recording each ``start``."""

    def __init__(self) -> None:
        self.started: list[dict[str, Any]] = []
        self.arrived = asyncio.Event()

    def start(self, caller: str, **params: Any) -> dict[str, Any]:
        self.started.append({"caller": caller, **params})
        self.arrived.set()
        return {"session": params.get("session") or "new-session", "turn": f"turn-{len(self.started)}"}

    async def next(self, count: int, timeout: float = 30) -> list[dict[str, Any]]:
        """Until ``count`` turns were started (a failure bound, not an expected duration)."""
        async with asyncio.timeout(timeout):
            while len(self.started) < count:
                self.arrived.clear()
                await self.arrived.wait()
        return self.started


class Clock:
    def __init__(self, path: Path, now: datetime) -> None:
        self.path = path
        self.set(now)

    def set(self, now: datetime) -> None:
        temp = self.path.with_suffix(".tmp")
        temp.write_text(now.isoformat())
        os.replace(temp, self.path)  # the plugin never reads half a time

    def advance(self, delta: timedelta) -> None:
        self.set(datetime.fromisoformat(self.path.read_text()) + delta)


@asynccontextmanager
async def reminders(
    data: Path, turns: Turns, clock: Clock | None, config: dict[str, Any] | None = None
) -> AsyncIterator[PluginHarness]:
    env = {"HOLOGRAM_REMINDERS_CLOCK": str(clock.path)} if clock else None
    h = PluginHarness.from_manifest(
        MANIFESTS / "reminders.toml", data_dir=data, config=config, env=env,
        provide={"kernel.turns": {"start": turns.start}},
    )  # fmt: skip
    async with h:
        yield h


def stored(data: Path) -> dict[str, dict[str, Any]]:
    document = json.loads((data / "plugins" / "reminders" / "reminders.json").read_text())
    return {r["id"]: r for r in document["reminders"]}


def test_set_list_cancel_and_what_the_model_is_told(tmp_path: Path) -> None:
    clock = Clock(tmp_path / "clock", T0)

    async def go() -> None:
        turns = Turns()
        async with reminders(tmp_path, turns, clock, {"timezone": "Europe/Berlin"}) as h:
            said = ok(
                await h.call_tool("reminder_set", {"text": "Call mom", "at": "2026-03-01T10:00"}, session_id="s1")
            )
            assert "set for 2026-03-01T10:00+01:00 (Europe/Berlin, in 1 h)" in said
            assert "a turn starts in this session" in said
            ok(await h.call_tool("reminder_set", {"text": "Stretch", "after": "1h30m"}, session_id="s2"))
            weekly = ok(
                await h.call_tool(
                    "reminder_set", {"text": "Standup", "cron": "0 9 * * 1-5", "timezone": "UTC"}, session_id="s1"
                )
            )
            assert "set for 2026-03-02T09:00+00:00" in weekly and "then by cron '0 9 * * 1-5'" in weekly

            mine = ok(await h.call_tool("reminder_list", {}, session_id="s1"))
            assert "2 reminder(s) pending in this session" in mine
            assert mine.index("Call mom") < mine.index("Standup") and "Stretch" not in mine
            everyone = ok(await h.call_tool("reminder_list", {"all_sessions": True}, session_id="s1"))
            assert "Stretch" in everyone

            rid = next(r["id"] for r in stored(tmp_path).values() if r["text"] == "Call mom")
            assert "cancelled reminder" in ok(await h.call_tool("reminder_cancel", {"id": rid}))
            assert "no pending reminder" in err(await h.call_tool("reminder_cancel", {"id": rid}))
            assert "Call mom" not in ok(await h.call_tool("reminder_list", {"all_sessions": True}))

            # what a model gets wrong is said, with how to write it
            assert "is in the past" in err(await h.call_tool("reminder_set", {"text": "x", "at": "2026-03-01T08:00"}))
            assert "five fields" in err(await h.call_tool("reminder_set", {"text": "x", "cron": "every day"}))
            assert "RRULE like" in err(await h.call_tool("reminder_set", {"text": "x", "rrule": "FREQ=SOMETIMES"}))
            assert "cannot read the delay" in err(await h.call_tool("reminder_set", {"text": "x", "after": "soon"}))
            assert "give one of" in err(
                await h.call_tool("reminder_set", {"text": "x", "after": "1m", "cron": "* * * * *"})
            )
            assert "say when" in err(await h.call_tool("reminder_set", {"text": "x"}))
            assert "at most 2000" in err(await h.call_tool("reminder_set", {"text": "x" * 2001, "after": "1m"}))
            assert "unknown time zone" in err(
                await h.call_tool("reminder_set", {"text": "x", "after": "1m", "timezone": "Mars/Olympus"})
            )
            assert turns.started == []  # nothing was due

    run(go())
    assert oct(os.stat(tmp_path / "plugins" / "reminders" / "reminders.json").st_mode & 0o777) == "0o600"


def test_a_due_reminder_starts_a_turn_in_its_session(tmp_path: Path) -> None:
    """Moved past its time, the reminder starts one turn in the session it was set in, saying what it is;
    the turn carries the reminder as its client and partner and outlives its watchers."""
    clock = Clock(tmp_path / "clock", T0)

    async def go() -> None:
        turns = Turns()
        async with reminders(tmp_path, turns, clock) as h:
            ok(await h.call_tool("reminder_set", {"text": "Take the cake out", "after": "25m"}, session_id="kitchen"))
            rid = next(iter(stored(tmp_path)))
            clock.advance(timedelta(minutes=24))
            assert "in 1 min" in ok(await h.call_tool("reminder_list", {}, session_id="kitchen"))
            assert turns.started == []
            clock.advance(timedelta(minutes=1))
            [started] = await turns.next(1)
            assert started == {
                "caller": "reminders",
                "text": f"[reminder {rid} set at 2026-03-01T08:00+00:00 for 2026-03-01T08:25+00:00 (UTC)] Take the cake out",
                "session": "kitchen",
                "client": "reminder",
                "partner": f"reminder-{rid}",
                "watch": False,
                "on_disconnect": "continue",
            }
            entry = await wait_until_async(
                lambda: stored(tmp_path)[rid], accept=lambda e: e["state"] == "done", timeout=30,
                what="the fired reminder written as done",
            )  # fmt: skip
            assert (entry["fired"], entry["last_turn"]) == (1, "turn-1")
            assert "no reminders pending" in ok(await h.call_tool("reminder_list", {}, session_id="kitchen"))

    run(go())


def test_a_real_short_delay(tmp_path: Path) -> None:
    """The system clock (no seam): a reminder after one second fires after one second, not before."""

    async def go() -> None:
        turns = Turns()
        async with reminders(tmp_path, turns, None) as h:
            set_at = time.monotonic()
            ok(await h.call_tool("reminder_set", {"text": "Tea is ready", "after": "1s"}, session_id="s"))
            [started] = await turns.next(1)
            assert time.monotonic() - set_at >= 1.0
            assert started["text"].endswith("] Tea is ready") and "late" not in started["text"]

    run(go())


def test_missed_while_down_fires_once_late_on_start(tmp_path: Path) -> None:
    """Set, plugin stopped, three hours pass, plugin started: it fires once, before the plugin is ready, marked
    late; a further restart fires nothing."""
    clock = Clock(tmp_path / "clock", T0)

    async def go() -> None:
        turns = Turns()
        async with reminders(tmp_path, turns, clock) as h:
            ok(
                await h.call_tool(
                    "reminder_set", {"text": "Water the plants", "at": "2026-03-01T09:00Z"}, session_id="s"
                )
            )
        rid = next(iter(stored(tmp_path)))
        clock.advance(timedelta(hours=3))
        async with reminders(tmp_path, turns, clock):
            assert len(turns.started) == 1  # already: the start fires what is overdue before it answers
            text = turns.started[0]["text"]
            assert text.startswith(f"[reminder {rid} set at 2026-03-01T08:00+00:00 for 2026-03-01T09:00+00:00 (UTC)")
            assert "; late by 2 h: Hologram was not running at that time] Water the plants" in text
        async with reminders(tmp_path, turns, clock) as h:
            assert "no reminders pending" in ok(await h.call_tool("reminder_list", {"all_sessions": True}))
        assert len(turns.started) == 1
        assert stored(tmp_path)[rid]["fired"] == 1

    run(go())


def test_a_repeating_reminder_missed_three_times_says_so_once(tmp_path: Path) -> None:
    clock = Clock(tmp_path / "clock", T0)

    async def go() -> None:
        turns = Turns()
        async with reminders(tmp_path, turns, clock, {"timezone": "Europe/Berlin"}) as h:
            ok(await h.call_tool("reminder_set", {"text": "Vitamins", "cron": "0 10 * * *"}, session_id="s"))
        clock.set(datetime(2026, 3, 3, 12, 0, tzinfo=timezone.utc))  # 13:00 in Berlin: 1, 2 and 3 March passed
        async with reminders(tmp_path, turns, clock) as h:
            [started] = turns.started
            assert "for 2026-03-01T10:00+01:00 (Europe/Berlin); repeats: cron '0 10 * * *'" in started["text"]
            assert "its time passed 3 times, said once] Vitamins" in started["text"]
            assert "2026-03-04T10:00+01:00" in ok(
                await h.call_tool("reminder_list", {}, session_id="s")
            )  # fired at start
            clock.set(datetime(2026, 3, 4, 9, 0, 30, tzinfo=timezone.utc))  # 10:00:30 in Berlin
            [_, second] = await turns.next(2)
            assert "for 2026-03-04T10:00+01:00" in second["text"] and "late" not in second["text"]

    run(go())


def test_an_rrule_keeps_its_local_time_across_dst(tmp_path: Path) -> None:
    """Daily at 09:00 Europe/Berlin: 08:00 UTC before 29 March 2026, 07:00 UTC after; COUNT ends it."""
    clock = Clock(tmp_path / "clock", datetime(2026, 3, 28, 12, 0, tzinfo=timezone.utc))

    async def go() -> None:
        turns = Turns()
        async with reminders(tmp_path, turns, clock, {"timezone": "Europe/Berlin"}) as h:
            said = ok(
                await h.call_tool(
                    "reminder_set",
                    {"text": "Walk", "rrule": "FREQ=DAILY;COUNT=2", "at": "2026-03-28T09:00"},
                    session_id="s",
                )
            )
            assert "2026-03-29T09:00+02:00" in said  # the 28th's 09:00 is before now: its first time is the 29th
            rid = next(iter(stored(tmp_path)))
            assert stored(tmp_path)[rid]["due"] == "2026-03-29T07:00:00+00:00"
            clock.set(datetime(2026, 3, 29, 7, 0, tzinfo=timezone.utc))
            await turns.next(1)
            await wait_until_async(  # COUNT=2 counts the 28th (DTSTART): it is over
                lambda: stored(tmp_path)[rid]["state"], accept=lambda s: s == "done", timeout=30, what="done"
            )

    run(go())


def test_a_damaged_file_refuses_the_start_and_a_damaged_entry_is_kept(tmp_path: Path) -> None:
    folder = tmp_path / "plugins" / "reminders"
    folder.mkdir(parents=True)
    path = folder / "reminders.json"
    path.write_text("{not json")
    clock = Clock(tmp_path / "clock", T0)

    async def go() -> None:
        turns = Turns()
        with pytest.raises(RuntimeError, match=r"reminders\.json is not a reminders file .*move it away"):
            async with reminders(tmp_path, turns, clock):
                pass
        assert path.read_text() == "{not json"  # nothing stored is lost
        path.write_text(json.dumps({"version": 1, "reminders": [{"id": "x", "text": "half an entry"}]}))
        async with reminders(tmp_path, turns, clock) as h:
            listed = ok(await h.call_tool("reminder_list", {"all_sessions": True}))
            assert "entry 1 of reminders.json was skipped" in listed
            ok(await h.call_tool("reminder_set", {"text": "New one", "after": "1h"}))
        entries = json.loads(path.read_text())["reminders"]
        assert {"id": "x", "text": "half an entry"} in entries and len(entries) == 2

    run(go())


def test_the_facility_sets_and_cancels_for_another_plugin(tmp_path: Path) -> None:
    clock = Clock(tmp_path / "clock", T0)

    async def go() -> None:
        turns = Turns()
        async with reminders(tmp_path, turns, clock) as h:
            made = await h.call_facility(
                "reminders.schedule", "set", text="Todo due: taxes", session="s9", at="2026-03-01T09:00Z"
            )
            assert (made["session"], made["source"], made["due"]) == ("s9", "harness", "2026-03-01T09:00:00+00:00")
            assert (await h.call_facility("reminders.schedule", "get", id=made["id"]))["state"] == "active"
            assert await h.call_facility("reminders.schedule", "cancel", id=made["id"]) == {"cancelled": True}
            from hologram.rpc import RpcError

            with pytest.raises(RpcError, match="is in the past"):
                await h.call_facility("reminders.schedule", "set", text="x", at="2020-01-01T00:00Z")

    run(go())


def test_the_conformance_kit_passes() -> None:
    """Every check the kernel relies on (handshake, tools called with generated arguments, stdout, shutdown,
    processes), with ``kernel.turns`` stubbed."""
    from hologram.testing.conformance import check_conformance

    report = check_conformance(MANIFESTS / "reminders.toml", provide={"kernel.turns": {"start": Turns().start}})
    assert report.ok, report.render()
