"""shell: approval policy (hook + in-tool check), timeout, output cap, streaming — through the real protocol."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from hologram.rpc import RingReader
from hologram.sdk.testing import PluginHarness
from tests.kit.loop import run
from tests.kit.wait import wait_until
from tests.plugins.helpers import err, harness, ok


class Approver:
    """Stands in for kernel.sessions.approve (the active channel asking a person)."""

    def __init__(self, answer: bool, reason: str = "") -> None:
        self.answer = answer
        self.reason = reason
        self.asked: list[dict[str, Any]] = []

    def __call__(self, caller: str, **params: Any) -> dict[str, Any]:
        self.asked.append({"caller": caller, **params})
        return {"approved": self.answer, "reason": self.reason}


def _shell(tmp_path: Path, approver: Approver | None = None, **config: Any) -> PluginHarness:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    provide = {"kernel.sessions": {"approve": approver or Approver(False, "no approver in this test")}}
    return harness("shell", config={"workspace": str(ws), **config}, provide=provide)


def _context(command: str, call_id: str, **extra: Any) -> dict[str, Any]:
    arguments = {"command": command, **extra}
    return {"session_id": "s1", "call_id": call_id, "tool": "shell_run", "arguments": arguments}


async def _approved(h: PluginHarness, command: str, call_id: str, **extra: Any) -> dict[str, Any]:
    """What the agent turn does: before_toolcall, then (if not denied) the call with the same call id."""
    verdict = await h.call_stage("before_toolcall", _context(command, call_id, **extra))
    assert verdict is None, verdict
    return await h.call_tool("shell_run", {"command": command, **extra}, call_id=call_id, session_id="s1")


def test_ask_mode_asks_and_runs_in_the_workspace_streaming_output(tmp_path: Path) -> None:
    approver = Approver(True)

    async def go() -> None:
        async with _shell(tmp_path, approver) as h:
            events = RingReader(h.ring.spec(), types=["tool_output"])
            result = ok(await _approved(h, "pwd; echo hello; echo oops >&2; exit 3", "c1"))
            assert result.splitlines()[0] == str((tmp_path / "ws").resolve())
            assert "hello" in result and "oops" in result and "exit code 3" in result
            assert approver.asked == [
                {
                    "caller": "shell",
                    "session_id": "s1",
                    "tool": "shell_run",
                    "arguments": {"command": "pwd; echo hello; echo oops >&2; exit 3"},
                    "summary": f"Run a shell command in {(tmp_path / 'ws').resolve()}:\npwd; echo hello; echo oops >&2; exit 3",
                }
            ]
            streamed = [e.data() for e in events.read().events]
            assert {e["stream"] for e in streamed} == {"stdout", "stderr"}
            assert all(e["call_id"] == "c1" and e["source"] == "shell" for e in streamed)
            assert "hello" in "".join(e["text"] for e in streamed if e["stream"] == "stdout")
            events.close()

    run(go())


def test_user_refusal_is_a_deny_with_the_reason(tmp_path: Path) -> None:
    async def go() -> None:
        async with _shell(tmp_path, Approver(False, "not today")) as h:
            verdict = await h.call_stage("before_toolcall", _context("touch pwned", "c1"))
            assert verdict == {"deny": "the user did not approve this shell_run call: not today"}
            # The turn would stop here; a kernel that ran the call anyway is still refused by the tool.
            assert "not approved" in err(await h.call_tool("shell_run", {"command": "touch pwned"}, call_id="c1"))

    run(go())
    assert not (tmp_path / "ws" / "pwned").exists()


def test_shell_without_approval_is_refused(tmp_path: Path) -> None:
    """A call that bypassed before_toolcall, reused an approval, or changed its arguments is refused by the tool.

    Mutation-checked: making `refusal()` return None, or Approvals.consume skip the digest comparison, fails it.
    """

    async def go() -> None:
        async with _shell(tmp_path, Approver(True)) as h:
            message = err(await h.call_tool("shell_run", {"command": "touch bypass"}, call_id="direct"))
            assert "refused" in message and "before_toolcall" in message
            # Approved for one command, invoked with another (e.g. a later hook rewrote the arguments).
            assert await h.call_stage("before_toolcall", _context("echo harmless", "c2")) is None
            message = err(await h.call_tool("shell_run", {"command": "touch swapped"}, call_id="c2"))
            assert "differ" in message
            # An approval is used once.
            ok(await _approved(h, "echo once", "c3"))
            assert "not approved" in err(await h.call_tool("shell_run", {"command": "echo once"}, call_id="c3"))

    run(go())
    assert not (tmp_path / "ws" / "bypass").exists()
    assert not (tmp_path / "ws" / "swapped").exists()


def test_an_approved_call_with_an_explicit_null_argument_runs(tmp_path: Path) -> None:
    """Models often send optional arguments as null. The approval is bound to the arguments the hook saw;
    the tool compares it with the arguments it was called with (`ToolContext.arguments`), not with a copy
    rebuilt from its keyword arguments, which dropped ``"timeout_s": null`` and refused the approved call.
    Mutation check (done): passing the arguments without their nulls to run_approved turns it red."""

    async def go() -> None:
        async with _shell(tmp_path, Approver(True)) as h:
            result = ok(await _approved(h, "echo with-null", "c1", timeout_s=None))
            assert "with-null" in result

    run(go())


def test_allow_list_mode(tmp_path: Path) -> None:
    approver = Approver(True)

    async def go() -> None:
        async with _shell(tmp_path, approver, mode="allow-list", allow=["echo", "git status"]) as h:
            assert await h.call_stage("before_toolcall", _context("echo hi", "c1")) is None
            assert ok(await h.call_tool("shell_run", {"command": "echo hi"}, call_id="c1")).startswith("hi\n")
            # Allow-listed commands also pass the tool's own check without the hook.
            assert ok(await h.call_tool("shell_run", {"command": "echo direct"}, call_id="c9")).startswith("direct")
            for command in ("echo hi; touch x", "echo $(touch x)", "echo hi > x", "rm -rf x", "git statusx"):
                verdict = await h.call_stage("before_toolcall", _context(command, "c2"))
                assert verdict is not None and "not on the allow-list" in verdict["deny"], command
                assert "refused" in err(await h.call_tool("shell_run", {"command": command}, call_id="c2"))
            assert approver.asked == [], "allow-list mode never asks"

    run(go())
    assert not (tmp_path / "ws" / "x").exists()


def test_ask_mode_auto_approves_the_allow_list(tmp_path: Path) -> None:
    approver = Approver(False)

    async def go() -> None:
        async with _shell(tmp_path, approver, allow=["ls"]) as h:
            assert await h.call_stage("before_toolcall", _context("ls -a", "c1")) is None
            assert await h.call_stage("before_toolcall", _context("ls; id", "c2")) is not None

    run(go())
    assert [a["arguments"]["command"] for a in approver.asked] == ["ls; id"]


def test_deny_mode(tmp_path: Path) -> None:
    async def go() -> None:
        async with _shell(tmp_path, Approver(True), mode="deny", allow=["echo"]) as h:
            verdict = await h.call_stage("before_toolcall", _context("echo hi", "c1"))
            assert verdict == {"deny": "shell_run is disabled by policy (mode = deny)"}
            assert "mode = deny" in err(await h.call_tool("shell_run", {"command": "echo hi"}, call_id="c1"))

    run(go())


def test_other_tools_pass_through_the_hook(tmp_path: Path) -> None:
    async def go() -> None:
        async with _shell(tmp_path) as h:
            other = {"tool": "files_read", "arguments": {"path": "x"}, "call_id": "c1"}
            assert await h.call_stage("before_toolcall", other) is None

    run(go())


def _alive(pid: int) -> bool:
    """Running (a zombie left for a reaper that does not reap counts as gone)."""
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def test_timeout_kills_the_process_group(tmp_path: Path) -> None:
    """The background job dies with the command at the timeout. Checked on the job's process itself: the file
    it would touch comes only after 300 s, so its absence a moment later proves nothing by itself. The
    timeout (2 s) leaves the command ample time to have started its job; 30 s of ``sleep`` stay far past it."""

    async def go() -> None:
        async with _shell(tmp_path, Approver(True)) as h:
            started = time.monotonic()
            command = "(sleep 300; touch late) & echo $! > job.pid; sleep 30"
            result = ok(await _approved(h, command, "c1", timeout_s=2))
            assert time.monotonic() - started < 20
            assert "timed out after 2 s" in result

    run(go())
    job = int((tmp_path / "ws" / "job.pid").read_text())
    # a failure bound: SIGKILL to the group is immediate
    wait_until(lambda: not _alive(job), timeout=30, what="the background job to die with the timed-out command")
    assert not (tmp_path / "ws" / "late").exists()


def test_oversized_output_is_capped(tmp_path: Path) -> None:
    """A megabyte of output comes back as at most the cap plus a footer saying how much was dropped.

    Mutation-checked: keeping every chunk in runner.pump (ignoring `room`) fails the length assertion.
    """

    async def go() -> None:
        async with _shell(tmp_path, Approver(True), max_output_bytes=1000) as h:
            result = ok(await _approved(h, "head -c 1000000 /dev/zero | tr '\\0' a", "c1"))
            assert len(result) < 1200
            assert result.startswith("a" * 1000)
            assert "output exceeded 1000 bytes; 999000 more bytes were dropped" in result

    run(go())


def test_secrets_are_not_in_the_command_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The plugin starts from a scrubbed environment (supervisor/environment.py): a provider key and a
    variable nobody passed never reach a command; what a program needs to run (here an LC_ variable) does."""
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-secret")
    monkeypatch.setenv("UNPASSED_SETTING", "leaked")
    monkeypatch.setenv("LC_HOLOGRAM_TEST", "visible")

    async def go() -> None:
        async with _shell(tmp_path, Approver(True)) as h:
            command = "echo ${DEEPSEEK_API_KEY:-none} ${UNPASSED_SETTING:-scrubbed} $LC_HOLOGRAM_TEST"
            result = ok(await _approved(h, command, "c1"))
            assert result.startswith("none scrubbed visible"), result

    run(go())
