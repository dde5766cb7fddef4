"""`hologram ask` and `hologram chat`: talk to the running kernel's agent, with the answer streamed.

A client of the turn API (`hologram.clients.TurnClient`, over the control socket): it starts the turn, prints
its events as they arrive and answers ``approval.requested`` by asking the person at the terminal (a
non-interactive ``ask`` cannot approve, so such a call is denied). Ctrl-C during a turn sends
``turn/cancel``: the kernel stops the turn and closes its open tool calls, so the session stays valid; a
second Ctrl-C stops waiting and closes the connection (the kernel cancels a turn whose client went away).
tests/e2e/test_agent_interactive.py drives both commands in a real pseudo-terminal.

Reasoning is printed dimmed on a terminal; when stdout is not a terminal it goes to stderr, so
``hologram ask "…" > answer.txt`` captures the answer alone.

With ``--url`` (or ``HOLOGRAM_URL``) the same commands talk to a kernel on another machine through its HTTP
API (`hologram.clients.http_client.HttpTurnClient`): the same rendering, the same approvals prompt; only the client
differs (`connector`). httpx is imported only then. The token comes from ``HOLOGRAM_TOKEN`` or
``--token-file`` by preference: ``--token T`` works, but a command line is readable by every user of the
machine (``ps``) and lands in the shell's history.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from hologram.base.errors import HologramError, Problem
from hologram.cli._common import add_data_option, command_parser

# What the command runs is imported when it runs: building the parser (every command, `--version`) must stay
# cheap (hologram/cli/__init__.py).
if TYPE_CHECKING:
    import asyncio

    from hologram.api import turn as api

DIM, RESET = "\x1b[2m", "\x1b[0m"

ASK_DETAILS = """\
Sends TEXT to the agent of the kernel running with this data directory (start it with `hologram up`) and
streams the answer. Without --session a new session is started; its id is printed on stderr at the end,
pass it to --session to continue the conversation.

examples:
  hologram ask "what is in my notes about paris?"
  hologram ask --session 3f2a9c1d0b7e "and in london?"
  hologram ask "summarise" > summary.txt          reasoning goes to stderr when stdout is a file
  hologram ask --image chart.png "what does this chart say?"
  hologram ask --file notes.md "summarise this"
  HOLOGRAM_TOKEN=… hologram ask --url http://host:8080 "hello"    a kernel on another machine
"""

CHAT_DETAILS = """\
An interactive conversation with the agent. Ctrl-C while the agent works cancels that turn (the session
stays valid); Ctrl-C or Ctrl-D at the prompt leaves. Tool calls that need approval ask you here.

examples:
  hologram chat
  hologram chat --session 3f2a9c1d0b7e            continue an earlier session
  hologram chat --url https://host:8080 --token-file ~/.hologram-token    a kernel on another machine
"""

REMOTE_HELP = """\
--url talks to a kernel on another machine through its HTTP API (`hologram open --print` there prints the
URL and token). Give the token by HOLOGRAM_TOKEN or --token-file: --token is visible to every user of this
machine in the process list and stays in the shell's history."""

Connect = Callable[[bool], Awaitable[Any]]  # approvals → a connected client (TurnClient or HttpTurnClient)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ask = command_parser(subparsers, "ask", "ask the running kernel's agent one question", ASK_DETAILS)
    add_data_option(ask)
    ask.add_argument("--session", metavar="ID", help="continue this session (default: a new one)")
    ask.add_argument("--no-reasoning", action="store_true", help="do not print the model's reasoning")
    ask.add_argument("--json", action="store_true", help="print the final result as JSON instead of streaming")
    ask.add_argument(
        "--image", action="append", type=Path, default=[], metavar="PATH", help="send an image with TEXT (repeatable)"
    )
    ask.add_argument(
        "--file", action="append", type=Path, default=[], metavar="PATH", help="send a file with TEXT (repeatable)"
    )
    add_remote_options(ask)
    ask.add_argument("text", nargs="+", metavar="TEXT", help="what to ask")
    ask.set_defaults(run=run_ask)

    chat = command_parser(subparsers, "chat", "talk with the running kernel's agent", CHAT_DETAILS)
    add_data_option(chat)
    chat.add_argument("--session", metavar="ID", help="continue this session (default: a new one)")
    chat.add_argument("--no-reasoning", action="store_true", help="do not print the model's reasoning")
    add_remote_options(chat)
    chat.set_defaults(run=run_chat)


def add_remote_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("a kernel on another machine", REMOTE_HELP)
    group.add_argument("--url", metavar="URL", help="its web address, e.g. http://host:8080 (env HOLOGRAM_URL)")
    group.add_argument("--token", metavar="TOKEN", help="its access token (prefer env HOLOGRAM_TOKEN)")
    group.add_argument("--token-file", type=Path, metavar="FILE", help="read the access token from FILE")


def connector(args: argparse.Namespace) -> Connect:
    """How to reach the agent: the local kernel's control socket, or with --url / HOLOGRAM_URL its HTTP API."""
    url = getattr(args, "url", None) or os.environ.get("HOLOGRAM_URL", "")
    if not url:

        async def local(approvals: bool) -> Any:
            from hologram.clients import TurnClient

            return await TurnClient.connect(args.data, client="cli", approvals=approvals)

        return local
    token = _token(args)

    async def remote(approvals: bool) -> Any:
        from hologram.clients.http_client import HttpTurnClient

        return await HttpTurnClient.connect(url, token, client="cli", approvals=approvals)

    return remote


def _token(args: argparse.Namespace) -> str:
    if args.token:
        return str(args.token).strip()
    if args.token_file:
        try:
            token = Path(args.token_file).expanduser().read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise HologramError(
                Problem(f"cannot read the token file: {exc.strerror}", file=str(args.token_file))
            ) from None
        if not token:
            raise HologramError(Problem("the token file is empty", file=str(args.token_file)))
        return token
    token = os.environ.get("HOLOGRAM_TOKEN", "").strip()
    if not token:
        raise HologramError(
            Problem(
                "--url needs the kernel's access token",
                hint="set HOLOGRAM_TOKEN, or pass --token-file FILE (`hologram open --print` on that machine "
                "prints the link; the token is its ?token= part)",
            )
        )
    return token


ERROR_CHARS = 200  # of a failed tool call's text, on its one line


class Printer:
    """Streams deltas: reasoning dimmed (or on stderr), then the answer."""

    def __init__(self, out: TextIO, err: TextIO, *, reasoning: bool, quiet: bool = False) -> None:
        self.out, self.err = out, err
        self.reasoning = reasoning
        self.quiet = quiet
        self.tty = out.isatty()
        self.err_tty = err.isatty()
        self.mode = ""  # "", "reasoning" or "content": what was printed last
        self.streamed = ""  # content of the current step as streamed
        self.output_open = False  # a tool's live output ended without a newline (stderr)

    def _end_output(self) -> None:
        """What comes after a command's live output starts on a line of its own (`cat` of a file without a
        final newline ran into the next reasoning: seen using `hologram ask` as a newcomer)."""
        if self.output_open:
            self.err.write("\n")
            self.output_open = False

    def delta(self, kind: str, text: str) -> None:
        if self.quiet:
            return
        self._end_output()
        if kind == "reasoning":
            if not self.reasoning:
                return
            if self.tty:
                self.out.write(DIM + text + RESET)
                self.out.flush()
            else:
                self.err.write(text)
                self.err.flush()
            self.mode = "reasoning"
            return
        if self.mode == "reasoning" and self.tty:
            self.out.write("\n\n")
        elif self.mode == "reasoning":
            self.err.write("\n")
        self.mode = "content"
        self.streamed += text
        self.out.write(text)
        self.out.flush()

    def tool_output(self, text: str) -> None:
        """A running command's output, as it comes (stderr, dimmed)."""
        if self.quiet:
            return
        self.err.write(DIM + text + RESET if self.err_tty else text)
        self.err.flush()
        if text:
            self.output_open = not text.endswith("\n")

    def tool_call(self, name: str, arguments: Any) -> None:
        if self.quiet:
            return
        self._end_output()
        if self.mode == "reasoning":  # end the reasoning's line where it was printed
            (self.out if self.tty else self.err).write("\n")
        elif self.streamed:
            self.out.write("\n")
        self.out.flush()
        self.mode = ""
        self.streamed = ""  # the final answer is what the last step streams
        args = json.dumps(arguments, ensure_ascii=False)
        line = f"[tool {name} {args[:200]}]"
        self.err.write((DIM + line + RESET if self.err_tty else line) + "\n")
        self.err.flush()

    def tool_failed(self, name: str, status: str, content: str) -> None:
        """A call that ended as an error, denied or refused: one short line of why, under its ``[tool …]`` line
        (the model reads the whole text; the person sees what went wrong without opening the session)."""
        if self.quiet:
            return
        self._end_output()
        text = " ".join(content.split()).removeprefix("error: ")
        text = text if len(text) <= ERROR_CHARS else text[: ERROR_CHARS - 1] + "…"
        line = f"[tool {name} {status}: {text}]"
        self.err.write((DIM + line + RESET if self.err_tty else line) + "\n")
        self.err.flush()

    def tool_images(self, name: str, images: list[dict[str, Any]]) -> None:
        """A result's images (a screenshot): a terminal cannot show them, so one line says what came and where
        to see it (the web UI's tool card; ``media/read`` for a script)."""
        if self.quiet or not images:
            return
        self._end_output()
        shown = []
        for image in images:
            size = f" {image['width']}x{image['height']}" if image.get("width") and image.get("height") else ""
            shown.append(f"{image.get('mime', 'image')}{size}, {int(image.get('bytes') or 0):,} bytes")
        line = f"[tool {name} image: {'; '.join(shown)} — the web UI shows it]"
        self.err.write((DIM + line + RESET if self.err_tty else line) + "\n")
        self.err.flush()

    def finish(self, output: str) -> None:
        if self.quiet:
            return
        self._end_output()
        # before_output hooks may have reformatted what was streamed: show what was added, or all of it
        if output.startswith(self.streamed):
            self.out.write(output[len(self.streamed) :])
        else:
            self.out.write(("\n" if self.streamed else "") + output)
        self.out.write("\n")
        self.out.flush()


# the prompt's answers → decisions (docs/protocol.md §9); anything else is a no
PROMPT_ANSWERS = {
    "y": ("approve_once", "approved by the user"),
    "yes": ("approve_once", "approved by the user"),
    "s": ("approve_for_session", "approved by the user for this session"),
    "a": ("always", "approved by the user, always"),
    "n": ("deny", "refused by the user"),
}


def decision_of(answer: str) -> tuple[str, str]:
    """A typed answer as (decision, reason): y once, s this session, a always, n (or anything else) deny."""
    return PROMPT_ANSWERS.get(answer.strip().lower(), PROMPT_ANSWERS["n"])


async def _prompt_approval(request: api.ApprovalRequested) -> tuple[str, str]:
    question = (
        f"\n{request.plugin} asks to run: {request.summary}\nallow? [y = once, s = this session, a = always, N = no] "
    )
    return decision_of(await _read_line(question))


async def _read_line(question: str) -> str:
    """Ask on stderr, read one line from the terminal without a thread: a Ctrl-C (the turn is cancelled,
    the connection closed, this handler cancelled) leaves nothing blocked on stdin — a reader thread would
    keep `asyncio.run` from returning until Enter, and in `chat` would steal the next line typed.
    Mutation check (done): the former ``run_in_executor(None, sys.stdin.readline)`` makes
    tests/e2e/test_agent_interactive.py::test_ctrl_c_at_the_approval_prompt_cancels_at_once red."""
    import asyncio

    sys.stderr.write(question)
    sys.stderr.flush()
    loop = asyncio.get_running_loop()
    fd = sys.stdin.fileno()
    line: asyncio.Future[str] = loop.create_future()

    def readable() -> None:
        try:
            data = os.read(fd, 4096)
        except OSError:
            data = b""
        if not line.done():
            line.set_result(data.decode(errors="replace"))

    loop.add_reader(fd, readable)
    try:
        return await line
    finally:
        loop.remove_reader(fd)


async def _read_on_while_asking(
    prompt: asyncio.Future[tuple[str, str]],
    request: api.ApprovalRequested,
    events: AsyncIterator[Any],
    held: list[Any],
    ahead: asyncio.Future[Any] | None,
) -> asyncio.Future[Any] | None:
    """Wait for the person's answer while reading on: another client (the web page) or the timeout may decide
    first — then the prompt is cancelled and the terminal says who decided. Other events that come meanwhile
    go to ``held`` (None: the stream ended). The next event is awaited as a future and never cancelled (that
    would end the stream); the one still pending is returned for the caller to await next."""
    import asyncio

    from hologram.api import turn as api

    while not prompt.done():
        ahead = ahead or asyncio.ensure_future(anext(events))
        await asyncio.wait({prompt, ahead}, return_when=asyncio.FIRST_COMPLETED)
        if not ahead.done():
            continue
        try:
            came = ahead.result()  # raises what broke the stream
        except StopAsyncIteration:  # the turn ended while asking: nothing left to answer
            came = api.ApprovalResolved(
                session=request.session, turn=request.turn, approval=request.approval, by="kernel",
                reason="the turn ended",
            )  # fmt: skip
            held.append(None)
        ahead = None
        if isinstance(came, api.ApprovalResolved) and came.approval == request.approval:
            prompt.cancel()
            verdict = "approved" if came.approved else "refused"
            sys.stderr.write(f"\n({verdict} by {came.by}: {came.reason})\n")
            sys.stderr.flush()
        else:
            held.append(came)
    return ahead


async def one_turn(
    connect: Connect,
    text: str,
    session: str | None,
    printer: Printer,
    *,
    interactive: bool,
    parts: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Run one turn through the turn API (either client: ``connect``); Ctrl-C cancels it on the kernel's
    side (the session stays valid), a second Ctrl-C stops waiting. Returns the turn's end as a dict
    (`--json` prints it)."""
    import asyncio
    import signal

    from hologram.api import turn as api
    from hologram.rpc import ConnectionClosed, RpcError

    client = await connect(interactive)
    state: dict[str, Any] = {"session": session, "abandoned": False}
    loop = asyncio.get_running_loop()
    cancelled = asyncio.Event()
    background: set[asyncio.Future[Any]] = set()
    prompt: asyncio.Task[tuple[str, str]] | None = None

    def send_cancel() -> None:
        background.add(asyncio.ensure_future(_quiet(client.cancel(state["session"]))))

    def on_sigint() -> None:
        if cancelled.is_set():  # a second Ctrl-C: stop waiting; the kernel cancels a turn whose client left
            state["abandoned"] = True
            client.abandon()
            return
        cancelled.set()
        if prompt is not None:  # at the approval prompt: stop asking; the kernel denies, the turn stops
            prompt.cancel()
        if state["session"]:
            send_cancel()

    loop.add_signal_handler(signal.SIGINT, on_sigint)
    failure = ""
    try:
        turn = await client.start(text, session=session, parts=parts)
        state["session"] = turn.session
        if cancelled.is_set():  # Ctrl-C came before the kernel said which session the turn is in
            send_cancel()
        events = aiter(turn)
        held: list[Any] = []  # events that came while the person was being asked
        ahead: asyncio.Future[Any] | None = None  # the next event, already asked for during a prompt
        while True:
            try:
                if held and held[0] is None:  # the stream ended during a prompt
                    break
                if held:
                    event = held.pop(0)
                elif ahead is not None:
                    event, ahead = await ahead, None
                else:
                    event = await anext(events)
            except StopAsyncIteration:
                break
            if isinstance(event, api.ContentDelta):
                printer.delta("content", event.text)
            elif isinstance(event, api.ReasoningDelta):
                printer.delta("reasoning", event.text)
            elif isinstance(event, api.ToolCallStarted):
                printer.tool_call(event.tool, event.arguments)
            elif isinstance(event, api.ToolOutput):
                printer.tool_output(event.text)
            elif isinstance(event, api.ToolResult) and event.is_error:
                printer.tool_failed(event.tool, event.status, event.content)
            elif isinstance(event, api.ToolResult) and event.images:
                printer.tool_images(event.tool, event.images)
            elif isinstance(event, api.ApprovalRequested) and interactive and not cancelled.is_set():
                prompt = asyncio.ensure_future(_prompt_approval(event))
                try:
                    ahead = await _read_on_while_asking(prompt, event, events, held, ahead)
                finally:
                    if not prompt.done():
                        prompt.cancel()
                    asked, prompt = prompt, None
                if asked.cancelled():  # decided elsewhere, or Ctrl-C: the turn is being cancelled
                    continue
                decision, reason = asked.result()
                await client.approve(event, decision, reason)
            elif isinstance(event, api.TurnFailed):
                failure = event.message
        ended = turn.ended
        assert ended is not None
        if ended.stop_reason == "error":
            raise HologramError(Problem(failure or "the turn failed", hint=f"session {turn.session}"))
        return {
            "session": turn.session,
            "turn": turn.turn,
            "output": ended.output,
            "steps": ended.steps,
            "ended_by": ended.stop_reason,
            "errors": ended.errors,
            "usage": ended.usage,
            "cancelled": ended.stop_reason == "cancelled" or cancelled.is_set(),
            "seq": ended.seq,
        }
    except RpcError as exc:
        raise HologramError(Problem(exc.message)) from None
    except ConnectionClosed:
        if state["abandoned"]:
            return {"session": state["session"], "cancelled": True, "output": ""}
        gone = getattr(client, "failure", None) or "the kernel closed the connection (did it stop?)"
        raise HologramError(Problem(gone)) from None
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        await client.aclose()


async def _check_reachable(connect: Connect) -> None:
    client = await connect(True)
    await client.aclose()


async def _quiet(awaitable: Any) -> None:
    with contextlib.suppress(Exception):
        await awaitable


def run_ask(args: argparse.Namespace) -> int:
    import asyncio

    text = " ".join(args.text)
    parts = None
    if args.image or args.file:  # read before connecting: a missing or too large file is said at once
        from hologram.clients.parts import input_parts

        parts = input_parts(text, args.image, args.file)
    printer = Printer(sys.stdout, sys.stderr, reasoning=not args.no_reasoning, quiet=args.json)
    connect = connector(args)
    result = asyncio.run(one_turn(connect, text, args.session, printer, interactive=sys.stdin.isatty(), parts=parts))
    if args.json:
        print(json.dumps(result, ensure_ascii=False, indent=2))
        return 130 if result.get("cancelled") else 0  # a script must not take a cancelled turn for an answer
    if result.get("cancelled"):
        print(f"\n(cancelled; session {result.get('session')})", file=sys.stderr)
        return 130
    printer.finish(str(result.get("output", "")))
    print(f"session {result.get('session')}", file=sys.stderr)
    return 0


def run_chat(args: argparse.Namespace) -> int:
    import asyncio

    from hologram.cli.chat_watch import PROMPT, SessionWatch

    session: str | None = args.session
    connect = connector(args)
    asyncio.run(_check_reachable(connect))  # a wrong token or URL: say so once and leave, not at every line
    print("hologram chat: Ctrl-C cancels a turn, Ctrl-D or Ctrl-C at the prompt leaves.", file=sys.stderr)
    # At the prompt, the turns others start in the session (a reminder, the web page) show as they come.
    watch = SessionWatch(connect, session, None).start() if session else None
    while True:
        try:
            text = input(PROMPT)
        except (EOFError, KeyboardInterrupt):
            print(file=sys.stderr)
            if watch is not None:
                watch.stop()
            return 0
        if not text.strip():
            continue
        if watch is not None:  # this turn is one_turn's to show
            watch.stop()
            watch = None
        printer = Printer(sys.stdout, sys.stderr, reasoning=not args.no_reasoning)
        try:
            result = asyncio.run(one_turn(connect, text, session, printer, interactive=True))
        except HologramError as exc:
            print(exc.render(), file=sys.stderr)
            if session:
                watch = SessionWatch(connect, session, None).start()
            continue
        session = result.get("session") or session
        if result.get("cancelled"):
            print("\n(turn cancelled)", file=sys.stderr)
        else:
            printer.finish(str(result.get("output", "")))
        if session:  # from the end of this turn on (a cancelled one: from now on)
            watch = SessionWatch(connect, session, result.get("seq") or None).start()
