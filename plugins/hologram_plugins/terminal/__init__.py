"""terminal: live terminals the model drives like a person — a shell, a REPL, top, less, an editor.

``term_open`` starts a program (the shell by default) on a pseudo-terminal in the workspace; ``term_send``
types text and keys (Enter, Ctrl-C, arrows, Tab, Esc …) into it; ``term_read`` returns the rendered screen —
what a person would see, not escape codes — and the lines that scrolled off since the last read;
``term_list`` and ``term_close``. A terminal belongs to the session that opened it (another session's model
cannot read or type into it).

Like shell_run, the terminal is not a sandbox: ``term_open`` and ``term_send`` declare ``needs_approval``, so
the kernel's approval policy (settings.toml ``[approvals]``) decides every program started and every input
typed, before the call reaches this plugin. Every process a terminal started is killed when it is closed, when
it has been idle for ``idle_timeout_s``, and when the plugin stops or dies (session.py: the guardian).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shlex
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from hologram.sdk import Plugin, StartContext, ToolContext, tool_error
from hologram_plugins._process.runner import child_env
from hologram_plugins.files.workspace import workspace_root
from hologram_plugins.terminal.keys import UnknownKey, encode

if TYPE_CHECKING:
    from pathlib import Path

    from hologram_plugins.terminal.session import Terminal, View

log = logging.getLogger("hologram_plugins.terminal")
MAX_TEXT = 64 * 1024


class TerminalConfig(BaseModel):
    """settings.toml's ``[plugins.terminal]``, checked at start (JSON Schema: manifests/terminal.config.schema.json)."""

    model_config = ConfigDict(extra="forbid")  # a misspelt key fails the start, naming it

    workspace: str = Field(
        "../../workspace", min_length=1, description="Where programs start, relative to the plugin's data dir."
    )
    shell: str = Field("bash", min_length=1, description="The program term_open runs when given no command.")
    term: str = Field("xterm-256color", min_length=1, description="TERM of the programs.")
    cols: int = Field(100, ge=20, le=400, description="Columns of a new terminal.")
    rows: int = Field(30, ge=5, le=200, description="Rows of a new terminal.")
    max_terminals: int = Field(8, ge=1, le=64, description="Terminals open at once.")
    idle_timeout_s: float = Field(
        1800, gt=0, description="A terminal nobody read or typed into for this long is closed, its processes killed."
    )
    max_processes: int = Field(
        256, ge=1, description="Processes of one terminal at once; more closes it and kills them all."
    )
    scrollback_lines: int = Field(1000, ge=0, le=100_000, description="Lines kept that scrolled off the screen.")
    max_read_lines: int = Field(200, ge=0, le=10_000, description="Scrollback lines one read returns, the newest.")
    quiet_s: float = Field(0.3, gt=0, le=10, description="After input, output quiet this long counts as done.")
    send_wait_s: float = Field(2.0, ge=0, le=60, description="term_send and term_open wait this long at most.")
    max_wait_s: float = Field(
        100, gt=0, le=3600, description="The longest term_read may wait (under [agent] tool_timeout_s, 120)."
    )


@dataclass
class Terminals:
    config: TerminalConfig
    workspace: Path
    open: dict[str, Terminal] = field(default_factory=dict)
    counter: int = 0
    reaper: asyncio.Task[None] | None = None


def _state(ctx: StartContext[TerminalConfig]) -> Terminals:
    return Terminals(ctx.config, workspace_root(ctx.config.workspace, ctx.data_dir))


plugin = Plugin("terminal", state=_state, config=TerminalConfig)


@plugin.on_start
async def _start_reaper(ctx: StartContext[TerminalConfig]) -> None:
    state: Terminals = plugin.state
    state.reaper = asyncio.ensure_future(_reap_idle(state))


@plugin.on_stop
async def _close_all() -> None:
    """Every terminal closed, every process of theirs killed, before the plugin exits."""
    state: Terminals = plugin.state
    if state.reaper is not None:
        state.reaper.cancel()
    terminals, state.open = list(state.open.values()), {}
    await asyncio.gather(*(t.close() for t in terminals), return_exceptions=True)


async def _reap_idle(state: Terminals) -> None:
    idle = state.config.idle_timeout_s
    while True:
        now = time.monotonic()
        due = [t for t in state.open.values() if not t.busy and now - t.used_at >= idle]
        for terminal in due:
            state.open.pop(terminal.id, None)
            with contextlib.suppress(Exception):
                await terminal.close()
                log.info("terminal %s closed after %g s idle; %s", terminal.id, idle, terminal.killed() or "")
        # a terminal in use is looked at again an idle time later at the latest (its call's end restarts its clock)
        idle_ones = [t.used_at + idle for t in state.open.values() if not t.busy]
        soonest = min(idle_ones, default=time.monotonic() + idle)
        await asyncio.sleep(max(0.05, min(soonest - time.monotonic(), 60.0)))


def _find(ident: str, ctx: ToolContext) -> Terminal | dict[str, Any]:
    state: Terminals = plugin.state
    terminal = state.open.get(str(ident).strip())
    if terminal is None or terminal.session != ctx.session_id:
        mine = [t.id for t in state.open.values() if t.session == ctx.session_id]
        listed = ", ".join(mine) if mine else "none is open; term_open starts one"
        return tool_error(f"no terminal {ident!r} in this session; its terminals: {listed}")
    return terminal


def _show(terminal: Terminal, view: View, note: str = "") -> str:
    row, col = view.cursor
    head = (
        f"[terminal {terminal.id} · {terminal.command} · {terminal.state()} · {terminal.cols}x{terminal.rows}"
        f" · cursor row {row + 1}, col {min(col, terminal.cols - 1) + 1}]"  # past the last column: a wrap pending
    )
    parts = [head + (f" {note}" if note else "")]
    if view.scrollback or view.dropped:
        older = f" ({view.dropped} older not shown)" if view.dropped else ""
        parts.append(f"--- {len(view.scrollback) + view.dropped} line(s) scrolled off since the last read{older} ---")
        parts.extend(view.scrollback)
    parts.append("--- screen ---" if view.screen else "--- screen (empty) ---")
    parts.extend(view.screen)
    if terminal.ended:
        killed = terminal.killed()
        parts.append(f"[the program {terminal.state()}{'; ' + killed if killed else ''}; term_close frees it]")
    return "\n".join(parts)


# -- tools ---------------------------------------------------------------------------------------------------


@plugin.tool("term_open")
async def term_open(
    ctx: ToolContext, command: str | None = None, cols: int | None = None, rows: int | None = None
) -> Any:
    from hologram_plugins.terminal.session import Terminal  # pyte: loaded with the first terminal

    state: Terminals = plugin.state
    config = state.config
    if len(state.open) >= config.max_terminals:
        listed = ", ".join(f"{t.id} ({t.command})" for t in state.open.values())
        return tool_error(
            f"{len(state.open)} terminals are open, the most allowed (max_terminals); close one with term_close: "
            f"{listed}"
        )
    command = (command or "").strip() or config.shell
    try:
        shlex.split(command)
    except ValueError as exc:
        return tool_error(f"command {command!r} does not parse as a shell line: {exc}")
    state.counter += 1
    terminal = Terminal(
        str(state.counter), command, ctx.session_id,
        min(max(cols or config.cols, 20), 400), min(max(rows or config.rows, 5), 200), config.scrollback_lines,
    )  # fmt: skip
    argv = [config.shell] if command == config.shell else ["bash", "-c", command]
    env = child_env({"TERM": config.term, "PWD": str(state.workspace)})
    try:
        await terminal.start(argv, cwd=state.workspace, env=env, max_processes=config.max_processes)
    except OSError as exc:
        return tool_error(f"could not start {command!r}: {exc}")
    state.open[terminal.id] = terminal
    with terminal.using():
        await terminal.settle(config.quiet_s, config.send_wait_s)
    return _show(terminal, terminal.read(config.max_read_lines), f"opened, pid {terminal.pid}")


@plugin.tool("term_send")
async def term_send(
    id: str, ctx: ToolContext, text: str | None = None, keys: list[str] | None = None, wait_s: float | None = None
) -> Any:
    found = _find(id, ctx)
    if isinstance(found, dict):
        return found
    with found.using():
        return await _send(found, text, keys, wait_s)


async def _send(terminal: Terminal, text: str | None, keys: list[str] | None, wait_s: float | None) -> Any:
    if not text and not keys:
        return tool_error("nothing to send: give text, keys or both (text is typed first)")
    if terminal.ended:
        return tool_error(f"terminal {terminal.id}: the program {terminal.state()}; term_close it, term_open another")
    try:
        typed = (text or "") + "".join(encode(k, application_cursor=terminal.application_cursor) for k in keys or [])
    except UnknownKey as exc:
        return tool_error(str(exc))
    data = typed.encode("utf-8")
    if len(data) > MAX_TEXT:
        return tool_error(f"{len(data):,} bytes to type; at most {MAX_TEXT:,} at once (a file is better: files_write)")
    config: TerminalConfig = plugin.state.config
    try:
        await terminal.send(data)
    except (OSError, asyncio.TimeoutError) as exc:
        return tool_error(f"terminal {terminal.id}: could not type into it: {exc}")
    wait = config.send_wait_s if wait_s is None else min(max(wait_s, 0.0), config.max_wait_s)
    await terminal.settle(config.quiet_s, wait)
    return _show(terminal, terminal.read(config.max_read_lines))


@plugin.tool("term_read")
async def term_read(id: str, ctx: ToolContext, wait_for: str | None = None, timeout_s: float | None = None) -> Any:
    found = _find(id, ctx)
    if isinstance(found, dict):
        return found
    config: TerminalConfig = plugin.state.config
    note = ""
    with found.using():  # a wait is use: the terminal is not idle while someone waits on it
        if wait_for:
            limit = min(max(timeout_s if timeout_s is not None else 10.0, 0.0), config.max_wait_s)
            started = time.monotonic()
            seen = await found.wait_for(wait_for, limit)
            took = time.monotonic() - started
            note = f"({wait_for!r} seen after {took:.1f} s)" if seen else f"({wait_for!r} not seen within {took:.1f} s)"
        return _show(found, found.read(config.max_read_lines), note)


@plugin.tool("term_list")
async def term_list(ctx: ToolContext) -> Any:
    state: Terminals = plugin.state
    mine = [t for t in state.open.values() if t.session == ctx.session_id]
    if not mine:
        return "no terminals open in this session"
    now = time.monotonic()
    lines = [f"{len(mine)} terminal(s):"]
    lines += [
        f"- {t.id}: {t.command} · {t.state()} · pid {t.pid} · {t.cols}x{t.rows} · idle {now - t.used_at:.0f} s"
        f" (closed at {state.config.idle_timeout_s:g} s)"
        for t in mine
    ]
    return "\n".join(lines)


@plugin.tool("term_close")
async def term_close(id: str, ctx: ToolContext) -> Any:
    found = _find(id, ctx)
    if isinstance(found, dict):
        return found
    terminal = found
    state: Terminals = plugin.state
    state.open.pop(terminal.id, None)
    was = terminal.state()
    await terminal.close()
    if was == "running":
        killed = terminal.killed() or "nothing was left to kill"
        return f"closed terminal {terminal.id} ({terminal.command}): {killed}"
    return f"closed terminal {terminal.id} ({terminal.command}); the program had {was.split(' ', 1)[0]} ({was})"
