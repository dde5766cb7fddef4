"""todos as a real subprocess: the Markdown file is the list — what the tools write a person reads, what a person
writes the tools read; a damaged line is reported and left alone; a due date sets a reminder through the
reminders plugin's facility when the graph has one (here served by the test), and nothing breaks without it.

Mutation checks (done): the store keeping its own copy of the list instead of reading the file on each call turns
test_the_list_is_a_markdown_file_both_sides_edit red, and so does a changed line written without its bullet and
indent; the mark ``[?]`` read as a task turns test_a_damaged_line_is_reported_not_fatal red; the harness not
serving an ``after_if_present`` facility the test stubs turns the reminders test red."""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path
from typing import Any

from tests.kit.loop import run
from tests.plugins.helpers import err, harness, ok


def todo_file(data: Path) -> Path:
    return data / "plugins" / "todos" / "todo.md"


def id_of(text: str) -> str:
    return text.rsplit("[id ", 1)[1].split("]", 1)[0]


def test_the_list_is_a_markdown_file_both_sides_edit(tmp_path: Path) -> None:
    async def go() -> None:
        async with harness("todos", data_dir=tmp_path) as h:
            milk = id_of(
                ok(await h.call_tool("todo_add", {"text": "Buy milk", "due": "2036-03-02", "tags": ["shopping"]}))
            )
            taxes = id_of(ok(await h.call_tool("todo_add", {"text": "File taxes", "tags": ["#admin"]})))
            assert todo_file(tmp_path).read_text() == (
                f"# Todos\n\n- [ ] Buy milk due:2036-03-02 #shopping id:{milk}\n- [ ] File taxes #admin id:{taxes}\n"
            )
            # a person edits it: a note, a task without an id, one ticked off by hand
            text = todo_file(tmp_path).read_text().replace("- [ ] File taxes", "- [x] File taxes")
            todo_file(tmp_path).write_text(
                text
                + "\nNotes: the plumber's number is in the drawer.\n* [ ] Call the plumber due:2026-03-03T17:00 #home\n"
            )
            listed = ok(await h.call_tool("todo_list", {}))
            assert listed.startswith("2 open todo(s) in todo.md:")
            assert "- [ ] Call the plumber (due 2026-03-03T17:00" in listed and "File taxes" not in listed
            plumber = id_of(next(line for line in listed.splitlines() if "plumber" in line))
            assert "File taxes #admin" in ok(await h.call_tool("todo_list", {"status": "done"}))

            changed = ok(await h.call_tool("todo_update", {"id": plumber, "text": "Call the plumber again", "due": ""}))
            assert f"Call the plumber again #home [id {plumber}]" in changed  # the id it was listed with stays
            assert "done: Buy milk" in ok(await h.call_tool("todo_done", {"id": milk}))
            assert "deleted: File taxes" in ok(await h.call_tool("todo_delete", {"id": taxes}))
            assert "no todo with id" in err(await h.call_tool("todo_done", {"id": taxes}))
            final = todo_file(tmp_path).read_text()
            assert final.startswith(f"# Todos\n\n- [x] Buy milk due:2036-03-02 #shopping id:{milk} done:20")
            assert final.endswith(
                f"\nNotes: the plumber's number is in the drawer.\n* [ ] Call the plumber again #home id:{plumber}\n"
            )  # the person's note and bullet kept as they were

    run(go())


def test_a_damaged_line_is_reported_not_fatal(tmp_path: Path) -> None:
    todo_file(tmp_path).parent.mkdir(parents=True)
    lines = [
        "# Todos",
        "- [?] what is this mark",
        "- [ ] Pay rent due:2026-13-45",
        "- [ ] Water plants id:ab12",
        "- [ ] Water plants twice id:ab12",
        "- [ ] Fine one due:2026-03-01",
    ]
    todo_file(tmp_path).write_text("\n".join(lines) + "\n")

    async def go() -> None:
        async with harness("todos", data_dir=tmp_path) as h:
            listed = ok(await h.call_tool("todo_list", {"status": "all"}))
            assert "2 todo(s) in todo.md:" in listed
            assert "! todo.md line 2: unknown checkbox mark [?]; write [ ] (open) or [x] (done)" in listed
            assert "! todo.md line 3: due:2026-13-45 is not a date; write YYYY-MM-DD or YYYY-MM-DDTHH:MM" in listed
            assert "! todo.md line 5: id:ab12 is used by an earlier line too; change one" in listed
            fine = id_of(next(line for line in listed.splitlines() if "Fine one" in line))
            ok(await h.call_tool("todo_done", {"id": fine}))
            ok(await h.call_tool("todo_add", {"text": "New"}))

    run(go())
    after = todo_file(tmp_path).read_text().splitlines()
    assert after[:5] == lines[:5]  # the damaged lines (and the rest) untouched
    assert after[5].startswith("- [x] Fine one due:2026-03-01 id:") and after[6].startswith("- [ ] New id:")


def test_filters_open_due_and_tag(tmp_path: Path) -> None:
    today = date.today()

    async def go() -> None:
        async with harness("todos", data_dir=tmp_path) as h:
            for text, due, tags in [
                ("Late", today - timedelta(days=2), ["work"]),
                ("Now", today, ["home"]),
                ("Soon", today + timedelta(days=3), ["work"]),
                ("Later", today + timedelta(days=30), []),
            ]:
                ok(await h.call_tool("todo_add", {"text": text, "due": due.isoformat(), "tags": tags}))
            ok(await h.call_tool("todo_add", {"text": "Someday"}))

            def names(listed: str) -> list[str]:
                return [
                    line.split("] ", 1)[1].split(" (")[0].split(" [id")[0]
                    for line in listed.splitlines()[1:]
                    if line.startswith("- ")
                ]

            assert names(ok(await h.call_tool("todo_list", {}))) == ["Late", "Now", "Soon", "Later", "Someday"]
            assert names(ok(await h.call_tool("todo_list", {"due": "overdue"}))) == ["Late"]
            assert names(ok(await h.call_tool("todo_list", {"due": "today"}))) == ["Late", "Now"]
            assert names(ok(await h.call_tool("todo_list", {"due": "week"}))) == ["Late", "Now", "Soon"]
            assert names(ok(await h.call_tool("todo_list", {"due": "any", "tag": "work"}))) == ["Late", "Soon"]
            assert "overdue" in ok(await h.call_tool("todo_list", {"due": "overdue"}))
            assert "write overdue, today, week, any or a date" in err(
                await h.call_tool("todo_list", {"due": "soonish"})
            )
            assert "is not a date" in err(await h.call_tool("todo_add", {"text": "x", "due": "tomorrow"}))
            assert "remind needs a due date" in err(await h.call_tool("todo_add", {"text": "x", "remind": True}))
            assert "would be read as a field or tag" in err(await h.call_tool("todo_add", {"text": "fix #3"}))

    run(go())


class Reminders:
    """``reminders.schedule`` as the reminders plugin serves it, recording calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def set(self, caller: str, **params: Any) -> dict[str, Any]:
        self.calls.append(("set", params))
        return {"id": f"r{len(self.calls)}", **params}

    def cancel(self, caller: str, **params: Any) -> dict[str, Any]:
        self.calls.append(("cancel", params))
        return {"cancelled": True}


def test_a_due_date_sets_a_reminder_through_the_reminders_facility(tmp_path: Path) -> None:
    reminders = Reminders()
    provide = {"reminders.schedule": {"set": reminders.set, "cancel": reminders.cancel}}

    async def go() -> None:
        config = {"timezone": "Europe/Berlin", "remind_time": "08:30"}
        async with harness("todos", data_dir=tmp_path, config=config, provide=provide) as h:
            added = ok(
                await h.call_tool("todo_add", {"text": "Dentist", "due": "2036-03-02", "remind": True}, session_id="s7")
            )
            tid = id_of(added.split(";")[0])
            assert "; reminder r1 at 2036-03-02T08:30 Europe/Berlin" in added
            assert reminders.calls == [
                (
                    "set",
                    {
                        "text": f"Todo due: Dentist (todo {tid})",
                        "session": "s7",
                        "at": "2036-03-02T08:30",
                        "timezone": "Europe/Berlin",
                    },
                )
            ]
            assert f"remind:r1 id:{tid}" in todo_file(tmp_path).read_text()
            moved = ok(await h.call_tool("todo_update", {"id": tid, "due": "2036-03-04T10:15"}, session_id="s7"))
            assert "reminder r1 cancelled; reminder r3 at 2036-03-04T10:15" in moved
            assert ok(await h.call_tool("todo_done", {"id": tid})).endswith("; reminder r3 cancelled")
            assert reminders.calls[-1] == ("cancel", {"id": "r3"})
            assert "remind:" not in todo_file(tmp_path).read_text()

    run(go())


def test_without_the_reminders_plugin_the_todo_is_kept_without_a_reminder(tmp_path: Path) -> None:
    async def go() -> None:
        async with harness("todos", data_dir=tmp_path) as h:  # no reminders.schedule in this graph
            added = ok(await h.call_tool("todo_add", {"text": "Dentist", "due": "2036-03-02", "remind": True}))
            assert added.endswith("; no reminder (the reminders plugin is not running)")
            assert "Dentist due:2036-03-02 id:" in todo_file(tmp_path).read_text()

    run(go())


def test_the_conformance_kit_passes() -> None:
    from hologram.testing.conformance import check_conformance
    from tests.plugins.helpers import MANIFESTS

    report = check_conformance(MANIFESTS / "todos.toml")
    assert report.ok, report.render()
