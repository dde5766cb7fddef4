"""`hologram acp` end to end: the `agent-client-protocol` package's **client side** (what an editor is) spawns
`hologram acp` as a real subprocess against a real `hologram up` (shell, code, the recorder — a third-party tool
that needs approval and records every call it receives — and a plain tool), the strict mock as the model.

What is proven, each through what the editor received, what reached the recorder, the session as stored:
- ``initialize`` says what the agent can do and the editor's clientInfo becomes the turns' client and channel;
  ``session/new`` is a session the kernel lists before any prompt (``sessions/create``);
- a prompt streams its answer in chunks, its reasoning as thoughts, a tool call and its completion;
- a permission answered allow once (the call ran once), reject (it never reached the plugin; the prompt ends
  ``end_turn``), always allow (the rule is in settings.toml and the next call is not asked);
- ``session/cancel`` at a permission request: ``stopReason: cancelled``, the call never ran, and the strict
  mock accepts the session's next turn (0 rejections: every call has its result);
- ``session/load`` in another `hologram acp` replays the stored session: the user's words, thoughts, the tool
  call with its final status, the answer;
- the editor going away mid-turn (stdin closed at a permission request): `hologram acp` exits, the kernel
  ends the turn, and the session's next turn is accepted by the strict mock.

Mutation checks (done, each turned the named test red): `HologramAgent.cancel` not calling ``turn/cancel``
(cancel: the prompt never ends); ``always`` sent as ``approve_once`` (always allow: the second call asked);
``denied`` mapped to ``refusal`` (the reject cases); an editor gone mid-turn answered ``deny`` by `_ask`, and
turns started with ``on_disconnect="continue"`` (going away: the request not closed by the kernel); the editor's
clientInfo not used as the client name (initialize: channel); `load_session` not replaying (load); a failed
permission request left unanswered (cannot answer: the prompt waits); `sessions/create` ignoring the caller's
channel (initialize, sessions_create).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import tomllib
from acp import PROTOCOL_VERSION, RequestError, spawn_agent_process, text_block
from acp.client.connection import ClientSideConnection
from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    AllowedOutcome,
    DeniedOutcome,
    Implementation,
    PermissionOption,
    RequestPermissionResponse,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
    UserMessageChunk,
)

from hologram.api import turn as api
from hologram.clients import TurnClient
from mock_llm import MockLLM
from tests.kit.wait import wait_until

from .test_approvals_e2e import ApprovalKernel, script_one_call

pytestmark = pytest.mark.slow
HOLOGRAM = [sys.executable, "-m", "hologram"]
EDITOR = Implementation(name="acp-test", title="ACP test editor", version="9.9.9")
WAIT_S = 60  # a failure bound for one prompt, never an expected duration

LOOKUP_MANIFEST = """\
[plugin]
name = "lookup"
version = "0.1.0"
description = "a tool that needs no approval"
run = { module = "lookup", env = { PYTHONPATH = "{path}" } }

[[tools]]
name = "lookup"
description = "look a word up"
parameters = { type = "object", properties = { word = { type = "string" } }, required = ["word"] }
"""

LOOKUP = """\
from hologram.sdk import Plugin

plugin = Plugin("lookup")


@plugin.tool("lookup")
async def lookup(word: str) -> str:
    return f"{word} means 42"


if __name__ == "__main__":
    plugin.run()
"""


class AcpKernel(ApprovalKernel):
    """`ApprovalKernel` plus a tool without approval; approvals wait long (the tests answer them)."""

    def __init__(self, root: Path, mock: MockLLM) -> None:
        super().__init__(root, mock, {"lookup": (LOOKUP_MANIFEST, LOOKUP)})
        settings = self.data / "settings.toml"
        settings.write_text(settings.read_text().replace("timeout_s = 3\n", "timeout_s = 300\n", 1))


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory, mock: MockLLM) -> Iterator[AcpKernel]:
    k = AcpKernel(tmp_path_factory.mktemp("acp"), mock)
    k.start()
    yield k
    k.stop()


@pytest.fixture(autouse=True)
def fresh(mock: MockLLM, kernel: AcpKernel) -> None:
    mock.reset()
    kernel.record.unlink(missing_ok=True)


class Editor:
    """The editor's side (an `acp.interfaces.Client`): keeps every update, answers permission requests with
    ``choose`` (an option id; None: hold the request until the test answers it through ``asked``)."""

    def __init__(self, choose: str | None = "approve_once") -> None:
        self.choose = choose
        self.updates: list[Any] = []
        self.asked: asyncio.Queue[tuple[ToolCallUpdate, list[PermissionOption], asyncio.Future[str | None]]] = (
            asyncio.Queue()
        )
        self.requests: list[tuple[ToolCallUpdate, list[PermissionOption]]] = []

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)

    async def request_permission(
        self, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption], **kwargs: Any
    ) -> RequestPermissionResponse:
        self.requests.append((tool_call, options))
        answer: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        if self.choose is not None:
            answer.set_result(self.choose)
        await self.asked.put((tool_call, options, answer))
        chosen = await answer
        if chosen is None:  # the editor cancelled the prompt: ACP's answer to its open requests
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=chosen))

    def of(self, kind: type[Any]) -> list[Any]:
        return [u for u in self.updates if isinstance(u, kind)]

    def text(self, kind: type[Any]) -> str:
        return "".join(u.content.text for u in self.of(kind))


@asynccontextmanager
async def acp(kernel: AcpKernel, editor: Editor) -> AsyncIterator[tuple[ClientSideConnection, Any]]:
    """`hologram acp` for the kernel's data directory, initialized; its stderr in ``acp-stderr.log``."""
    log = (kernel.root / "acp-stderr.log").open("ab")
    try:
        async with spawn_agent_process(
            lambda agent: editor, *HOLOGRAM, "acp", "--data", str(kernel.data), "--lock", str(kernel.lock),
            "--no-start", transport_kwargs={"stderr": log.fileno(), "shutdown_timeout": 30.0},
        ) as (conn, process):  # fmt: skip
            answer = await conn.initialize(protocol_version=PROTOCOL_VERSION, client_info=EDITOR)
            assert answer.agent_capabilities is not None and answer.agent_capabilities.load_session
            yield conn, process
    finally:
        log.close()


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 180))


def stored(kernel: AcpKernel, session: str) -> list[dict[str, Any]]:
    return list(kernel.events(session)["events"])


def unanswered(kernel: AcpKernel, session: str) -> list[str]:
    """The session's tool calls without exactly one result, as a model would be sent the session (the
    ``messages`` of ``sessions/read``): each assistant call answered by one tool message before the next turn."""
    messages = kernel.events(session)["messages"]
    problems = []
    for n, message in enumerate(messages):
        for call in message.get("tool_calls") or []:
            later = messages[n + 1 :]
            end = next((i for i, m in enumerate(later) if m["role"] != "tool"), len(later))
            answers = [m for m in later[:end] if m.get("tool_call_id") == call["id"]]
            if len(answers) != 1:
                problems.append(f"call {call['id']} of message {n} has {len(answers)} results")
    return problems


def script_lookup(mock: MockLLM, answer: str = "the answer is forty-two") -> None:
    mock.script(
        [
            {"reasoning_content": "I should look it up", "tool_calls": [{"id": "c1", "name": "lookup",
                                                                         "arguments": '{"word": "life"}'}]},
            {"reasoning_content": "now I know", "content": answer},
        ]
    )  # fmt: skip


def test_initialize_new_session_and_a_prompt_stream_chunks_thoughts_and_a_tool_call(
    kernel: AcpKernel, mock: MockLLM
) -> None:
    editor = Editor()

    async def go() -> tuple[Any, str, list[dict[str, Any]]]:
        async with acp(kernel, editor) as (conn, _):
            session = (await conn.new_session(cwd=str(kernel.root), mcp_servers=[])).session_id
            async with await TurnClient.connect(kernel.data, client="check") as check:
                listed = {s["id"]: s for s in await check.sessions()}
            script_lookup(mock)
            done = await conn.prompt(session_id=session, prompt=[text_block("what is life?")])
            return done, session, [listed[session]]

    done, session, [listed] = run(go())
    assert listed["channel"] == "acp-test" and listed["events"] == 0, "session/new made the session, empty"
    assert done.stop_reason == "end_turn"
    chunks = editor.of(AgentMessageChunk)
    assert len(chunks) > 1 and editor.text(AgentMessageChunk) == "the answer is forty-two", "streamed in chunks"
    assert editor.text(AgentThoughtChunk) == "I should look it upnow I know"
    [started] = editor.of(ToolCallStart)
    assert (started.tool_call_id, started.title, started.raw_input) == ("c1", "lookup", {"word": "life"})
    [finished] = [u for u in editor.of(ToolCallProgress) if u.status in ("completed", "failed")]
    assert finished.status == "completed" and finished.content[0].content.text == "life means 42"
    assert editor.updates.index(started) < editor.updates.index(finished) < editor.updates.index(chunks[0])
    events = stored(kernel, session)
    [typed] = [e for e in events if e["kind"] == "input"]
    assert (typed["data"]["text"], typed["data"]["client"], typed["data"]["client_version"]) == (
        "what is life?", "acp-test", "9.9.9"
    )  # fmt: skip
    assert typed["channel"] == "acp-test", "the kernel made the editor's name the channel"
    assert mock.rejections == []


@pytest.mark.parametrize(
    ("option", "reached", "status"),
    [("approve_once", ["mark-once"], "completed"), ("deny", [], "failed"), ("deny_always", [], "failed")],
)
def test_a_permission_answered_in_the_editor_decides_the_call(
    kernel: AcpKernel, mock: MockLLM, option: str, reached: list[str], status: str
) -> None:
    editor = Editor(option)
    mark = reached[0] if reached else f"mark-{option}"

    async def go() -> Any:
        async with acp(kernel, editor) as (conn, _):
            session = (await conn.new_session(cwd=str(kernel.root), mcp_servers=[])).session_id
            script_one_call(mock, "deploy", mark)
            return await conn.prompt(session_id=session, prompt=[text_block("deploy it")])

    done = run(go())
    [(tool_call, options)] = editor.requests
    assert [(o.option_id, o.kind) for o in options] == [
        ("approve_once", "allow_once"), ("always", "allow_always"), ("deny", "reject_once"),
        ("deny_always", "reject_always"),
    ]  # fmt: skip
    assert (tool_call.tool_call_id, tool_call.status, tool_call.raw_input) == ("k1", "pending", {"target": mark})
    assert mark in (tool_call.title or ""), "the request shows what will run"
    assert kernel.received() == reached, "the call reached the plugin exactly when the editor allowed it"
    [finished] = [u for u in editor.of(ToolCallProgress) if u.status in ("completed", "failed")]
    assert finished.status == status
    assert done.stop_reason == "end_turn"
    assert mock.rejections == []


class FailingEditor(Editor):
    """An editor whose permission request fails (it does not implement it, or it broke)."""

    async def request_permission(self, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption],
                                 **kwargs: Any) -> RequestPermissionResponse:  # fmt: skip
        self.requests.append((tool_call, options))
        raise RequestError.method_not_found("session/request_permission")


def test_an_editor_that_cannot_answer_a_permission_is_a_deny(kernel: AcpKernel, mock: MockLLM) -> None:
    editor = FailingEditor()

    async def go() -> tuple[Any, str]:
        async with acp(kernel, editor) as (conn, _):
            session = (await conn.new_session(cwd=str(kernel.root), mcp_servers=[])).session_id
            script_one_call(mock, "deploy", "mark-unasked")
            return await conn.prompt(session_id=session, prompt=[text_block("deploy it")]), session

    done, session = run(go())
    assert len(editor.requests) == 1 and kernel.received() == [], "asked, it failed, and the call never ran"
    [result] = [e["data"] for e in stored(kernel, session) if e["kind"] == "tool_result"]
    assert result["status"] == "denied" and "the editor could not be asked" in result["approval"]["reason"]
    assert done.stop_reason == "end_turn" and mock.rejections == []


def test_always_allow_writes_the_policy_and_the_next_call_is_not_asked(kernel: AcpKernel, mock: MockLLM) -> None:
    editor = Editor("always")

    async def go() -> tuple[Any, Any]:
        async with acp(kernel, editor) as (conn, _):
            first = (await conn.new_session(cwd=str(kernel.root), mcp_servers=[])).session_id
            script_one_call(mock, "deploy", "mark-always")
            one = await conn.prompt(session_id=first, prompt=[text_block("deploy it")])
            second = (await conn.new_session(cwd=str(kernel.root), mcp_servers=[])).session_id
            script_one_call(mock, "deploy", "mark-always")
            two = await conn.prompt(session_id=second, prompt=[text_block("deploy it again")])
            return one, two

    one, two = run(go())
    assert len(editor.requests) == 1, "the second call, in another session, was not asked"
    assert (one.stop_reason, two.stop_reason) == ("end_turn", "end_turn")
    policy = tomllib.loads((kernel.data / "settings.toml").read_text())
    assert policy["approvals"]["tools"]["deploy"]["allow"] == ["mark-always"]
    assert kernel.received() == ["mark-always", "mark-always"]


def test_cancel_at_a_permission_request_ends_the_prompt_cancelled_and_the_session_stays_valid(
    kernel: AcpKernel, mock: MockLLM
) -> None:
    editor = Editor(None)

    async def go() -> tuple[Any, Any, str]:
        async with acp(kernel, editor) as (conn, _):
            session = (await conn.new_session(cwd=str(kernel.root), mcp_servers=[])).session_id
            script_one_call(mock, "deploy", "mark-cancelled")
            prompt = asyncio.ensure_future(conn.prompt(session_id=session, prompt=[text_block("deploy it")]))
            _, _, answer = await editor.asked.get()  # held at the permission request
            await conn.cancel(session_id=session)
            cancelled = await prompt  # the kernel ended the turn: session/cancel alone did it
            answer.set_result(None)  # the request's "cancelled" answer (ACP asks it of the editor) comes late
            script_lookup(mock, "still here")
            after = await conn.prompt(session_id=session, prompt=[text_block("and now?")])
            return cancelled, after, session

    cancelled, after, session = run(go())
    assert cancelled.stop_reason == "cancelled"
    assert kernel.received() == [], "the cancelled call never ran"
    assert after.stop_reason == "end_turn" and editor.text(AgentMessageChunk).endswith("still here")
    assert mock.rejections == [], "the strict mock accepted the turn after the cancel"
    assert unanswered(kernel, session) == []


def test_load_session_replays_the_stored_history(kernel: AcpKernel, mock: MockLLM) -> None:
    live, loaded = Editor(), Editor()

    async def go() -> str:
        async with acp(kernel, live) as (conn, _):
            session = (await conn.new_session(cwd=str(kernel.root), mcp_servers=[])).session_id
            script_lookup(mock, "forty-two, as looked up")
            await conn.prompt(session_id=session, prompt=[text_block("what is life?")])
        async with acp(kernel, loaded) as (conn, _):  # another editor, another `hologram acp`
            await conn.load_session(cwd=str(kernel.root), session_id=session, mcp_servers=[])
            script_lookup(mock, "still forty-two")
            await conn.prompt(session_id=session, prompt=[text_block("sure?")])
        return session

    run(go())
    assert isinstance(loaded.updates[0], UserMessageChunk), "the replay starts with the user's first words"
    assert [u.content.text for u in loaded.of(UserMessageChunk)] == ["what is life?"], "the user's words"
    [started, *_] = loaded.of(ToolCallStart)
    assert (started.tool_call_id, started.title, started.status) == ("c1", "lookup", "completed")
    assert started.content[0].content.text == "life means 42", "the tool call with its final status and result"
    assert loaded.text(AgentThoughtChunk).startswith(live.text(AgentThoughtChunk))
    assert loaded.text(AgentMessageChunk) == "forty-two, as looked upstill forty-two"
    assert mock.rejections == []


def test_the_editor_going_away_mid_turn_leaves_the_session_valid(kernel: AcpKernel, mock: MockLLM) -> None:
    editor = Editor(None)

    async def go() -> tuple[str, int | None]:
        async with acp(kernel, editor) as (conn, process):
            session = (await conn.new_session(cwd=str(kernel.root), mcp_servers=[])).session_id
            script_one_call(mock, "deploy", "mark-gone")
            prompt = asyncio.ensure_future(conn.prompt(session_id=session, prompt=[text_block("deploy it")]))
            await editor.asked.get()  # held at the permission request; now the editor closes the connection
        with contextlib.suppress(ConnectionError):  # the prompt went with the connection
            await prompt
        return session, process.returncode

    session, code = run(go())
    assert code == 0, "hologram acp exited on its own when its stdin closed (128 + n: a signal stopped it)"

    turn = next(e["turn"] for e in stored(kernel, session) if e["kind"] == "input")

    async def read_turn() -> dict[str, Any]:
        async with await TurnClient.connect(kernel.data, client="look") as client:
            return await client.read_turn(session, turn)

    ended = wait_until(
        lambda: run(read_turn()), accept=lambda t: t["status"] == "ended", timeout=WAIT_S,
        what="the kernel to end the abandoned turn",
    )  # fmt: skip
    assert ended["stop_reason"] in ("cancelled", "denied"), ended
    [result] = [e["data"] for e in stored(kernel, session) if e["kind"] == "tool_result"]
    assert (result["approval"]["by"], result["approval"]["reason"]) == (
        "kernel",
        "the client that could approve went away",
    ), "the kernel closed the request when the editor's connection went (hologram acp did not answer it)"
    assert kernel.received() == [], "the call of the abandoned turn never ran"

    async def next_turn() -> api.TurnEnded:
        async with await TurnClient.connect(kernel.data, client="after") as client:
            mock.script([{"reasoning_content": "r", "content": "fine"}])
            turn = await client.start("are you there?", session=session)
            return await turn.result()

    after = run(next_turn())
    assert after.stop_reason == "answer" and mock.rejections == [], "the strict mock accepted the next turn"
    assert unanswered(kernel, session) == []


def test_the_docs_example_client_asks_and_is_asked(kernel: AcpKernel, mock: MockLLM) -> None:
    """docs/channels.md's client (docs/examples/channels/acp_client.py), run against this kernel: its editor
    allows the call it is asked about, and gets the answer."""
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "docs" / "examples" / "channels" / "acp_client.py"
    spec = importlib.util.spec_from_file_location("acp_client", path)
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    script_one_call(mock, "deploy", "mark-example")
    hologram = str(Path(sys.executable).parent / "hologram")
    assert run(example.ask(str(kernel.data), "deploy it", hologram)) == "done"
    assert kernel.received() == ["mark-example"]


def test_sessions_create_makes_an_empty_session_of_the_callers_channel(kernel: AcpKernel) -> None:
    """The turn API method `session/new` stands on, for every client (docs/protocol.md §9)."""

    async def go() -> tuple[str, list[dict[str, Any]], dict[str, Any]]:
        async with await TurnClient.connect(kernel.data, client="maker") as client:
            session = await client.create_session("from an editor")
            listed = [s for s in await client.sessions() if s["id"] == session]
            return session, listed, await client.read(session)

    session, [listed], read = run(go())
    assert (listed["title"], listed["channel"], listed["events"]) == ("from an editor", "maker", 0)
    assert read["events"] == [] and read["session"] == session


def script_slow_answer(mock: MockLLM) -> None:
    """A tool call, then an answer streamed slowly (a failure bound of minutes: the test kills the editor's
    `hologram acp` at its first chunk, and the kernel cancels the turn long before the end)."""
    mock.script(
        [
            {"reasoning_content": "look it up", "tool_calls": [{"id": "s1", "name": "lookup",
                                                                 "arguments": '{"word": "slow"}'}]},
            {"reasoning_content": "answering", "content": "word " * 400, "chunk_chars": 5, "chunk_delay": 0.5},
        ]
    )  # fmt: skip


@pytest.mark.parametrize("moment", ["at a permission request", "while the answer streams"])
def test_hologram_acp_killed_mid_turn_leaves_the_session_valid(kernel: AcpKernel, mock: MockLLM, moment: str) -> None:
    """SIGKILL of `hologram acp` (the editor's agent process: no clean close, no cancel sent) mid-turn: the
    kernel sees its connection drop, ends the turn (an open request closed by the kernel, the calls answered,
    the partial answer stored), and the session's next turn is accepted by the strict mock with every call
    paired with its result. Mutation check (done): turns started with ``on_disconnect="continue"`` by the ACP
    agent turn both cases red (the turn runs on without its client: the request waits for the approval timeout,
    the answer streams to its end)."""
    editor = Editor(None)

    async def go() -> tuple[str, int | None]:
        async with acp(kernel, editor) as (conn, process):
            session = (await conn.new_session(cwd=str(kernel.root), mcp_servers=[])).session_id
            if moment == "at a permission request":
                script_one_call(mock, "deploy", "mark-killed")
            else:
                script_slow_answer(mock)
            prompt = asyncio.ensure_future(conn.prompt(session_id=session, prompt=[text_block("go on")]))
            if moment == "at a permission request":
                await editor.asked.get()
            else:
                while not editor.of(AgentMessageChunk):  # an update arrives on this loop: yield to it, then look
                    await asyncio.wait({prompt}, timeout=0.05)
                    assert not prompt.done(), "the prompt ended before its answer streamed"
            process.kill()
            await process.wait()
            with contextlib.suppress(Exception):  # the prompt went with the process
                await prompt
            return session, process.returncode

    session, code = run(go())
    assert code == -9, "killed, not closed"
    turn = next(e["turn"] for e in stored(kernel, session) if e["kind"] == "input")

    async def read_turn() -> dict[str, Any]:
        async with await TurnClient.connect(kernel.data, client="look") as client:
            return await client.read_turn(session, turn)

    ended = wait_until(
        lambda: run(read_turn()), accept=lambda t: t["status"] == "ended", timeout=WAIT_S,
        what="the kernel to end the turn of the killed client",
    )  # fmt: skip
    assert ended["stop_reason"] in ("cancelled", "denied"), ended
    assert kernel.received() == [], "nothing ran unapproved"
    results = [e["data"] for e in stored(kernel, session) if e["kind"] == "tool_result"]
    if moment == "at a permission request":
        assert [r["approval"]["by"] for r in results] == ["kernel"], "the kernel closed the open request"
    else:
        assert [r["content"] for r in results] == ["slow means 42"], "the finished call kept its result"

    async def next_turn() -> api.TurnEnded:
        async with await TurnClient.connect(kernel.data, client="after") as client:
            mock.script([{"reasoning_content": "r", "content": "fine"}])
            turn = await client.start("are you there?", session=session)
            return await turn.result()

    after = run(next_turn())
    assert after.stop_reason == "answer" and mock.rejections == [], "the strict mock accepted the next turn"
    assert unanswered(kernel, session) == []


def test_session_list_lists_the_kernels_sessions_newest_first_in_pages(kernel: AcpKernel, mock: MockLLM) -> None:
    """``session/list``: every session of the kernel (not only this connection's: one made by another client is
    there), newest first as the kernel orders them, titled, paged with the kernel's cursor (a bad one refused
    with the turn API's message). Mutation check (done): answering the kernel's list reversed (oldest first)
    turns this red."""

    async def go() -> tuple[list[Any], list[str], str, str, Any]:
        async with acp(kernel, Editor()) as (conn, _):
            mine = (await conn.new_session(cwd=str(kernel.root), mcp_servers=[])).session_id
            async with await TurnClient.connect(kernel.data, client="elsewhere") as other:
                theirs = await other.create_session("made elsewhere")
                mock.script([{"reasoning_content": "r", "content": "hello"}])
                await (await other.start("say hello", session=theirs)).result()  # now the newest
                expected = [s["id"] for s in await other.sessions()]
            pages, cursor = [], None
            while True:
                page = await conn.list_sessions(cwd="/somewhere/else", cursor=cursor)
                pages.append(page)
                cursor = page.next_cursor
                if cursor is None:
                    break
            with pytest.raises(RequestError) as bad:
                await conn.list_sessions(cursor="not-a-cursor")
            return pages, expected, mine, theirs, bad.value

    pages, expected, mine, theirs, bad = run(go())
    listed = [s for page in pages for s in page.sessions]
    assert [s.session_id for s in listed] == expected, "every session, in the kernel's order (newest first)"
    assert listed[0].session_id == theirs and listed[0].title == "made elsewhere"
    assert len(pages) == -(-len(expected) // 50), "pages of 50"
    cwds = {s.session_id: s.cwd for s in listed}
    assert cwds[mine] == str(kernel.root) and cwds[theirs] == "/somewhere/else"
    assert listed[0].updated_at is not None and listed[0].updated_at.endswith("+00:00")
    assert "cursor" in str(bad) and bad.code == -32602
