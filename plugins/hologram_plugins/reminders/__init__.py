"""reminders: the agent speaks first — at a time, after a delay, or again and again (cron, RRULE), in a time zone.

`reminder_set` keeps the session of the call it came in (the tool context's ``session_id``); when the
reminder is due the plugin starts a turn there through ``kernel.turns`` (firing.py), so whoever watches that
session sees the agent's answer without having typed anything. Reminders live in ``reminders.json`` in the
plugin's data directory (store.py) and survive restarts; one missed while the kernel was down fires once
when it is back, marked late. Other plugins set reminders through the ``reminders.schedule`` facility (the
todos plugin does, for a due date).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from hologram.sdk import Plugin, StartContext, StartRefused, ToolContext, tool_error
from hologram_plugins._time import TimeError, zone, zone_name
from hologram_plugins.reminders.clock import Clock, ClockError, clock_from_environment
from hologram_plugins.reminders.firing import Scheduler, shown, span
from hologram_plugins.reminders.schedule import WhenError, describe, plan
from hologram_plugins.reminders.store import Reminder, ReminderFile, StoreError

log = logging.getLogger("hologram_plugins.reminders")
FACILITY = "reminders.schedule"
CLIENT = "reminder"  # the `client` of a reminder's turn; its `partner` is "reminder-<id>"
MAX_TEXT = 2000  # characters: the reminder's turn input stays far below the kernel's input limit


class RemindersConfig(BaseModel):
    """settings.toml's ``[plugins.reminders]``, checked at start (its JSON Schema:
    manifests/reminders.config.schema.json)."""

    model_config = ConfigDict(extra="forbid")  # a misspelt key fails the start, naming it

    file: str = Field(
        "reminders.json", min_length=1, description="The reminders file, relative to the plugin's data dir or absolute."
    )
    timezone: Annotated[str, AfterValidator(zone_name)] = Field(
        "UTC", description="IANA zone of times given without an offset, e.g. 'Europe/Berlin'."
    )


@dataclass
class RemindersState:
    store: ReminderFile
    clock: Clock
    timezone: str
    scheduler: Scheduler | None = None
    tasks: set[asyncio.Task[Any]] = field(default_factory=set)


def _state(ctx: StartContext[RemindersConfig]) -> RemindersState:
    store = ReminderFile(Path(ctx.data_dir) / ctx.config.file)
    try:
        store.load()
        clock = clock_from_environment()
    except (StoreError, ClockError) as exc:
        raise StartRefused(str(exc)) from None
    return RemindersState(store, clock, ctx.config.timezone)


plugin = Plugin("reminders", state=_state, config=RemindersConfig)


async def _start_turn(reminder: Reminder, text: str) -> str:
    """The reminder's turn in its session, as a channel starts one: nobody from this plugin watches it, and it
    runs to its end whoever comes and goes (``on_disconnect = "continue"``)."""
    params: dict[str, Any] = {
        "text": text,
        "client": CLIENT,
        "partner": f"reminder-{reminder.id}",
        "watch": False,
        "on_disconnect": "continue",
    }
    if reminder.session:
        params["session"] = reminder.session
    answer = await plugin.facility("kernel.turns").call("start", **params)
    return str(answer.get("turn", ""))


@plugin.on_start
async def start(ctx: StartContext[RemindersConfig]) -> None:
    state = plugin.state
    state.scheduler = Scheduler(state.store, state.clock, _start_turn)
    await state.scheduler.fire_due()  # what came due while the kernel was down: once, late, before "ready"
    task = asyncio.get_running_loop().create_task(state.scheduler.run())
    state.tasks.add(task)
    task.add_done_callback(_ended)
    problems = state.store.problems()
    for problem in problems:
        log.warning("%s", problem)
    if problems:
        await plugin.set_status(f"{len(problems)} damaged entr{'y' if len(problems) == 1 else 'ies'}: {problems[0]}")


def _ended(task: asyncio.Task[Any]) -> None:
    plugin.state.tasks.discard(task)
    if not task.cancelled() and task.exception() is not None:
        log.error("the reminders scheduler stopped", exc_info=task.exception())


@plugin.on_stop
async def stop() -> None:
    for task in list(plugin.state.tasks):
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


# -- setting, listing, cancelling (the tools and the facility share these) ---------------------------------


def add(
    text: str,
    session: str | None,
    *,
    at: str | None = None,
    after: str | None = None,
    cron: str | None = None,
    rrule: str | None = None,
    timezone_name: str | None = None,
    source: str = "reminder_set",
) -> Reminder:
    """A new reminder, saved; raises `WhenError`/`TimeError` with a message for the model."""
    state = plugin.state
    if not text.strip():
        raise WhenError("say what to remind of (text)")
    if len(text) > MAX_TEXT:
        raise WhenError(f"the text is {len(text)} characters; a reminder holds at most {MAX_TEXT}: say it shorter")
    tz = zone(timezone_name, state.timezone)
    now = state.clock.now()
    schedule = plan(now, tz, at=at, after=after, cron=cron, rrule=rrule)
    reminder = Reminder(
        id=state.store.new_id(),
        text=text.strip(),
        session=session,
        timezone=tz.key,
        kind=schedule.kind,
        rule=schedule.rule,
        start=schedule.start.isoformat(),
        due=schedule.due.isoformat(),
        created=now.isoformat(),
        source=source,
    )
    state.store.reminders[reminder.id] = reminder
    state.store.save()
    if state.scheduler is not None:
        state.scheduler.poke()
    return reminder


def cancel(reminder_id: str) -> Reminder | None:
    state = plugin.state
    reminder = state.store.reminders.get(reminder_id.strip())
    if reminder is None or reminder.state != "active":
        return None
    reminder.state, reminder.due = "cancelled", None
    reminder.finished = state.clock.now().isoformat()
    state.store.save()
    if state.scheduler is not None:
        state.scheduler.poke()
    return reminder


def line(reminder: Reminder, now: datetime) -> str:
    tz = zone(reminder.timezone, "UTC")
    due = reminder.due_at()
    when = f"{shown(due, tz)} (in {span(due - now)})" if due else reminder.state
    repeats = f"; repeats: {describe(reminder.kind, reminder.rule)}" if reminder.kind != "once" else ""
    fired = (
        f"; fired {reminder.fired}×, last {shown(datetime.fromisoformat(reminder.last_fired), tz)}"
        if (reminder.last_fired)
        else ""
    )
    error = plugin.state.scheduler.errors.get(reminder.id) if plugin.state.scheduler else None
    failing = f"; its last turn could not start: {error}" if error else ""
    return f"- [{reminder.id}] {when} {reminder.timezone}{repeats}{fired}{failing}: {reminder.text}"


# -- tools ---------------------------------------------------------------------------------------------------


@plugin.tool("reminder_set")
async def reminder_set(
    text: str,
    ctx: ToolContext,
    at: str | None = None,
    after: str | None = None,
    cron: str | None = None,
    rrule: str | None = None,
    timezone: str | None = None,
) -> Any:
    try:
        reminder = add(text, ctx.session_id, at=at, after=after, cron=cron, rrule=rrule, timezone_name=timezone)
    except (WhenError, TimeError) as exc:
        return tool_error(str(exc))
    tz = zone(reminder.timezone, "UTC")
    due = reminder.due_at()
    assert due is not None
    where = "this session" if reminder.session else "a new session"
    repeats = f", then by {describe(reminder.kind, reminder.rule)}" if reminder.kind != "once" else ""
    wait = span(due - plugin.state.clock.now())
    return (
        f"reminder {reminder.id} set for {shown(due, tz)} ({reminder.timezone}, in {wait}){repeats}; "
        f"at that time a turn starts in {where} with its text"
    )


@plugin.tool("reminder_list")
async def reminder_list(ctx: ToolContext, all_sessions: bool = False) -> str:
    state = plugin.state
    now = state.clock.now()
    shown_here = [r for r in state.store.active() if all_sessions or r.session == ctx.session_id]
    lines = [line(r, now) for r in shown_here]
    problems = [f"! {p}" for p in state.store.problems()]
    if not lines:
        scope = "" if all_sessions else " in this session (all_sessions=true lists every session's)"
        return "\n".join([f"no reminders pending{scope}", *problems])
    head = f"{len(lines)} reminder(s) pending{'' if all_sessions else ' in this session'}, next first:"
    return "\n".join([head, *lines, *problems])


@plugin.tool("reminder_cancel")
async def reminder_cancel(id: str) -> Any:
    reminder = cancel(id)
    if reminder is None:
        return tool_error(f"no pending reminder {id!r}; reminder_list shows them")
    return f"cancelled reminder {reminder.id}: {reminder.text}"


# -- reminders.schedule: for other plugins (todos) ----------------------------------------------------------


@plugin.method(FACILITY, "set")
async def facility_set(
    caller: str,
    text: str,
    session: str | None = None,
    at: str | None = None,
    after: str | None = None,
    cron: str | None = None,
    rrule: str | None = None,
    timezone: str | None = None,
) -> dict[str, Any]:
    """Set a reminder in ``session`` (None: a new session when it fires); the same rules as ``reminder_set``.
    A time it cannot use is an error (-32000) whose message says why."""
    try:
        reminder = add(text, session, at=at, after=after, cron=cron, rrule=rrule, timezone_name=timezone, source=caller)
    except (WhenError, TimeError) as exc:
        from hologram.rpc import APPLICATION_ERROR, RpcError

        raise RpcError(APPLICATION_ERROR, str(exc)) from None
    return reminder.public()


@plugin.method(FACILITY, "cancel")
async def facility_cancel(caller: str, id: str) -> dict[str, Any]:
    return {"cancelled": cancel(id) is not None}


@plugin.method(FACILITY, "get")
async def facility_get(caller: str, id: str) -> dict[str, Any] | None:
    reminder = plugin.state.store.reminders.get(id)
    return None if reminder is None else reminder.public()
