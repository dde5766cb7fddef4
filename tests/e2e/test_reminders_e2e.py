"""The agent speaks first, end to end: `hologram up` with the shipped http and reminders plugins, the strict
DeepSeek mock as the model.

A scripted model sets a reminder with `reminder_set` in a turn; when it is due the reminders plugin starts a
turn in that session through ``kernel.turns``, and its answer reaches the clients attached to the session —
a `TurnClient` watching it on the control socket and the web page's SSE stream — though neither sent any
input. A todo with a due date sets its reminder through the reminders plugin's facility, and that fires too.
The first test waits a real two seconds; the second moves the plugin's clock (its test seam,
`HOLOGRAM_REMINDERS_CLOCK`, set through settings.toml's ``[plugins.reminders] env``) across a kernel restart:
the reminder missed while the kernel was down fires once when it is back, marked late, and never again.

Mutation checks (done): the reminder's session not passed to ``kernel.turns`` ``start`` (its turn runs in a new
session) turns the first test red (the watcher and the page wait in vain); the file not saved after a firing
turns the second red (the second restart fires it again).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from hologram.api import turn as api
from hologram.clients import TurnClient
from mock_llm import MockLLM
from tests.kit.manifests import copy_shipped
from tests.kit.providers import provider_toml, write_settings
from tests.kit.wait import wait_until

from .kernel import HOLOGRAM, E2EKernel
from .test_agent_interactive import Terminal

pytestmark = pytest.mark.slow

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=timezone.utc)


class RemindersKernel(E2EKernel):
    """http, reminders and todos from the shipped manifests; ``clock``: the reminders plugin reads its time there."""

    def __init__(self, root: Path, mock: MockLLM, clock: Path | None = None) -> None:  # no super(): its graph
        self.root, self.mocks, self.process = root, [mock], None
        self.data, self.lock = root / "data", root / "hologram.lock"
        manifests = root / "manifests"
        for name in ("http", "reminders", "todos"):
            copy_shipped(name, manifests)
        self.hologram("build", "--no-discover", "-m", str(manifests), "-o", str(self.lock), check=True)
        self.data.mkdir()
        seam = f'[plugins.reminders]\nenv = {{ HOLOGRAM_REMINDERS_CLOCK = "{clock}" }}\n\n' if clock else ""
        write_settings(self.data / "settings.toml", f"[agent]\nmax_steps = 4\n\n{seam}" + provider_toml(mock))

    def web(self) -> httpx.Client:
        info = json.loads((self.data / "http.json").read_text())
        token = (self.data / "http-token").read_text().strip()
        return httpx.Client(base_url=info["url"], headers={"authorization": f"Bearer {token}"}, timeout=60)


class SseReader(threading.Thread):
    """The web page's stream of one session (`GET /api/sessions/{sid}/events`), read until ``stop(events)``."""

    def __init__(self, kernel: RemindersKernel, session: str, stop: Any) -> None:
        super().__init__(daemon=True)
        self.kernel, self.session, self.stop = kernel, session, stop
        self.events: list[dict[str, Any]] = []
        self.connected = threading.Event()  # the plugin watches the session from here on (it says ": connected")
        self.failure: BaseException | None = None

    def run(self) -> None:
        try:
            with (
                self.kernel.web() as web,
                web.stream("GET", f"/api/sessions/{self.session}/events", timeout=90) as response,
            ):
                assert response.status_code == 200
                for line in response.iter_lines():
                    if line.startswith(": connected"):
                        self.connected.set()
                    elif line.startswith("data: "):
                        self.events.append(orjson.loads(line[6:]))
                        if self.stop(self.events):
                            return
        except BaseException as exc:  # read by the test
            self.failure = exc
            self.connected.set()


def reminder_turn_ended(events: list[Any]) -> bool:
    """The stream holds a whole turn the reminder started: its start and its end."""
    started = {e["turn"] for e in events if e["type"] == "turn.started" and e["client"] == "reminder"}
    return any(e["type"] == "turn.ended" and e["turn"] in started for e in events)


def call(call_id: str, name: str, **arguments: Any) -> dict[str, str]:
    return {"id": call_id, "name": name, "arguments": json.dumps(arguments)}


@pytest.fixture
def kernel(tmp_path: Path, mock: MockLLM) -> Iterator[RemindersKernel]:
    mock.reset()
    k = RemindersKernel(tmp_path, mock)
    k.start()
    yield k
    k.stop()


def test_a_reminder_set_by_the_model_speaks_to_the_attached_clients(kernel: RemindersKernel, mock: MockLLM) -> None:
    mock.script(
        [
            {
                "reasoning_content": "r",
                "tool_calls": [call("c1", "reminder_set", text="Stretch your legs", after="2s")],
            },
            {"reasoning_content": "r", "content": "I will remind you in two seconds."},
            {"reasoning_content": "r", "content": "Time to stretch your legs!"},  # the reminder's turn
        ]
    )

    async def go() -> tuple[str, list[Any]]:
        async with (
            await TurnClient.connect(kernel.data, client="e2e-asker") as asker,
            await TurnClient.connect(kernel.data, client="e2e-watcher") as watcher,
        ):
            session = await asker.create_session("reminder test")
            page = SseReader(kernel, session, reminder_turn_ended)
            page.start()
            assert await asyncio.to_thread(page.connected.wait, 60) and page.failure is None
            watching = await watcher.watch(session)  # attached before anything happens; it sends no input
            first = await asker.start("remind me in 2 seconds to stretch", session=session)
            assert (await first.result()).output == "I will remind you in two seconds."
            seen: list[Any] = []
            async with asyncio.timeout(60):  # a failure bound: the reminder is due 2 s after it was set
                async for event in watching:
                    seen.append(event)
                    if isinstance(event, api.TurnEnded) and event.turn != first.turn:
                        break
            await asyncio.to_thread(page.join, 60)
            assert page.failure is None and reminder_turn_ended(page.events)
            return session, [seen, page.events]

    session, (seen, sse) = asyncio.run(go())
    started = [e for e in seen if isinstance(e, api.TurnStarted)]
    assert [s.client for s in started] == ["e2e-asker", "reminder"]
    reminder = started[1]
    assert reminder.channel == "reminders" and reminder.partner.startswith("reminder-")
    rid = reminder.partner.removeprefix("reminder-")
    assert reminder.text.startswith(f"[reminder {rid} set at ") and reminder.text.endswith("(UTC)] Stretch your legs")
    said = "".join(e.text for e in seen if isinstance(e, api.ContentDelta) and e.turn == reminder.turn)
    assert said == "Time to stretch your legs!"
    [ended] = [e for e in seen if isinstance(e, api.TurnEnded) and e.turn == reminder.turn]
    assert (ended.stop_reason, ended.output) == ("answer", "Time to stretch your legs!")

    page_turn = [e for e in sse if e["type"] == "turn.started" and e["client"] == "reminder"]
    assert [e["turn"] for e in page_turn] == [reminder.turn]
    assert "".join(e["text"] for e in sse if e["type"] == "content.delta" and e["turn"] == reminder.turn) == said

    # what the model was sent: the reminder's text as the turn's input, in the session's history
    last = mock.requests[-1].body["messages"]
    assert last[-1] == {"role": "user", "content": reminder.text}
    assert any(m["role"] == "assistant" and m.get("content") == "I will remind you in two seconds." for m in last)
    stored = kernel.events(session)["events"]
    inputs = [e["data"] for e in stored if e["kind"] == "input"]
    assert inputs[1]["client"] == "reminder" and inputs[1]["partner"] == f"reminder-{rid}"


def test_hologram_chat_shows_the_reminder_at_its_prompt(kernel: RemindersKernel, mock: MockLLM) -> None:
    """`hologram chat` at its prompt watches its session: the reminder's turn shows there, nothing typed."""
    mock.script(
        [
            {
                "reasoning_content": "r",
                "tool_calls": [call("c1", "reminder_set", text="Stretch your legs", after="2s")],
            },
            {"reasoning_content": "r", "content": "I will remind you."},
            {"reasoning_content": "r", "content": "Time to stretch your legs!"},  # the reminder's turn
        ]
    )
    terminal = Terminal([*HOLOGRAM, "chat", "--data", str(kernel.data)], kernel.root)
    try:
        terminal.expect("you> ", timeout=60)
        terminal.type("remind me in 2 seconds to stretch\n")
        terminal.expect("I will remind you.", timeout=60)
        # (the prompt comes back meanwhile; on a slow machine the reminder's turn may be shown before it)
        shown = terminal.expect("Time to stretch your legs!", timeout=60)  # a failure bound: due 2 s after it was set
        assert "[reminder] [reminder " in shown and "(UTC)] Stretch your legs" in shown
        terminal.expect("you> ", timeout=60)
        terminal.type("\x04")
        assert terminal.wait(timeout=60) == 0, terminal.buffer
    finally:
        terminal.close()


def test_missed_while_the_kernel_was_down_fires_once_late(tmp_path: Path, mock: MockLLM) -> None:
    mock.reset()
    clock = tmp_path / "clock"
    clock.write_text(T0.isoformat())
    kernel = RemindersKernel(tmp_path, mock, clock=clock)
    mock.script(
        [
            {
                "reasoning_content": "r",
                "tool_calls": [call("c1", "reminder_set", text="Call the bank", at="2026-03-01T09:00Z")],
            },
            {"reasoning_content": "r", "content": "Reminder set for 09:00."},
            {"reasoning_content": "r", "content": "You wanted to call the bank (I'm late)."},  # after the restart
            {"reasoning_content": "r", "content": "Still here."},  # the turn after the second restart
        ]
    )

    async def turn(text: str, session: str | None = None) -> tuple[str, str]:
        async with await TurnClient.connect(kernel.data, client="e2e") as client:
            stream = await client.start(text, session=session)
            return stream.session or "", (await stream.result()).output

    kernel.start()
    try:
        session, said = asyncio.run(turn("remind me at 9 to call the bank"))
        assert said == "Reminder set for 09:00."
    finally:
        kernel.stop()
    clock.write_text((T0 + timedelta(hours=3)).isoformat())  # the kernel was down from 08:00 to 11:00

    def outputs() -> list[str]:
        return [e["data"]["text"] for e in kernel.events(session)["events"] if e["kind"] == "output"]

    kernel.start()
    try:
        # the plugin fired before it was ready; the turn answers on its own, nobody asked
        wait_until(outputs, accept=lambda o: len(o) == 2, timeout=60, what="the late reminder's answer stored")
        inputs = [e["data"] for e in kernel.events(session)["events"] if e["kind"] == "input"]
        late = inputs[1]
        assert late["client"] == "reminder"
        assert (
            "for 2026-03-01T09:00+00:00 (UTC); late by 2 h: Hologram was not running at that time] Call the bank"
            in (late["text"])
        )
        assert outputs()[1] == "You wanted to call the bank (I'm late)."
    finally:
        kernel.stop()

    kernel.start()  # again: nothing left to fire
    try:
        # a turn in the same session runs after anything a (wrong) second firing would have queued there
        assert asyncio.run(turn("are you there?", session))[1] == "Still here."
        inputs = [e["data"]["text"] for e in kernel.events(session)["events"] if e["kind"] == "input"]
        assert sum(text.startswith("[reminder") for text in inputs) == 1, inputs
    finally:
        kernel.stop()


def test_a_todo_due_date_reminds_through_the_reminders_plugin(tmp_path: Path, mock: MockLLM) -> None:
    """todos asks reminders (``reminders.schedule``, after_if_present) for the reminder; when the clock reaches the
    due time, the reminder's turn speaks to the watcher of the session the todo was added in."""
    mock.reset()
    clock = tmp_path / "clock"
    clock.write_text(T0.isoformat())
    kernel = RemindersKernel(tmp_path, mock, clock=clock)
    mock.script(
        [
            {
                "reasoning_content": "r",
                "tool_calls": [call("c1", "todo_add", text="Pay rent", due="2026-03-01T09:00", remind=True)],
            },
            {"reasoning_content": "r", "content": "Added, with a reminder."},
            {"reasoning_content": "r", "content": "Rent is due now."},
        ]
    )

    async def go() -> tuple[str, list[Any]]:
        async with await TurnClient.connect(kernel.data, client="e2e") as client:
            first = await client.start("add paying rent at 9, remind me")
            assert (await first.result()).output == "Added, with a reminder."
            assert first.session is not None
            watching = await client.watch(first.session)
            clock.write_text((T0 + timedelta(hours=1)).isoformat())  # 09:00: the reminder is due
            seen: list[Any] = []
            async with asyncio.timeout(60):
                async for event in watching:
                    seen.append(event)
                    if isinstance(event, api.TurnEnded):
                        break
            return first.session, seen

    kernel.start()
    try:
        session, seen = asyncio.run(go())
    finally:
        kernel.stop()
    line = (kernel.data / "plugins" / "todos" / "todo.md").read_text().splitlines()[-1]
    assert line.startswith("- [ ] Pay rent due:2026-03-01T09:00 remind:")
    rid, tid = line.split("remind:")[1].split()[0], line.split("id:")[1].split()[0]
    reminders = json.loads((kernel.data / "plugins" / "reminders" / "reminders.json").read_text())["reminders"]
    [made] = [r for r in reminders if r["id"] == rid]
    assert (made["source"], made["session"], made["state"]) == ("todos", session, "done")
    [started] = [e for e in seen if isinstance(e, api.TurnStarted)]
    assert started.client == "reminder"
    assert started.text == (
        f"[reminder {rid} set at 2026-03-01T08:00+00:00 for 2026-03-01T09:00+00:00 (UTC)] Todo due: Pay rent (todo {tid})"
    )
    assert seen[-1].output == "Rent is due now."
