"""terminal as a real subprocess: programs on a PTY read as the screen a person sees — a python3 REPL, bash,
a curses program and less — driven with text and keys; every process a terminal started dies with it.

Waits are on output (``term_read`` with ``wait_for`` returns the moment the text is on the screen; its
timeout is a failure bound), and the process checks wait for the processes to be gone (tests/proctree.py).

Mutation checks (done): the program not put in a session of its own with the PTY as its controlling terminal
(session.CTTY without setsid and TIOCSCTTY) turns test_a_python_repl red (Ctrl-C interrupts nothing); arrows always sent as ESC [ A (application cursor
mode ignored) turns test_a_curses_program red (the program reads a bare Esc); Screen.index not keeping the
line turns test_bash_scrollback_history_and_keys red; term_close not signalling the guardian turns
test_term_close_kills_everything_the_terminal_started red. (Without the on_stop hook the plugin's exit still
kills every terminal: the guardians' death signal, which test_kill_9_of_the_plugin_kills_every_terminal holds.)"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hologram.rpc import ConnectionClosed
from hologram.sdk.testing import PluginHarness
from tests.kit.loop import run
from tests.plugins.helpers import err, harness, ok
from tests.proctree import Marker, alive, read_pid

S = "session-1"


@pytest.fixture
def marker(tmp_path: Path) -> Iterator[Marker]:
    ws = tmp_path / "ws"
    ws.mkdir()
    m = Marker(ws)
    yield m
    m.cleanup()


def term(workspace: Path, **config: Any) -> PluginHarness:
    return harness("terminal", config={"workspace": str(workspace), **config})


async def tool(h: PluginHarness, name: str, session: str = S, **arguments: Any) -> dict[str, Any]:
    return await h.call_tool(name, arguments, session_id=session)


def screen(text: str) -> list[str]:
    """The screen part of a terminal view."""
    return text.split("--- screen ---\n", 1)[1].splitlines() if "--- screen ---\n" in text else []


def test_a_python_repl(tmp_path: Path) -> None:
    async def go() -> None:
        async with term(tmp_path) as h:
            opened = ok(await tool(h, "term_open", command="python3"))
            assert opened.startswith("[terminal 1 · python3 · running · 100x30") and "opened, pid " in opened
            assert "seen after" in ok(await tool(h, "term_read", id="1", wait_for=">>> "))
            await tool(h, "term_send", id="1", text="x = 6 * 7", keys=["Enter"])
            await tool(h, "term_send", id="1", text="print(f'answer={x}')", keys=["Enter"])
            shown = ok(await tool(h, "term_read", id="1", wait_for="answer=42"))
            assert ">>> print(f'answer={x}')" in screen(shown) and "answer=42" in screen(shown)
            # Ctrl-C reaches the program as SIGINT through the PTY (its controlling terminal)
            await tool(h, "term_send", id="1", text="while True: pass", keys=["Enter", "Enter"])
            await tool(h, "term_send", id="1", keys=["Ctrl-C"], wait_s=0)
            shown = ok(await tool(h, "term_read", id="1", wait_for="KeyboardInterrupt"))
            assert "seen after" in shown
            await tool(h, "term_send", id="1", text="print('still', 'here')", keys=["Enter"])
            assert "seen after" in ok(await tool(h, "term_read", id="1", wait_for="still here"))
            await tool(h, "term_send", id="1", keys=["Ctrl-D"], wait_s=0)
            ended = ok(await tool(h, "term_read", id="1", wait_for="never printed", timeout_s=30))
            assert "· exited with code 0 ·" in ended and "term_close frees it" in ended
            assert "exited with code 0" in err(await tool(h, "term_send", id="1", text="1"))
            assert "the program had exited" in ok(await tool(h, "term_close", id="1"))

    run(go())


CURSES = r"""
import curses
def main(w):
    curses.curs_set(0)
    w.keypad(True)
    w.box()
    w.addstr(2, 4, "CURSES DEMO")
    w.addstr(4, 4, "press a key")
    w.refresh()
    while True:
        k = w.getch()
        w.addstr(4, 4, "last key: %-20s" % curses.keyname(k).decode())
        w.refresh()
        if k == ord("q"):
            break
curses.wrapper(main)
print("curses finished")
"""


def test_a_curses_program(tmp_path: Path) -> None:
    (tmp_path / "demo.py").write_text(CURSES)

    async def go() -> None:
        async with term(tmp_path) as h:
            await tool(h, "term_open", command="python3 demo.py", cols=60, rows=12)
            shown = screen(ok(await tool(h, "term_read", id="1", wait_for="CURSES DEMO")))
            assert shown[0].startswith("┌") or shown[0].startswith("l") or shown[0].startswith("+"), shown
            assert shown[2][4:15] == "CURSES DEMO"  # drawn at row 3, column 5 of the screen
            await tool(h, "term_send", id="1", keys=["Up"], wait_s=0)
            assert "seen after" in ok(await tool(h, "term_read", id="1", wait_for="last key: KEY_UP"))
            await tool(h, "term_send", id="1", keys=["Left"], wait_s=0)
            assert "seen after" in ok(await tool(h, "term_read", id="1", wait_for="last key: KEY_LEFT"))
            await tool(h, "term_send", id="1", keys=["Tab"], wait_s=0)
            assert "seen after" in ok(await tool(h, "term_read", id="1", wait_for="last key: ^I"))
            await tool(h, "term_send", id="1", keys=["Esc"], wait_s=0)  # curses waits ESCDELAY to tell it alone
            assert "seen after" in ok(await tool(h, "term_read", id="1", wait_for="last key: ^[ "))
            await tool(h, "term_send", id="1", text="q", wait_s=0)
            assert "exited with code 0" in ok(await tool(h, "term_read", id="1", wait_for="never", timeout_s=30))

    run(go())


def test_less_pages_a_file(tmp_path: Path) -> None:
    (tmp_path / "numbers.txt").write_text("".join(f"line {i:03d}\n" for i in range(1, 201)))

    async def go() -> None:
        async with term(tmp_path) as h:
            await tool(h, "term_open", command="less numbers.txt", rows=10)
            first = screen(ok(await tool(h, "term_read", id="1", wait_for="line 009")))
            assert first[:9] == [f"line {i:03d}" for i in range(1, 10)]
            await tool(h, "term_send", id="1", text="G", wait_s=0)
            last = screen(ok(await tool(h, "term_read", id="1", wait_for="line 200")))
            assert "line 200" in last and "line 001" not in last
            await tool(h, "term_send", id="1", text="g", wait_s=0)
            assert "seen after" in ok(await tool(h, "term_read", id="1", wait_for="line 001"))
            await tool(h, "term_send", id="1", text="q", wait_s=0)
            assert "exited with code 0" in ok(await tool(h, "term_read", id="1", wait_for="never", timeout_s=30))

    run(go())


def test_top_is_usable(tmp_path: Path) -> None:
    async def go() -> None:
        async with term(tmp_path) as h:
            await tool(h, "term_open", command="top -d 1", rows=15)
            shown = ok(await tool(h, "term_read", id="1", wait_for="load average"))
            lines = screen(shown)
            assert lines[0].startswith("top - ") and any(line.split()[:2] == ["PID", "USER"] for line in lines)
            assert len(lines) <= 15 and "· cursor row " in shown and ", col 101]" not in shown
            await tool(h, "term_send", id="1", text="q", wait_s=0)
            assert "exited with code 0" in ok(await tool(h, "term_read", id="1", wait_for="never", timeout_s=30))

    run(go())


def test_bash_scrollback_history_and_keys(tmp_path: Path) -> None:
    async def go() -> None:
        async with term(tmp_path, rows=10) as h:
            await tool(h, "term_open", command="bash --norc --noprofile -i")
            await tool(h, "term_send", id="1", text="PS1='ready> '", keys=["Enter"])
            await tool(h, "term_read", id="1", wait_for="ready> ")
            await tool(h, "term_send", id="1", text="seq 1 50; echo END-$((6*7))", keys=["Enter"], wait_s=0)
            shown = ok(await tool(h, "term_read", id="1", wait_for="END-42"))
            scrolled = shown.split("--- screen ---")[0].splitlines()
            assert any("scrolled off since the last read" in line for line in scrolled), shown
            numbers = [line for line in scrolled if line.isdigit()]
            assert numbers == [str(i) for i in range(1, len(numbers) + 1)] and len(numbers) >= 40
            prompt = ok(await tool(h, "term_read", id="1", wait_for="ready> "))  # the new one: the old scrolled off
            assert screen(prompt)[-2:] == ["END-42", "ready>"]
            again = ok(await tool(h, "term_read", id="1"))
            assert "scrolled off" not in again  # each line once
            # the Up arrow recalls the last command from bash's history
            await tool(h, "term_send", id="1", text="echo one-$((40+2))", keys=["Enter"])
            await tool(h, "term_read", id="1", wait_for="one-42")
            await tool(h, "term_send", id="1", keys=["Up"])
            assert "seen after" in ok(await tool(h, "term_read", id="1", wait_for="ready> echo one-$((40+2))"))
            await tool(h, "term_send", id="1", keys=["Ctrl-C"])
            # wide characters: one cell each on the screen, once in the text
            await tool(h, "term_send", id="1", text="echo 你好，世界-$((1+1))", keys=["Enter"])
            shown = screen(ok(await tool(h, "term_read", id="1", wait_for="你好，世界-2")))
            assert "你好，世界-2" in shown
            assert "unknown key 'Hyper-X'; keys: Enter, Tab" in err(
                await tool(h, "term_send", id="1", keys=["Hyper-X"])
            )
            assert "nothing to send" in err(await tool(h, "term_send", id="1"))

    run(go())


def test_a_terminal_belongs_to_its_session_and_the_count_is_bounded(tmp_path: Path) -> None:
    async def go() -> None:
        async with term(tmp_path, max_terminals=2) as h:
            ok(await tool(h, "term_open", command="cat -n"))
            assert "no terminal '1' in this session; its terminals: none is open" in err(
                await tool(h, "term_read", "other-session", id="1")
            )
            assert ok(await tool(h, "term_list", "other-session")) == "no terminals open in this session"
            ok(await tool(h, "term_open", "other-session", command="cat"))
            refused = err(await tool(h, "term_open", command="cat"))
            assert "2 terminals are open, the most allowed (max_terminals)" in refused
            listed = ok(await tool(h, "term_list"))
            assert listed.startswith("1 terminal(s):\n- 1: cat -n · running · pid ") and "- 2:" not in listed
            await tool(h, "term_send", id="1", text="typed into cat", keys=["Enter"], wait_s=0)
            shown = screen(ok(await tool(h, "term_read", id="1", wait_for="1  typed")))
            assert shown == ["typed into cat", "     1  typed into cat"], shown  # the PTY's echo, then cat's copy

    run(go())


def test_a_flood_of_output_leaves_the_plugin_answering_and_ctrl_c_stops_it(tmp_path: Path) -> None:
    """``yes`` writes as fast as the PTY takes it; rendering is held to a share of a core (session.RENDER_SHARE),
    so the plugin answers other calls meanwhile and Ctrl-C reaches the program."""

    async def go() -> None:
        async with term(tmp_path) as h:
            await tool(h, "term_open", command="bash --norc --noprofile -i")
            await tool(h, "term_send", id="1", text="PS1='ready> '", keys=["Enter"])
            await tool(h, "term_read", id="1", wait_for="ready> ")
            # the output, not the echoed command line: "flood" in "ready> yes flood" was seen before yes ran, and a
            # Ctrl-C sent then reached bash, not yes — the flood went on and "after-2" never came (2 runs in 6)
            await tool(h, "term_send", id="1", text="yes flo''od", keys=["Enter"], wait_s=0)
            assert "seen after" in ok(await tool(h, "term_read", id="1", wait_for="flood"))
            assert "- 1: bash --norc --noprofile -i · running" in ok(await tool(h, "term_list"))
            await tool(h, "term_send", id="1", keys=["Ctrl-C"], wait_s=0)
            await tool(h, "term_send", id="1", text="echo after-$((1+1))", keys=["Enter"], wait_s=0)
            shown = screen(ok(await tool(h, "term_read", id="1", wait_for="after-2", timeout_s=45)))
            assert shown[-2:] == ["after-2", "ready>"], shown

    run(go())


def test_a_program_that_cannot_run_says_so_on_its_screen(tmp_path: Path) -> None:
    async def go() -> None:
        async with term(tmp_path) as h:
            await tool(h, "term_open", command="no-such-program-here --flag")
            shown = ok(await tool(h, "term_read", id="1", wait_for="never", timeout_s=30))
            assert "· exited with code 127 ·" in shown and "no-such-program-here: command not found" in shown
            assert "does not parse as a shell line" in err(await tool(h, "term_open", command="echo 'open"))
            assert "no terminal '7' in this session; its terminals: 1" in err(await tool(h, "term_read", id="7"))

    run(go())


# -- processes -----------------------------------------------------------------------------------------------


def _spawn_escapees(marker: Marker) -> str:
    """A bash line that leaves a job in the background and a setsid daemon, both carrying the marker."""
    return (
        f"sleep {marker.sleep} & (setsid sh -c '{marker.background()}' &); "
        f"while [ ! -s {marker.pid_file.name} ]; do sleep 0.01; done; echo spawned-$((1+1))"
    )


def test_term_close_kills_everything_the_terminal_started(marker: Marker) -> None:
    async def go() -> str:
        async with term(marker.workspace) as h:
            await tool(h, "term_open")
            await tool(h, "term_send", id="1", text=_spawn_escapees(marker), keys=["Enter"])
            await tool(h, "term_read", id="1", wait_for="spawned-2")
            await asyncio.to_thread(read_pid, marker.pid_file)
            return ok(await tool(h, "term_close", id="1"))

    closed = run(go())
    pid = read_pid(marker.pid_file)
    assert closed.startswith("closed terminal 1 (bash): killed ")
    # named one by one, or counted by name when many (a user's bashrc may run more): the daemon is among them
    assert f"sh (pid {pid})" in closed or "sh ×" in closed, closed
    marker.assert_all_gone(pid)


def test_an_idle_terminal_is_closed_and_its_processes_killed(marker: Marker) -> None:
    async def go() -> None:
        async with term(marker.workspace, idle_timeout_s=2) as h:
            await tool(h, "term_open")
            await tool(h, "term_send", id="1", text=_spawn_escapees(marker), keys=["Enter"])
            await tool(h, "term_read", id="1", wait_for="spawned-2")
            pid = await asyncio.to_thread(read_pid, marker.pid_file)
            await asyncio.to_thread(marker.assert_all_gone, pid)  # nobody touches it: the reaper closes it
            assert ok(await tool(h, "term_list")) == "no terminals open in this session"

    run(go())


def test_the_plugin_stopping_kills_every_terminal(marker: Marker) -> None:
    async def go() -> int:
        async with term(marker.workspace) as h:
            await tool(h, "term_open")
            await tool(h, "term_send", id="1", text=_spawn_escapees(marker), keys=["Enter"])
            await tool(h, "term_read", id="1", wait_for="spawned-2")
            return await asyncio.to_thread(read_pid, marker.pid_file)

    marker.assert_all_gone(run(go()))


def test_kill_9_of_the_plugin_kills_every_terminal(marker: Marker) -> None:
    async def go() -> None:
        async with term(marker.workspace) as h:
            await tool(h, "term_open")
            await tool(h, "term_send", id="1", text=_spawn_escapees(marker), keys=["Enter"])
            await tool(h, "term_read", id="1", wait_for="spawned-2")
            pid = await asyncio.to_thread(read_pid, marker.pid_file)
            plugin_pid = h.plugin.pid
            assert plugin_pid is not None and alive(pid)
            os.kill(plugin_pid, signal.SIGKILL)
            with pytest.raises(ConnectionClosed):
                await tool(h, "term_list")
            await asyncio.to_thread(marker.assert_all_gone, pid)

    run(go())


def test_the_conformance_kit_passes() -> None:
    from hologram.testing.conformance import check_conformance
    from tests.plugins.helpers import MANIFESTS

    report = check_conformance(MANIFESTS / "terminal.toml")
    assert report.ok, report.render()
