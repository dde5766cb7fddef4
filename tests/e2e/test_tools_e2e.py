"""End to end with the built-in tool plugins: `hologram build` (built-ins discovered, no `--no-discover`),
a real `hologram up`, the strict DeepSeek mock on loopback, and a turn-API client (`hologram.clients.control`) that
streams the turn and answers the kernel's `approval.requested` events itself (as `hologram ask` does at a
terminal).

One scripted turn uses notes + files + shell: a serial batch (`notes_create`, `files_write`: not
parallel_safe), a concurrent batch (`notes_read` ×3, `files_read`: all parallel_safe), an approved
`shell_run`, then the answer. That the concurrent batch really overlapped is proven, not timed: two of its
notes are FIFOs ("gates"), and a thread holds the first gate's reader blocked until the second gate has a
reader too — which can only happen if both calls are in flight at once (see `Gates`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from hologram.api import turn as api
from hologram.clients import TurnClient
from hologram.sessions import SessionStore, pairing_problems
from mock_llm import MockLLM
from tests.kit.providers import provider_toml, write_settings

from .kernel import E2EKernel

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
BUILTINS = {
    "files",
    "shell",
    "code",
    "notes",
    "calendar",
    "rss",
    "web",
    "reminders",
    "todos",
    "agents",
    "admin",
    "skills",
    "terminal",
    "browser",
}
Answer = Callable[[dict[str, Any]], dict[str, Any]]


class BuiltinKernel(E2EKernel):
    """`E2EKernel`, but with the lock `hologram build` makes from the built-in manifests (discovery on)."""

    def __init__(self, root: Path, mock: MockLLM) -> None:  # no super(): that one builds --no-discover
        self.root = root
        self.data = root / "data"
        self.lock = root / "hologram.lock"
        self.mocks = [mock]
        self.process = None
        self.hologram("build", check=True)  # cwd = root: ./hologram.lock from built-ins + installed plugins
        self.data.mkdir(exist_ok=True)
        write_settings(
            self.data / "settings.toml", "[agent]\nmax_steps = 8\ntool_timeout_s = 30\n\n" + provider_toml(mock)
        )

    @property
    def workspace(self) -> Path:
        return self.data / "workspace"  # the shipped manifests: workspace = "../../workspace"

    @property
    def notes(self) -> Path:
        return self.data / "plugins" / "notes" / "notes"


@dataclass
class ClientLog:
    """What one control-socket client saw during its `ask`."""

    started: list[dict[str, Any]] = field(default_factory=list)
    deltas: list[tuple[str, str]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    approvals: list[dict[str, Any]] = field(default_factory=list)
    result: dict[str, Any] = field(default_factory=dict)

    def text(self, kind: str = "content") -> str:
        return "".join(t for k, t in self.deltas if k == kind)


async def _ask(data: Path, text: str, answer: Answer, interactive: bool) -> ClientLog:
    """One turn through the turn API (`hologram.clients.control`), as a channel runs it; approvals answered by ``answer``."""
    log = ClientLog()
    async with await TurnClient.connect(data, client="e2e", approvals=interactive) as client:
        turn = await client.start(text)
        async for event in asyncio_timeout_iter(turn, 30):
            if isinstance(event, api.TurnStarted):
                log.started.append({"session": event.session})
            elif isinstance(event, (api.ContentDelta, api.ReasoningDelta)):
                log.deltas.append(("content" if isinstance(event, api.ContentDelta) else "reasoning", event.text))
            elif isinstance(event, api.ApprovalRequested):
                log.approvals.append(api.wire(event))
                decision = answer(api.wire(event))
                await client.approve(event, bool(decision["approved"]), str(decision.get("reason", "")))
            else:
                log.events.append(api.wire(event))
        ended = turn.ended
        assert ended is not None
        log.result = {"session": turn.session, "output": ended.output, "ended_by": ended.stop_reason}
    return log


async def asyncio_timeout_iter(stream: Any, seconds: float) -> Any:
    """The stream's events; fails if the whole turn takes longer than ``seconds`` (a hung kernel)."""
    async with asyncio.timeout(seconds):
        async for event in stream:
            yield event


def ask(kernel: BuiltinKernel, text: str, answer: Answer, *, interactive: bool = True) -> ClientLog:
    return asyncio.run(_ask(kernel.data, text, answer, interactive))


def approve(params: dict[str, Any]) -> dict[str, Any]:
    return {"approved": True, "reason": "approved by the test"}


def refuse(params: dict[str, Any]) -> dict[str, Any]:
    return {"approved": False, "reason": "not today"}


def call(call_id: str, name: str, **arguments: Any) -> dict[str, str]:
    return {"id": call_id, "name": name, "arguments": json.dumps(arguments)}


def tool_messages(body: dict[str, Any]) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in body["messages"] if m["role"] == "tool"}


NOTE = '---\ntitle: "{title}"\ntags: []\ncreated: "2025-01-01T00:00:00+00:00"\nupdated: "2025-01-01T00:00:00+00:00"\n---\n\n{body}\n'


class Gates(threading.Thread):
    """Notes that are FIFOs, to prove that `notes_read` calls of one batch were in flight at the same time.

    `NoteStore.get` opens `<slug>.md`; on a FIFO that open blocks until a writer comes. This thread opens
    each FIFO for writing with O_NONBLOCK, which succeeds only while a reader is waiting, and *keeps* it open
    without writing, so the reader stays blocked (its call cannot finish). `overlapped` becomes true when
    every gate has a reader at once — impossible if the calls ran one after another. Then each FIFO is
    replaced by a regular file with the same note (so later opens, e.g. the store's second read, never
    block) and the held readers get the note and EOF. With no overlap within `wait_s` of the first reader the
    gates open anyway, so a serial executor fails the assertion instead of hanging the turn. The window starts
    at the first reader, not at the thread's start: how long the turn takes to reach the batch (two LLM steps
    and a serial batch before it) does not eat into it; `give_up_s` only ends a thread whose turn never came.
    """

    def __init__(self, folder: Path, titles: list[str], wait_s: float = 10.0, give_up_s: float = 60.0) -> None:
        super().__init__(daemon=True)
        umask = os.umask(0o077)  # as the notes plugin makes it: lazy, it has not run yet when the gates are made
        try:
            folder.mkdir(parents=True, exist_ok=True)
        finally:
            os.umask(umask)
        self.paths = {title: folder / f"{title}.md" for title in titles}
        for path in self.paths.values():
            os.mkfifo(path)
        self.wait_s = wait_s
        self.give_up_s = give_up_s
        self.overlapped = False
        self.held_at: dict[str, float] = {}

    def run(self) -> None:
        held: dict[str, int] = {}
        deadline = time.monotonic() + self.give_up_s
        while len(held) < len(self.paths) and time.monotonic() < deadline:
            for title, path in self.paths.items():
                if title not in held:
                    with contextlib.suppress(OSError):  # ENXIO: no reader yet
                        held[title] = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
                        self.held_at[title] = time.monotonic()
                        if len(held) == 1:  # the batch has reached the gates: from now on, wait_s for the rest
                            deadline = min(deadline, self.held_at[title] + self.wait_s)
            time.sleep(0.005)
        self.overlapped = len(held) == len(self.paths)
        for title, path in self.paths.items():
            note = NOTE.format(title=title, body=f"{title} was read concurrently").encode()
            tmp = path.with_suffix(".tmp")
            tmp.write_bytes(note)
            os.replace(tmp, path)  # a reader already blocked on the FIFO keeps its inode
            if title in held:
                os.write(held[title], note)
                os.close(held[title])


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory, mock: MockLLM) -> Iterator[BuiltinKernel]:
    k = BuiltinKernel(tmp_path_factory.mktemp("tools"), mock)
    k.start()
    yield k
    k.stop()


@pytest.fixture(autouse=True)
def fresh(mock: MockLLM) -> None:
    mock.reset()


def test_the_lock_has_every_builtin_and_its_graph_is_the_one_in_the_readme(kernel: BuiltinKernel) -> None:
    names = {p["name"] for p in kernel.status()["plugins"]}
    assert names >= BUILTINS, names
    graph = kernel.hologram("graph", "--format", "mermaid", "--lock", str(kernel.lock), check=True).stdout
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Built-in plugins", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```mermaid\n(.*?)```", section, re.S)
    assert block is not None, "README: no ```mermaid block in the 'Built-in plugins' section"
    assert block.group(1).strip() == graph.strip(), "README graph is stale: paste `hologram graph --format mermaid`"


def test_one_turn_uses_notes_files_and_an_approved_shell_with_a_concurrent_batch(
    kernel: BuiltinKernel, mock: MockLLM
) -> None:
    todo = "buy milk\nbake bread\n"
    command = "wc -l plan/todo.txt && echo shell-was-here > shell-marker.txt"
    answer = "Noted, planned, and the plan has 2 lines."
    mock.script(
        [
            {  # serial: neither tool is parallel_safe
                "reasoning_content": "write things down",
                "tool_calls": [
                    call("c1", "notes_create", title="Groceries", body="- milk\n- bread", tags=["home"]),
                    call("c2", "files_write", path="plan/todo.txt", content=todo),
                ],
            },
            {  # concurrent: every tool is parallel_safe; two of the notes are the FIFO gates
                "reasoning_content": "read them back, all at once",
                "tool_calls": [
                    call("c3", "notes_read", title="gate-a"),
                    call("c4", "files_read", path="plan/todo.txt"),
                    call("c5", "notes_read", title="Groceries"),
                    call("c6", "notes_read", title="gate-b"),
                ],
            },
            {"reasoning_content": "count the lines", "tool_calls": [call("c7", "shell_run", command=command)]},
            {"reasoning_content": "done", "content": answer},
        ]
    )
    gates = Gates(kernel.notes, ["gate-a", "gate-b"])
    gates.start()
    log = ask(kernel, "plan my shopping", approve)
    gates.join(10)

    # the answer streamed to the client, and the turn ended with it
    assert log.result["output"] == answer and log.result["ended_by"] == "answer", log.result
    assert log.text("content") == answer
    assert "count the lines" in log.text("reasoning")
    session = log.result["session"]
    assert log.started == [{"session": session}]

    # the approval request reached the client, once, with the command
    assert len(log.approvals) == 1, log.approvals
    request = log.approvals[0]
    assert (request["session"], request["plugin"], request["tool"]) == (session, "shell", "shell_run")
    assert request["arguments"] == {"command": command}
    assert command in request["summary"]

    # the concurrent batch overlapped
    assert gates.overlapped, f"the parallel_safe batch ran serially (gates held: {sorted(gates.held_at)})"

    # effects on disk
    assert (kernel.workspace / "plan" / "todo.txt").read_text() == todo
    note = (kernel.notes / "Groceries.md").read_text()
    assert note.startswith("---\n") and '"Groceries"' in note and '"home"' in note and note.endswith("- milk\n- bread")
    assert (kernel.workspace / "shell-marker.txt").read_text() == "shell-was-here\n"

    # what the model saw: no 400s, every result, the shell output
    assert mock.rejections == [] and all(r.status == 200 for r in mock.requests), [r.status for r in mock.requests]
    assert len(mock.requests) == 4
    seen = tool_messages(mock.requests[-1].body)
    assert list(seen) == ["c1", "c2", "c3", "c4", "c5", "c6", "c7"]  # results in call order
    assert "Groceries" in seen["c1"]
    assert "gate-a was read concurrently" in seen["c3"] and "gate-b was read concurrently" in seen["c6"]
    assert "buy milk" in seen["c4"] and "bake bread" in seen["c4"]
    assert "- milk" in seen["c5"]
    assert re.search(r"^2 plan/todo\.txt$", seen["c7"], re.M), seen["c7"]
    assert "[exit code 0" in seen["c7"]
    assert not any(m.startswith("error") or m.startswith("denied") for m in seen.values()), seen

    # the client was told about every call and every result, results in call order
    calls = [e["call_id"] for e in log.events if e.get("type") == "tool.call"]
    results = [e["call_id"] for e in log.events if e.get("type") == "tool.result"]
    assert sorted(calls) == sorted(results) == [f"c{i}" for i in range(1, 8)]
    assert results == [f"c{i}" for i in range(1, 8)]

    # the shell command's output reached the client live, as tool_output events of this session and call
    # (mutation check, done: not registering the turn's forwarder in agent/attach.py turns this red)
    output = [e for e in log.events if e.get("type") == "tool.output"]
    assert output and all(e["session"] == session and e["call_id"] == "c7" for e in output), output
    assert "plan/todo.txt" in "".join(e["text"] for e in output)

    # the persisted session pairs every call with exactly one result — through the control socket ...
    stored = kernel.events(session)
    made = [c["id"] for e in stored["events"] if e["kind"] == "response" for c in e["data"].get("tool_calls") or []]
    answered = [e["call_id"] for e in stored["events"] if e["kind"] == "tool_result"]
    assert made == answered == [f"c{i}" for i in range(1, 8)]
    assert all(not e["data"]["is_error"] for e in stored["events"] if e["kind"] == "tool_result")
    # the approval is stored with the call it decided: who, under which policy, when
    decided = {e["call_id"]: e["data"].get("approval") for e in stored["events"] if e["kind"] == "tool_result"}
    assert decided["c7"] is not None and decided["c7"]["approved"] is True, decided
    assert (decided["c7"]["by"], decided["c7"]["mode"]) == ("e2e", "ask") and decided["c7"]["at"] > 0
    assert all(decided[c] is None for c in decided if c != "c7")  # tools that need no approval carry none
    assert [e["kind"] for e in stored["events"]][-2:] == ["response", "output"]
    # ... and on disk, with each result linked to the response that made its call
    assert pairing_problems(SessionStore(kernel.data / "sessions.db").events(session)) == []


def test_a_refused_shell_call_is_denied_and_does_not_run(kernel: BuiltinKernel, mock: MockLLM) -> None:
    marker = kernel.workspace / "refused-marker.txt"
    mock.script(
        [
            {
                "reasoning_content": "try the shell",
                "tool_calls": [
                    call("d1", "shell_run", command=f"touch {marker.name}"),
                    call("d2", "files_list", path="."),
                ],
            },
            {"reasoning_content": "ok", "content": "I was not allowed to."},
        ]
    )
    log = ask(kernel, "touch a file", refuse)
    assert log.result["output"] == "I was not allowed to.", log.result
    assert [a["arguments"] for a in log.approvals] == [{"command": f"touch {marker.name}"}]
    seen = tool_messages(mock.requests[-1].body)
    assert seen["d1"].startswith("denied: the call was not approved"), seen
    assert "not today" in seen["d1"]
    assert not seen["d2"].startswith(("error", "denied")), seen  # the other call of the batch still ran
    assert not marker.exists()
    assert mock.rejections == []
    assert pairing_problems(SessionStore(kernel.data / "sessions.db").events(log.result["session"])) == []


def test_a_client_that_cannot_approve_gets_its_only_call_denied_and_the_turn_ends(
    kernel: BuiltinKernel, mock: MockLLM
) -> None:
    """A non-interactive client (a script, `hologram ask` without a terminal) is never asked; when every call
    of a response is denied the turn ends there, without asking the model again."""
    marker = kernel.workspace / "unasked-marker.txt"
    mock.script([{"reasoning_content": "r", "tool_calls": [call("n1", "shell_run", command=f"touch {marker.name}")]}])
    log = ask(kernel, "touch it", approve, interactive=False)
    assert log.approvals == []
    assert log.result["ended_by"] == "denied", log.result
    assert "denied: the call was not approved" in log.result["output"], log.result
    assert "no client that can approve" in log.result["output"], log.result
    assert len(mock.requests) == 1 and mock.rejections == []
    assert not marker.exists()
    stored = kernel.events(log.result["session"])
    results = [e for e in stored["events"] if e["kind"] == "tool_result"]
    assert [(e["call_id"], e["data"]["status"]) for e in results] == [("n1", "denied")]


async def _turns(data: Path, texts: list[tuple[str, str | None]]) -> list[str]:
    """Turns in order, each in the session named (None: a new one); returns each turn's session."""
    sessions = []
    async with await TurnClient.connect(data, client="e2e") as client:
        for text, session in texts:
            turn = await client.start(text, session=session)
            ended = await asyncio.wait_for(turn.result(), 30)
            assert ended.stop_reason == "answer", (text, ended)
            sessions.append(turn.session)
    return sessions


def test_a_deferred_tool_is_named_until_loaded_then_sent_for_the_rest_of_the_session(
    kernel: BuiltinKernel, mock: MockLLM
) -> None:
    """The calendar's manifest defers its tools: the first request names them in `tools_load`'s description
    and sends no schema of theirs; the model loads the plugin's tools, the next request of the turn carries
    their schemas (wire form: no additionalProperties) and the model's `calendar_add` runs; the session's next
    turn sends them from its first request, a new session does not. (Mutation check, done: `snapshot` given a
    fresh set for every step fails this at the second request; a call by name of a deferred tool — the
    scripts of the test above — is served whether or not it was loaded.)"""
    mock.script(
        [
            {"reasoning_content": "r", "tool_calls": [call("l1", "tools_load", names=["calendar"])]},
            {
                "reasoning_content": "r",
                "tool_calls": [call("c1", "calendar_add", summary="Dentist", start="2030-03-30T09:00")],
            },
            {"reasoning_content": "r", "content": "Added."},
            {"reasoning_content": "r", "content": "Still here."},
            {"reasoning_content": "r", "content": "New."},
        ]
    )
    [session] = asyncio.run(_turns(kernel.data, [("add the dentist", None)]))
    asyncio.run(_turns(kernel.data, [("anything else?", session), ("hello", None)]))
    assert mock.rejections == []
    names = [{t["function"]["name"]: t["function"] for t in r.body.get("tools") or []} for r in mock.requests]
    assert len(names) == 5
    assert "calendar_add" not in names[0] and "files_read" in names[0]
    assert "calendar_add" in names[0]["tools_load"]["description"], names[0]["tools_load"]
    assert tool_messages(mock.requests[1].body)["l1"].startswith("loaded calendar_add, calendar_list, calendar_delete")
    add = names[1]["calendar_add"]["parameters"]
    assert {"summary", "start"} <= add["properties"].keys() and "additionalProperties" not in add, add
    result = tool_messages(mock.requests[2].body)["c1"]
    assert not result.startswith("error") and "Dentist" in result, result
    assert "calendar_add" in names[3], "the session's next turn: loaded already"
    assert "calendar_add" not in names[4] and "tools_load" in names[4], "a new session: named only"


def test_defer_tools_false_sends_every_schema(tmp_path: Path, mock: MockLLM) -> None:
    """``[agent] defer_tools = false`` (settings.toml): every shipped tool's schema in the first request, no
    ``tools_load``. (Mutation check, done: attach.py not passing the setting to `ToolRegistry` fails it.)"""
    k = BuiltinKernel(tmp_path, mock)
    settings = k.data / "settings.toml"
    settings.write_text(settings.read_text().replace("[agent]\n", "[agent]\ndefer_tools = false\n", 1))
    k.start()
    try:
        mock.script([{"reasoning_content": "r", "content": "Hi!"}])
        asyncio.run(_turns(k.data, [("hello", None)]))
    finally:
        k.stop()
    names = {t["function"]["name"] for t in mock.requests[0].body["tools"]}
    assert "tools_load" not in names
    assert {"calendar_add", "notes_create", "rss_fetch", "code_run", "files_read"} <= names, sorted(names)


def test_what_every_builtin_writes_is_the_users_alone(kernel: BuiltinKernel, mock: MockLLM) -> None:
    """After a turn in which each writing built-in writes (calendar, code, files, notes, shell), no file or
    directory under the data dir is readable by group or others: the zygote that forks the plugins, and so
    every plugin, runs with umask 077 as the kernel does, and an atomic write makes what the umask gives.
    (Mutation checks, done: the zygote's umask 022, or `atomic_write` making 0644 again, fail this.)"""
    mock.script(
        [
            {"reasoning_content": "r", "tool_calls": [call("m1", "tools_load", names=["calendar", "code"])]},
            {
                "reasoning_content": "r",
                "tool_calls": [
                    call("m2", "calendar_add", summary="Modes", start="2030-01-02T09:00"),
                    call("m3", "notes_create", title="Modes", body="private"),
                    call("m4", "files_write", path="modes/deep/file.txt", content="private"),
                    call("m5", "shell_run", command="mkdir -p shell-dir && echo x > shell-dir/out.txt"),
                    call("m6", "code_run", code="import os; os.makedirs('code-dir'); open('code-dir/o.txt','w')"),
                ],
            },
            {"reasoning_content": "r", "content": "Written."},
        ]
    )
    log = ask(kernel, "write everywhere", approve)
    assert log.result["output"] == "Written.", log.result
    seen = tool_messages(mock.requests[-1].body)
    assert not any(v.startswith(("error", "denied")) for v in seen.values()), seen
    written = [
        kernel.workspace / "modes" / "deep" / "file.txt",
        kernel.workspace / "shell-dir" / "out.txt",
        kernel.workspace / "code-dir" / "o.txt",
        kernel.notes / "Modes.md",
    ]
    assert all(p.is_file() for p in written), [p for p in written if not p.is_file()]
    assert list(kernel.data.rglob("*.ics")), "the calendar wrote no .ics file"
    made_by_the_test = {kernel.data / "settings.toml", *kernel.notes.glob("gate-*")}  # the FIFO gates above
    open_to_others = sorted(
        f"{oct(p.lstat().st_mode & 0o777)} {p.relative_to(kernel.data)}"
        for p in [kernel.data, *kernel.data.rglob("*")]
        if not p.is_symlink() and p not in made_by_the_test and p.lstat().st_mode & 0o077
    )
    assert open_to_others == [], open_to_others
