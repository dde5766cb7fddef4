"""End to end, with a person at a terminal: `hologram ask` / `hologram chat` run in a real pseudo-terminal
(`os.openpty`, made the client's controlling terminal, so Ctrl-C is the byte 0x03 typed into it and the
terminal driver sends SIGINT) against a real `hologram up` and the strict DeepSeek mock.

Covered:
- interactive approval: the tool's manifest says ``needs_approval``; the kernel sends the turn's client an
  ``approval.requested`` event; the client prompts on the terminal and answers with ``turn/approve``; yes
  runs the tool, no denies it with the person's answer as the reason; a client that is not on a terminal
  is never asked (refused, and the model is told why).
- Ctrl-C of `hologram ask` mid-turn: the client sends ``turn/cancel``, the kernel cancels the turn, the call
  in flight gets a synthetic "cancelled" result, the client exits 130; the next turn of the session works.
- the `ask` client killed outright (no ``turn/cancel``): the kernel sees the connection close and cancels the
  turn as well (decided: a turn nobody is listening to is stopped, not finished; documented in docs/agent.md).
- Ctrl-C in `hologram chat` cancels the turn, chat stays open, the next message works, the history is valid.
- Ctrl-C at the approval prompt cancels at once (no thread left blocked on stdin).

Mutation checks (done):
- `TurnHub._detach` not cancelling the turn when its last client goes away → the killed-client test is red
  (the slow call is still open after the deadline).
- the CLI's SIGINT handler (`ask_cmd.one_turn.on_sigint`) not sending ``turn/cancel`` → the ask and chat
  Ctrl-C tests are red (the turn runs on; the client waits for the 30 s tool).
- `TurnHub.ask` answering without asking the clients → the approval tests are red.
- the prompt reading stdin in an executor thread (as before) → the approval-prompt Ctrl-C test is red.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import select
import signal
import subprocess
import termios
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mock_llm import MockLLM
from tests.kit.wait import wait_until

from .kernel import HOLOGRAM, E2EKernel, env

pytestmark = pytest.mark.slow

PLUGIN = '''
"""e2e plugin: a slow tool (to be interrupted) and a tool that needs the person's approval."""
import asyncio, os
from pathlib import Path
from hologram.sdk import Plugin

plugin = Plugin("e2e-interactive")
MARKERS = Path(os.environ["E2E_MARKERS"])


@plugin.tool("slow")
async def slow(seconds: float, ctx) -> str:
    (MARKERS / f"slow-{ctx.call_id}").write_text("started")
    await asyncio.sleep(seconds)
    return f"slept {seconds}"


@plugin.tool("guarded")
async def guarded(x: int) -> str:
    return f"guarded ran with {x}"


if __name__ == "__main__":
    plugin.run()
'''

MANIFEST = """\
[plugin]
name = "e2e-interactive"
version = "0.1.0"
description = "e2e: slow and guarded tools"
run = {{ module = "agent_interactive_plugin", env = {{ PYTHONPATH = "{path}", E2E_MARKERS = "{markers}" }} }}

[[tools]]
name = "slow"
description = "sleep"
parallel_safe = false
parameters = {{ type = "object", properties = {{ seconds = {{ type = "number" }} }}, required = ["seconds"] }}

[[tools]]
name = "guarded"
description = "needs approval"
parallel_safe = false
needs_approval = true
parameters = {{ type = "object", properties = {{ x = {{ type = "integer" }} }}, required = ["x"] }}
"""

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class Terminal:
    """A client process on a pseudo-terminal that is its controlling terminal."""

    def __init__(self, argv: list[str], cwd: Path) -> None:
        master, slave = os.openpty()
        self.master = master
        self.buffer = ""

        def controlling_tty() -> None:
            os.setsid()
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        self.process = subprocess.Popen(
            argv, stdin=slave, stdout=slave, stderr=slave, env=env(), cwd=cwd, preexec_fn=controlling_tty
        )
        os.close(slave)

    def read(self, timeout: float = 0.1) -> str:
        ready, _, _ = select.select([self.master], [], [], timeout)
        if ready:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:  # EIO: the client exited and the terminal closed
                return ""
            self.buffer += ANSI.sub("", chunk.decode(errors="replace"))
        return self.buffer

    def expect(self, text: str, timeout: float = 20.0) -> str:
        """Wait for ``text``; returns what the terminal showed up to it and keeps only what came after."""
        deadline = time.monotonic() + timeout
        while text not in self.buffer:
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} did not appear; the terminal shows:\n{self.buffer}")
            self.read()
        end = self.buffer.index(text) + len(text)
        seen, self.buffer = self.buffer[:end], self.buffer[end:]
        return seen

    def type(self, text: str) -> None:
        os.write(self.master, text.encode())

    def wait(self, timeout: float = 20.0) -> int:
        deadline = time.monotonic() + timeout
        while self.process.poll() is None:
            if time.monotonic() > deadline:
                raise AssertionError(f"the client did not exit; the terminal shows:\n{self.buffer}")
            self.read()
        self.read(0)
        return self.process.returncode

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        with contextlib.suppress(OSError):
            os.close(self.master)


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory, mock: MockLLM) -> Iterator[E2EKernel]:
    root = tmp_path_factory.mktemp("interactive")
    k = E2EKernel(root, [mock])
    code = root / "code"
    code.mkdir()
    (code / "agent_interactive_plugin.py").write_text(PLUGIN)
    markers = root / "markers"
    markers.mkdir()
    (root / "manifests" / "e2e-interactive.toml").write_text(MANIFEST.format(path=code, markers=markers))
    k.hologram("build", "--no-discover", "-m", str(root / "manifests"), "-o", str(k.lock), check=True)
    k.start()
    yield k
    k.stop()


@pytest.fixture(autouse=True)
def fresh(mock: MockLLM) -> None:
    mock.reset()


@pytest.fixture
def terminals() -> Iterator[list[Terminal]]:
    opened: list[Terminal] = []
    yield opened
    for terminal in opened:
        terminal.close()


def open_terminal(kernel: E2EKernel, terminals: list[Terminal], *args: str) -> Terminal:
    terminal = Terminal([*HOLOGRAM, *args, "--data", str(kernel.data)], kernel.root)
    terminals.append(terminal)
    return terminal


def call(call_id: str, name: str, **arguments: Any) -> dict[str, str]:
    return {"id": call_id, "name": name, "arguments": json.dumps(arguments)}


def events_of(kernel: E2EKernel, session: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = kernel.events(session)["events"]
    return events


def valid(events: list[dict[str, Any]]) -> list[str]:
    """The call/result invariant on a ``sessions/events`` answer (call ids are unique within these tests)."""
    calls = [c["id"] for e in events if e["kind"] == "response" for c in e["data"].get("tool_calls") or []]
    results = [e["call_id"] for e in events if e["kind"] == "tool_result"]
    problems = [f"call {c} has {results.count(c)} results" for c in calls if results.count(c) != 1]
    return problems + [f"result {r} has no call" for r in results if r not in calls]


def result_of(events: list[dict[str, Any]], call_id: str) -> dict[str, Any]:
    found = [e["data"] for e in events if e["kind"] == "tool_result" and e["call_id"] == call_id]
    assert len(found) == 1, found
    return found[0]


def session_in(text: str) -> str:
    match = re.search(r"session ([0-9a-f]{6,})", text)
    assert match, text
    return match.group(1)


def wait_marker(kernel: E2EKernel, call_id: str, timeout: float = 20.0) -> None:
    marker = kernel.root / "markers" / f"slow-{call_id}"
    wait_until(marker.exists, timeout=timeout, what=f"the slow call {call_id} to start")


# -- approval ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("answer", "approved"), [("y", True), ("n", False)])
def test_approval_is_asked_at_the_terminal_and_decides_the_call(
    kernel: E2EKernel, mock: MockLLM, terminals: list[Terminal], answer: str, approved: bool
) -> None:
    mock.script(
        [
            {"reasoning_content": "needs approval", "tool_calls": [call(f"g{answer}", "guarded", x=5)]},
            {"reasoning_content": "report", "content": "all done"},
        ]
    )
    terminal = open_terminal(kernel, terminals, "ask", "run the guarded tool")
    screen = terminal.expect("N = no]")
    assert 'e2e-interactive asks to run: guarded: {"x":5}' in screen
    terminal.type(answer + "\n")
    assert terminal.wait() == 0, terminal.buffer
    session = session_in(terminal.buffer)
    events = events_of(kernel, session)
    assert valid(events) == []
    result = result_of(events, f"g{answer}")
    if approved:
        assert result["content"] == "guarded ran with 5" and result["status"] == "ok"
        assert "all done" in terminal.buffer
        assert len(mock.requests) == 2
    else:
        assert result["content"] == "denied: the call was not approved: refused by the user"
        assert result["status"] == "denied"
        assert len(mock.requests) == 1  # every call denied: the model is not asked again
    assert mock.rejections == []


def test_ctrl_c_at_the_approval_prompt_cancels_at_once(
    kernel: E2EKernel, mock: MockLLM, terminals: list[Terminal]
) -> None:
    """The person presses Ctrl-C instead of answering: the turn is cancelled and the client exits without
    waiting for a line on stdin; the call is closed and the session stays valid."""
    mock.script([{"reasoning_content": "needs approval", "tool_calls": [call("gc", "guarded", x=2)]}])
    terminal = open_terminal(kernel, terminals, "ask", "run the guarded tool")
    terminal.expect("N = no]")
    terminal.type("\x03")
    assert terminal.wait(timeout=10) == 130, terminal.buffer
    events = events_of(kernel, session_in(terminal.buffer))
    assert valid(events) == []
    assert "cancelled" in result_of(events, "gc")["content"]


def test_a_client_that_is_not_a_terminal_is_never_asked(kernel: E2EKernel, mock: MockLLM) -> None:
    mock.script(
        [
            {"reasoning_content": "needs approval", "tool_calls": [call("gp", "guarded", x=1)]},
            {"reasoning_content": "report", "content": "refused, ok"},
        ]
    )
    result = kernel.ask("run the guarded tool")  # stdin is a pipe, not a terminal
    assert result.returncode == 0, result.stderr
    assert "allow?" not in result.stderr
    events = events_of(kernel, session_in(result.stderr))
    assert "no client that can approve is watching this session" in result_of(events, "gp")["content"]


# -- Ctrl-C and a vanished client ------------------------------------------------------------------------


def test_ctrl_c_in_ask_cancels_the_turn_and_the_session_goes_on(
    kernel: E2EKernel, mock: MockLLM, terminals: list[Terminal]
) -> None:
    mock.script([{"reasoning_content": "wait", "tool_calls": [call("s1", "slow", seconds=30)]}])
    terminal = open_terminal(kernel, terminals, "ask", "take your time")
    wait_marker(kernel, "s1")
    started = time.monotonic()
    terminal.type("\x03")  # Ctrl-C: the terminal driver sends SIGINT to the client
    assert terminal.wait() == 130, terminal.buffer
    assert time.monotonic() - started < 10, "the client waited for the tool instead of cancelling"
    assert "(cancelled; session" in terminal.buffer
    session = session_in(terminal.buffer)
    events = events_of(kernel, session)
    assert valid(events) == []
    assert "cancelled" in result_of(events, "s1")["content"]
    assert [e["kind"] for e in events] == ["input", "response", "tool_result"]  # no output: nothing was said

    mock.script([{"reasoning_content": "fine", "content": "next turn works"}])
    again = kernel.ask("still there?", "--session", session)
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == "next turn works"
    assert mock.rejections == []
    sent = mock.requests[-1].body["messages"]
    assert [m["role"] for m in sent if m["role"] != "system"] == ["user", "assistant", "tool", "user"]


def test_a_killed_ask_client_makes_the_kernel_cancel_the_turn(kernel: E2EKernel, mock: MockLLM) -> None:
    mock.script([{"reasoning_content": "wait", "tool_calls": [call("k1", "slow", seconds=30)]}])
    client = subprocess.Popen(
        [*HOLOGRAM, "ask", "--data", str(kernel.data), "--json", "take your time"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env(),
        cwd=kernel.root,
    )
    try:
        wait_marker(kernel, "k1")
    finally:
        client.send_signal(signal.SIGKILL)
        client.communicate(timeout=10)

    def k1_events() -> list[dict[str, Any]]:
        listed = [s["id"] for s in _sessions(kernel)]
        return [e for sid in listed for e in events_of(kernel, sid) if _has_call(e, "k1") or e["call_id"] == "k1"]

    events = wait_until(  # else the kernel kept running the turn of a client that is gone
        k1_events, accept=lambda found: any(e["kind"] == "tool_result" for e in found), timeout=10,
        what="k1's turn to end with a tool result", interval=0.1,
    )  # fmt: skip
    result = next(e["data"] for e in events if e["kind"] == "tool_result")
    assert "cancelled" in result["content"]


def _sessions(kernel: E2EKernel) -> list[dict[str, Any]]:
    from hologram.kernel.control import call as control_call

    listed: list[dict[str, Any]] = control_call(kernel.data, "sessions/list")["sessions"]
    return listed


def _has_call(event: dict[str, Any], call_id: str) -> bool:
    return event["kind"] == "response" and any(c.get("id") == call_id for c in event["data"].get("tool_calls") or [])


def test_ctrl_c_in_chat_cancels_the_turn_and_chat_goes_on(
    kernel: E2EKernel, mock: MockLLM, terminals: list[Terminal]
) -> None:
    terminal = open_terminal(kernel, terminals, "chat")
    terminal.expect("you> ")
    mock.script([{"reasoning_content": "wait", "tool_calls": [call("c1", "slow", seconds=30)]}])
    terminal.type("take your time\n")
    wait_marker(kernel, "c1")
    terminal.type("\x03")
    terminal.expect("(turn cancelled)")
    mock.script([{"reasoning_content": "fine", "content": "chat goes on"}])
    terminal.expect("you> ")
    terminal.type("still there?\n")
    terminal.expect("chat goes on")
    terminal.expect("you> ")
    terminal.type("\x04")  # Ctrl-D at the prompt leaves
    assert terminal.wait() == 0, terminal.buffer
    assert mock.rejections == []
    listed = [s["id"] for s in _sessions(kernel)]
    session = next(sid for sid in listed if any(_has_call(e, "c1") for e in events_of(kernel, sid)))
    events = events_of(kernel, session)
    assert valid(events) == []
    assert "cancelled" in result_of(events, "c1")["content"]
    assert [e["kind"] for e in events] == ["input", "response", "tool_result", "input", "response", "output"]
