"""todos: a todo list the model keeps in a Markdown file a person reads and edits too (store.py).

A due date can set a reminder: with ``remind``, the todo asks the reminders plugin (its ``reminders.schedule``
facility, ``after_if_present`` in the manifest: a graph without reminders keeps its todos, without reminders)
to start a turn in the session at the due time; the reminder's id goes into the line (``remind:ID``) and is
cancelled when the todo is done, deleted or moved to another day.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import date, datetime, time, timedelta
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from hologram.sdk import Plugin, RpcError, StartContext, ToolContext, tool_error
from hologram_plugins._time import zone, zone_name
from hologram_plugins.todos.store import Parsed, Todo, TodoError, TodoFile, parse_due, show_due

log = logging.getLogger("hologram_plugins.todos")
REMINDERS = "reminders.schedule"


class TodosConfig(BaseModel):
    """settings.toml's ``[plugins.todos]``, checked at start (its JSON Schema: manifests/todos.config.schema.json)."""

    model_config = ConfigDict(extra="forbid")  # a misspelt key fails the start, naming it

    file: str = Field(
        "todo.md", min_length=1, description="The Markdown task list, relative to the data dir or absolute."
    )
    timezone: Annotated[str, AfterValidator(zone_name)] = Field(
        "UTC", description="IANA zone of due times, e.g. 'Europe/Berlin'."
    )
    remind_time: str = Field("09:00", description="When a reminder of a todo due on a date (no time) comes, HH:MM.")

    @field_validator("remind_time")
    @classmethod
    def _a_time(cls, value: str) -> str:
        try:
            time.fromisoformat(value)
        except ValueError:
            raise ValueError(f"{value!r} is not a time of day; write HH:MM, e.g. '09:00'") from None
        return value


def _state(ctx: StartContext[TodosConfig]) -> TodoFile:
    return TodoFile(Path(ctx.data_dir) / ctx.config.file)


plugin = Plugin("todos", state=_state, config=TodosConfig)


def _today() -> date:
    return datetime.now(zone(plugin.config.timezone, "UTC")).date()


def _day(value: date | datetime) -> date:
    return value.date() if isinstance(value, datetime) else value


def _line(todo: Todo, today: date) -> str:
    due = ""
    if todo.due is not None:
        late = " — overdue" if not todo.done and _day(todo.due) < today else ""
        due = f" (due {show_due(todo.due)}{late})"
    tags = "".join(f" #{t}" for t in todo.tags)
    reminder = f" [reminder {todo.remind}]" if todo.remind else ""
    return f"- [{'x' if todo.done else ' '}] {todo.text}{due}{tags}{reminder} [id {todo.id}]"


def _problems(parsed: Parsed) -> list[str]:
    return [f"! {d.report(plugin.state.path.name)}" for d in parsed.damaged]


# -- reminders through the reminders plugin, when there is one ---------------------------------------------


async def _remind(todo: Todo, session: str | None) -> tuple[str | None, str]:
    """Set the reminder of ``todo``'s due time: (its id, what to tell the model)."""
    if todo.due is None:
        return None, "; no reminder: the todo has no due date"
    config: TodosConfig = plugin.config
    at = (
        todo.due
        if isinstance(todo.due, datetime)
        else datetime.combine(todo.due, time.fromisoformat(config.remind_time))
    )
    try:
        made = await plugin.facility(REMINDERS).call(
            "set", text=f"Todo due: {todo.text} (todo {todo.id})", session=session,
            at=at.isoformat(timespec="minutes"), timezone=config.timezone,
        )  # fmt: skip
    except RpcError as exc:
        return None, f"; no reminder ({_why(exc)})"
    return str(made["id"]), f"; reminder {made['id']} at {at.isoformat(timespec='minutes')} {config.timezone}"


async def _unremind(todo: Todo) -> str:
    if not todo.remind:
        return ""
    try:
        answer = await plugin.facility(REMINDERS).call("cancel", id=todo.remind)
    except RpcError as exc:
        return f"; its reminder {todo.remind} could not be cancelled ({_why(exc)})"
    return f"; reminder {todo.remind} cancelled" if answer.get("cancelled") else ""


def _why(exc: RpcError) -> str:
    from hologram.rpc import NOT_READY

    if exc.code == NOT_READY:
        return "the reminders plugin is not running"
    return exc.message


# -- tools ---------------------------------------------------------------------------------------------------


@plugin.tool("todo_add")
async def todo_add(
    text: str, ctx: ToolContext, due: str | None = None, tags: list[str] | None = None, remind: bool = False
) -> Any:
    try:
        todo = Todo(id="", text=_one_line(text), due=parse_due(due) if due else None, tags=_tags(tags))
    except TodoError as exc:
        return tool_error(str(exc))
    if remind and todo.due is None:
        return tool_error("remind needs a due date: give due too")
    store: TodoFile = plugin.state
    todo = store.add(todo)
    said = ""
    if remind:
        reminder, said = await _remind(todo, ctx.session_id)
        if reminder:
            todo = replace(todo, remind=reminder)
            store.change(todo)
    return f"added {_line(todo, _today())[2:]}{said}"


@plugin.tool("todo_list")
async def todo_list(status: str = "open", due: str | None = None, tag: str | None = None) -> Any:
    store: TodoFile = plugin.state
    try:
        parsed = store.read()
        keep = _due_filter(due)
    except TodoError as exc:
        return tool_error(str(exc))
    if status not in ("open", "done", "all"):
        return tool_error(f"status {status!r}: write open, done or all")
    today = _today()
    chosen = [
        t for t in parsed.todos
        if (status == "all" or t.done == (status == "done"))
        and (tag is None or tag.lstrip("#") in t.tags)
        and keep(t, today)
    ]  # fmt: skip
    chosen.sort(key=lambda t: (t.done, t.due is None, str(t.due and show_due(t.due)), t.line))
    what = " ".join(w for w in (status if status != "all" else "", f"#{tag.lstrip('#')}" if tag else "") if w)
    head = f"{len(chosen)} {what + ' ' if what else ''}todo(s){f' due {due}' if due else ''} in {store.path.name}"
    return "\n".join([head + (":" if chosen else ""), *(_line(t, today) for t in chosen), *_problems(parsed)])


def _due_filter(due: str | None) -> Any:
    if due is None:
        return lambda todo, today: True
    word = due.strip().lower()

    def within(last: Any) -> Any:
        return lambda todo, today: todo.due is not None and _day(todo.due) <= last(today)

    if word == "overdue":
        return lambda todo, today: todo.due is not None and not todo.done and _day(todo.due) < today
    if word == "today":
        return within(lambda today: today)
    if word == "week":
        return within(lambda today: today + timedelta(days=7))
    if word == "any":
        return lambda todo, today: todo.due is not None
    try:
        last = date.fromisoformat(word)
    except ValueError:
        raise TodoError(f"due {due!r}: write overdue, today, week, any or a date YYYY-MM-DD (due by then)") from None
    return within(lambda today: last)


@plugin.tool("todo_update")
async def todo_update(
    id: str,
    ctx: ToolContext,
    text: str | None = None,
    due: str | None = None,
    tags: list[str] | None = None,
    remind: bool | None = None,
    done: bool | None = None,
) -> Any:
    store: TodoFile = plugin.state
    try:
        todo = store.find(store.read(), id)
        changed = replace(
            todo,
            text=_one_line(text) if text is not None else todo.text,
            due=(parse_due(due) if due else None) if due is not None else todo.due,
            tags=_tags(tags) if tags is not None else todo.tags,
        )
    except TodoError as exc:
        return tool_error(str(exc))
    said = ""
    if done is not None and done != todo.done:
        changed = replace(changed, done=done, done_on=_today() if done else None)
    wants_reminder = (remind if remind is not None else bool(todo.remind)) and not changed.done
    if todo.remind and (not wants_reminder or changed.due != todo.due or changed.text != todo.text):
        said += await _unremind(todo)
        changed = replace(changed, remind=None)
    if wants_reminder and changed.remind is None:
        if changed.due is None:
            return tool_error("remind needs a due date: give due too")
        reminder, more = await _remind(changed, ctx.session_id)
        changed, said = replace(changed, remind=reminder), said + more
    try:
        store.change(changed)
    except TodoError as exc:
        return tool_error(str(exc))
    return f"updated {_line(changed, _today())[2:]}{said}"


@plugin.tool("todo_done")
async def todo_done(id: str) -> Any:
    store: TodoFile = plugin.state
    try:
        todo = store.find(store.read(), id)
    except TodoError as exc:
        return tool_error(str(exc))
    if todo.done:
        return f"already done: {todo.text} [id {todo.id}]"
    said = await _unremind(todo)
    try:
        store.change(replace(todo, done=True, done_on=_today(), remind=None))
    except TodoError as exc:
        return tool_error(str(exc))
    return f"done: {todo.text} [id {todo.id}]{said}"


@plugin.tool("todo_delete")
async def todo_delete(id: str) -> Any:
    store: TodoFile = plugin.state
    try:
        todo = store.delete(id)
    except TodoError as exc:
        return tool_error(str(exc))
    return f"deleted: {todo.text} [id {todo.id}]{await _unremind(todo)}"


def _one_line(text: str) -> str:
    words = text.split()
    if not words:
        raise TodoError("a todo needs text")
    bad = [w for w in words if w.startswith("#") or w.split(":", 1)[0] in ("due", "id", "done", "remind")]
    if bad:
        raise TodoError(f"{bad[0]!r} in the text would be read as a field or tag; pass tags and due separately")
    return " ".join(words)


def _tags(tags: list[str] | None) -> list[str]:
    return [t.strip().lstrip("#").replace(" ", "-") for t in tags or [] if t.strip().lstrip("#")]
