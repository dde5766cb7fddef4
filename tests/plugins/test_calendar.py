"""calendar: .ics storage and time zones — DST changes, zones with different DST rules, ranges, deletion."""

from __future__ import annotations

import re
from pathlib import Path

from icalendar import Calendar

from tests.kit.loop import run
from tests.plugins.helpers import err, harness, ok


def _uid(text: str) -> str:
    found = re.search(r"\[uid ([^\]]+)\]", text)
    assert found, text
    return found.group(1)


def test_across_a_dst_change(tmp_path: Path) -> None:
    """Europe/Berlin springs forward at 02:00 on 2025-03-30: 01:30 → 03:30 local is one hour, not two."""

    async def go() -> None:
        async with harness("calendar", data_dir=tmp_path, config={"timezone": "Europe/Berlin"}) as h:
            added = ok(
                await h.call_tool(
                    "calendar_add", {"summary": "Night shift", "start": "2025-03-30T01:30", "end": "2025-03-30T03:30"}
                )
            )
            assert "2025-03-30T01:30+01:00 – 2025-03-30T03:30+02:00 (1 h)" in added
            by_length = ok(
                await h.call_tool(
                    "calendar_add", {"summary": "Hour", "start": "2025-03-30T01:30", "duration_minutes": 60}
                )
            )
            assert "2025-03-30T01:30+01:00 – 2025-03-30T03:30+02:00 (1 h)" in by_length
            gap = err(await h.call_tool("calendar_add", {"summary": "Ghost", "start": "2025-03-30T02:30"}))
            assert "does not exist in Europe/Berlin" in gap
            listed = ok(
                await h.call_tool("calendar_list", {"start": "2025-03-30", "end": "2025-03-30", "timezone": "UTC"})
            )
            assert "- 2025-03-30T00:30+00:00 – 2025-03-30T01:30+00:00: Night shift" in listed
            autumn = ok(
                await h.call_tool(
                    "calendar_add", {"summary": "Fall back", "start": "2025-10-26T01:30", "end": "2025-10-26T03:30"}
                )
            )
            assert "(3 h)" in autumn, "the autumn night has an extra hour"

    run(go())
    ics = Calendar.from_ical((tmp_path / "plugins" / "calendar" / "calendar.ics").read_bytes())
    assert [tz.get("tzid") for tz in ics.walk("VTIMEZONE")] == ["Europe/Berlin"]
    starts = [e.get("dtstart") for e in ics.walk("VEVENT")]
    assert starts[0].params["TZID"] == "Europe/Berlin" and starts[0].to_ical() == b"20250330T013000"


def test_across_zones_with_different_dst_rules(tmp_path: Path) -> None:
    """New York moves to summer time on 9 March 2025, Berlin on 30 March: the gap between them changes."""

    async def go() -> None:
        async with harness("calendar", data_dir=tmp_path) as h:
            before = ok(
                await h.call_tool(
                    "calendar_add",
                    {"summary": "Standup A", "start": "2025-03-03T09:00", "timezone": "America/New_York"},
                )
            )
            after = ok(
                await h.call_tool(
                    "calendar_add",
                    {"summary": "Standup B", "start": "2025-03-10T09:00", "timezone": "America/New_York"},
                )
            )
            assert "2025-03-03T09:00-05:00" in before and "2025-03-10T09:00-04:00" in after
            listed = ok(
                await h.call_tool(
                    "calendar_list", {"start": "2025-03-01", "end": "2025-03-31", "timezone": "Europe/Berlin"}
                )
            )
            assert "- 2025-03-03T15:00+01:00 – 2025-03-03T16:00+01:00: Standup A" in listed
            assert "- 2025-03-10T14:00+01:00 – 2025-03-10T15:00+01:00: Standup B" in listed
            tokyo = ok(
                await h.call_tool(
                    "calendar_list", {"start": "2025-03-10", "end": "2025-03-11", "timezone": "Asia/Tokyo"}
                )
            )
            assert "2025-03-10T22:00+09:00 – 2025-03-10T23:00+09:00: Standup B" in tokyo and "Standup A" not in tokyo
            offset = ok(
                await h.call_tool(
                    "calendar_add", {"summary": "Call", "start": "2025-06-01T09:00+02:00", "timezone": "Asia/Tokyo"}
                )
            )
            assert "2025-06-01T16:00+09:00" in offset
            assert "unknown time zone 'Mars/Olympus'" in err(
                await h.call_tool("calendar_list", {"timezone": "Mars/Olympus"})
            )

    run(go())


def test_range_all_day_and_delete(tmp_path: Path) -> None:
    async def go() -> None:
        async with harness("calendar", data_dir=tmp_path) as h:
            uid = _uid(
                ok(
                    await h.call_tool(
                        "calendar_add", {"summary": "会议", "start": "2025-05-02T10:00", "location": "Room 1"}
                    )
                )
            )
            ok(await h.call_tool("calendar_add", {"summary": "Later", "start": "2025-05-20T10:00"}))
            trip = ok(
                await h.call_tool(
                    "calendar_add", {"summary": "Trip", "start": "2025-05-01", "end": "2025-05-03", "all_day": True}
                )
            )
            assert "on 2025-05-01 (all day)" in trip
            listed = ok(await h.call_tool("calendar_list", {"start": "2025-05-01", "end": "2025-05-07"}))
            assert listed.splitlines()[0] == "2 event(s) between 2025-05-01T00:00+00:00 – 2025-05-08T00:00+00:00 (UTC):"
            assert "- 2025-05-01 – 2025-05-03 (all day): Trip" in listed.splitlines()[1]
            assert (
                f"- 2025-05-02T10:00+00:00 – 2025-05-02T11:00+00:00: 会议; at Room 1 [uid {uid}]"
                == listed.splitlines()[2]
            )
            assert ok(await h.call_tool("calendar_delete", {"uid": uid})) == f"deleted '会议' [uid {uid}]"
            assert "会议" not in ok(await h.call_tool("calendar_list", {"start": "2025-05-01", "end": "2025-05-07"}))
            assert "no event with uid" in err(await h.call_tool("calendar_delete", {"uid": uid}))
            assert "must end after it starts" in err(
                await h.call_tool(
                    "calendar_add", {"summary": "x", "start": "2025-05-02T10:00", "end": "2025-05-02T09:00"}
                )
            )
            assert "cannot read" in err(await h.call_tool("calendar_add", {"summary": "x", "start": "tomorrow"}))

    run(go())


IMPORTED = """BEGIN:VCALENDAR
VERSION:2.0
PRODID:-//Another App//EN
BEGIN:VTIMEZONE
TZID:Europe/Berlin
BEGIN:STANDARD
DTSTART:19701025T030000
RRULE:FREQ=YEARLY;BYMONTH=10;BYDAY=-1SU
TZOFFSETFROM:+0200
TZOFFSETTO:+0100
END:STANDARD
BEGIN:DAYLIGHT
DTSTART:19700329T020000
RRULE:FREQ=YEARLY;BYMONTH=3;BYDAY=-1SU
TZOFFSETFROM:+0100
TZOFFSETTO:+0200
END:DAYLIGHT
END:VTIMEZONE
BEGIN:VEVENT
UID:sync@another.app
DTSTAMP:20250101T000000Z
SUMMARY:Team sync
DTSTART;TZID=Europe/Berlin:20250317T100000
DTEND;TZID=Europe/Berlin:20250317T103000
RRULE:FREQ=WEEKLY;BYDAY=MO;COUNT=6
EXDATE;TZID=Europe/Berlin:20250331T100000
RDATE;TZID=Europe/Berlin:20250402T150000
END:VEVENT
BEGIN:VEVENT
UID:sync@another.app
RECURRENCE-ID;TZID=Europe/Berlin:20250407T100000
DTSTAMP:20250101T000000Z
SUMMARY:Team sync (moved)
DTSTART;TZID=Europe/Berlin:20250408T110000
DTEND;TZID=Europe/Berlin:20250408T113000
END:VEVENT
BEGIN:VEVENT
UID:birthday@another.app
DTSTAMP:20250101T000000Z
SUMMARY:Ada's birthday
DTSTART;VALUE=DATE:20200405
DTEND;VALUE=DATE:20200406
RRULE:FREQ=YEARLY
END:VEVENT
BEGIN:VEVENT
UID:once@another.app
DTSTAMP:20250101T000000Z
SUMMARY:Dentist
DTSTART:20250326T080000Z
DTEND:20250326T090000Z
END:VEVENT
END:VCALENDAR
"""


def test_recurring_events_of_an_imported_calendar_are_expanded(tmp_path: Path) -> None:
    """RRULE (weekly, COUNT), EXDATE, RDATE and a moved occurrence (RECURRENCE-ID), and a yearly all-day event
    from years before: each occurrence in the range is listed at its own time, across the DST change, with
    the series' uid; deleting the uid removes the series. Mutation check (done): listing the file's VEVENTs as
    they are (without recurring-ical-events) turns it red."""
    folder = tmp_path / "plugins" / "calendar"
    folder.mkdir(parents=True)
    (folder / "calendar.ics").write_text(IMPORTED.replace("\n", "\r\n"))

    async def go() -> None:
        async with harness("calendar", data_dir=tmp_path, config={"timezone": "Europe/Berlin"}) as h:
            listed = ok(await h.call_tool("calendar_list", {"start": "2025-03-17", "end": "2025-04-30"}))
            lines = [line for line in listed.splitlines() if line.startswith("- ")]
            assert lines == [
                "- 2025-03-17T10:00+01:00 – 2025-03-17T10:30+01:00: Team sync (repeats) [uid sync@another.app]",
                "- 2025-03-24T10:00+01:00 – 2025-03-24T10:30+01:00: Team sync (repeats) [uid sync@another.app]",
                "- 2025-03-26T09:00+01:00 – 2025-03-26T10:00+01:00: Dentist [uid once@another.app]",
                "- 2025-04-02T15:00+02:00 – 2025-04-02T15:30+02:00: Team sync (repeats) [uid sync@another.app]",
                "- 2025-04-05 (all day): Ada's birthday (repeats) [uid birthday@another.app]",
                "- 2025-04-08T11:00+02:00 – 2025-04-08T11:30+02:00: Team sync (moved) (repeats) [uid sync@another.app]",
                "- 2025-04-14T10:00+02:00 – 2025-04-14T10:30+02:00: Team sync (repeats) [uid sync@another.app]",
                "- 2025-04-21T10:00+02:00 – 2025-04-21T10:30+02:00: Team sync (repeats) [uid sync@another.app]",
            ]
            assert "Team sync" not in ok(
                await h.call_tool("calendar_list", {"start": "2025-04-22", "end": "2025-06-01"})
            )
            assert "2030-04-05 (all day): Ada's birthday" in ok(
                await h.call_tool("calendar_list", {"start": "2030-04-01", "end": "2030-04-07"})
            )
            ok(await h.call_tool("calendar_delete", {"uid": "sync@another.app"}))
            after = ok(await h.call_tool("calendar_list", {"start": "2025-03-17", "end": "2025-04-30"}))
            assert "Team sync" not in after and "Dentist" in after

    run(go())
