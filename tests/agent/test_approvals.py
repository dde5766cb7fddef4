"""The kernel's approval policy (hologram/agent/approvals.py): modes, the allow-list, who decides, the record.

The end-to-end proof that a plugin never receives a call that was not approved is
tests/e2e/test_approvals_e2e.py; here the policy's decisions are checked one by one, with the clients'
answer stood in by a function that records what it was asked.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from hologram.agent.approvals import ApprovalRequest, Approver, Requirement, matches_allow_list
from hologram.config.settings import ApprovalSettings, ToolApproval


class Clients:
    """The clients of the turn: answer every request with ``answer`` and remember what they were asked."""

    def __init__(self, answer: bool, by: str = "cli") -> None:
        self.answer = answer
        self.by = by
        self.asked: list[ApprovalRequest] = []

    async def __call__(self, request: ApprovalRequest) -> tuple[bool, str, str]:
        self.asked.append(request)
        return self.answer, self.by, "yes" if self.answer else "no"


SHELL = {("shell", "shell_run"): Requirement("command")}


def decide(approver: Approver, command: str, *, plugin: str = "shell", tool: str = "shell_run") -> Any:
    requirement = approver.requirement(plugin, tool)
    assert requirement is not None
    return asyncio.run(
        approver.decide(
            requirement,
            session="s1",
            turn="t1",
            call_id="c1",
            tool=tool,
            plugin=plugin,
            arguments={"command": command},
        )
    )


def make(clients: Clients, **tools: ToolApproval) -> Approver:
    return Approver(ApprovalSettings(tools=tools), declared=lambda: SHELL, ask=clients, clock=lambda: 1000.0)


def test_ask_mode_asks_the_clients_and_records_who_answered() -> None:
    clients = Clients(True, by="web")
    decision = decide(make(clients), "rm -rf build")
    assert decision.record() == {"approved": True, "by": "web", "mode": "ask", "reason": "yes", "at": 1000.0}
    [request] = clients.asked
    assert (request.session, request.call_id, request.plugin, request.tool) == ("s1", "c1", "shell", "shell_run")
    assert request.summary == "shell_run: rm -rf build" and request.timeout_s == 300.0


def test_a_refusal_is_a_denied_decision_with_the_reason() -> None:
    decision = decide(make(Clients(False)), "rm -rf build")
    assert (decision.approved, decision.by, decision.reason) == (False, "cli", "no")


def test_ask_mode_runs_the_allow_list_without_asking() -> None:
    clients = Clients(False)
    approver = make(clients, shell_run=ToolApproval(mode="ask", allow=("ls", "git status")))
    assert decide(approver, "ls -a").record()["by"] == "policy"
    assert decide(approver, "git status -s").approved
    assert not decide(approver, "ls; id").approved  # not on the list: asked, and the clients refused
    assert [r.arguments["command"] for r in clients.asked] == ["ls; id"]


def test_allow_list_mode_never_asks() -> None:
    clients = Clients(True)
    approver = make(clients, shell_run=ToolApproval(mode="allow-list", allow=("echo", "git status")))
    assert decide(approver, "echo hi").approved
    for command in ("echo hi; touch x", "echo $(touch x)", "echo hi > x", "rm -rf x", "git statusx"):
        decision = decide(approver, command)
        assert not decision.approved and "not on the allow-list" in decision.reason, command
    assert clients.asked == []


def test_deny_and_allow_modes_decide_alone() -> None:
    clients = Clients(True)
    deny = decide(make(clients, shell_run=ToolApproval(mode="deny", allow=("echo",))), "echo hi")
    assert not deny.approved and deny.reason == "shell_run is disabled by policy (mode = deny)"
    assert decide(make(clients, shell_run=ToolApproval(mode="allow")), "rm -rf /tmp/x").approved
    assert clients.asked == []


def test_the_default_mode_applies_to_tools_without_a_table() -> None:
    clients = Clients(True)
    approver = Approver(ApprovalSettings(default="deny"), declared=lambda: SHELL, ask=clients)
    assert not decide(approver, "echo hi").approved and clients.asked == []


def test_what_the_lock_declares_cannot_be_dropped_by_the_running_plugin() -> None:
    """A plugin that re-registers its tool without ``needs_approval`` still gets asked about: the lock (the
    manifest the user built) decides. A runtime-registered tool may add the requirement, never remove it."""
    approver = make(Clients(True))
    assert approver.requirement("shell", "shell_run", registered=False) == Requirement("command")
    assert approver.requirement("notes", "notes_read", registered=False) is None
    assert approver.requirement("extra", "deploy", registered=True, subject="target") == Requirement("target")


def test_the_old_plugin_config_is_honoured_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    """``[plugins.shell] mode = "allow-list"`` from before approvals moved to the kernel keeps its meaning, so
    an upgrade does not silently start asking (or running) what the user had configured otherwise."""
    clients = Clients(True)
    legacy = {"shell": {"mode": "allow-list", "allow": ["ls"]}}
    approver = Approver(ApprovalSettings(), declared=lambda: SHELL, ask=clients, legacy=legacy)
    assert decide(approver, "ls").approved and not decide(approver, "rm x").approved
    assert clients.asked == []
    assert "[approvals.tools.shell_run]" in caplog.text


@pytest.mark.parametrize(
    ("command", "allowed"),
    [("git status", True), ("git status -s", True), ("git statusx", False), ("ls && rm x", False), ("", False)],
)
def test_the_allow_list_matches_word_prefixes_without_shell_syntax(command: str, allowed: bool) -> None:
    assert matches_allow_list(command, ["git status", "ls"]) is allowed
