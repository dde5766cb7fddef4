"""An "always" answer written to the policy (hologram/config/approvals_write.py), and how the kernel's approval
step adopts it (`Approver._always`); `hologram chat`'s answers read as decisions.

Mutation checks (done): `remember_always` writing without comparing the parse-back, raising pydantic's own
error for an invalid policy instead of naming the file, and `_always` not adopting the re-read policy (the
next call is asked) each turned a test here red.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import tomli

from hologram.agent.approvals import Answer, ApprovalRequest, Approver, Requirement
from hologram.base.errors import HologramError
from hologram.cli.ask_cmd import decision_of
from hologram.config.approvals_write import remember_always
from hologram.config.settings import ApprovalSettings

USER = """\
# my settings, by hand
[agent]
max_steps = 4   # keep this comment

[approvals]
timeout_s = 30

[approvals.tools.shell_run]
mode = "ask"
allow = ["ls"]  # the safe ones

[[providers]]
name = "p"
kind = "deepseek"
"""


def test_a_subject_joins_the_allow_list_and_everything_else_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "settings.toml"
    path.write_text(USER)
    policy = remember_always(path, "shell_run", "git status")
    text = path.read_text()
    assert policy.tools["shell_run"].allow == ("ls", "git status") and policy.timeout_s == 30
    assert "# keep this comment" in text and "# the safe ones" in text and text.startswith("# my settings")
    before, after = tomli.loads(USER), tomli.loads(text)
    after["approvals"]["tools"]["shell_run"]["allow"] = ["ls"]
    assert after == before, "only the rule changed"
    assert path.stat().st_mode & 0o777 == 0o600
    remember_always(path, "shell_run", "git status")  # twice: not listed twice
    assert tomli.loads(path.read_text())["approvals"]["tools"]["shell_run"]["allow"] == ["ls", "git status"]


def test_a_tool_without_subject_is_allowed_and_a_missing_table_created_crlf_kept(tmp_path: Path) -> None:
    path = tmp_path / "settings.toml"
    path.write_bytes(b'[[providers]]\r\nname = "p"\r\n')
    policy = remember_always(path, "deploy", None)
    assert policy.tools["deploy"].mode == "allow"
    raw = path.read_bytes()
    assert b"\r\n" in raw and raw.count(b"\n") == raw.count(b"\r\n"), "CRLF stays CRLF"
    assert tomli.loads(raw.decode())["providers"] == [{"name": "p"}]


@pytest.mark.parametrize(
    "text",
    [
        "[approvals\nbroken",
        'approvals = { tools = { shell_run = { allow = "ls" } } }\n',
        "[approvals]\nmode = 1\n",
        "[approvals]\ntools = 5\n",
    ],
)
def test_a_file_that_cannot_be_edited_safely_is_an_error_naming_it_and_left_alone(tmp_path: Path, text: str) -> None:
    path = tmp_path / "settings.toml"
    path.write_text(text)
    with pytest.raises(HologramError) as caught:
        remember_always(path, "shell_run", "ls -la")
    assert str(path) in caught.value.render()
    assert path.read_text() == text, "the file is unchanged"


def test_an_edit_that_would_change_anything_else_is_not_written(tmp_path: Path, monkeypatch: Any) -> None:
    """The parse-back guard: were tomlkit to change another key, nothing is written."""
    import hologram.config.approvals_write as write

    path = tmp_path / "settings.toml"
    path.write_text(USER)
    edited = write._edited
    monkeypatch.setattr(write, "_edited", lambda *a: edited(*a).replace("max_steps = 4", "max_steps = 5"))
    with pytest.raises(HologramError, match="without changing something else"):
        remember_always(path, "shell_run", "git status")
    assert path.read_text() == USER


def test_a_subject_with_shell_syntax_cannot_be_a_rule(tmp_path: Path) -> None:
    path = tmp_path / "settings.toml"
    path.write_text(USER)
    with pytest.raises(ValueError, match="shell syntax"):
        remember_always(path, "shell_run", "ls; rm -rf ~")
    assert path.read_text() == USER


def test_the_approver_adopts_the_policy_an_always_wrote(tmp_path: Path) -> None:
    """After "always", the next call with the same subject is decided by the policy, without asking."""
    path = tmp_path / "settings.toml"
    path.write_text(USER)
    asked: list[ApprovalRequest] = []

    async def clients(request: ApprovalRequest) -> Answer:
        asked.append(request)
        return Answer(True, "web", "ok", "always")

    approver = Approver(
        ApprovalSettings.model_validate(tomli.loads(USER)["approvals"]),
        declared=lambda: {("shell", "shell_run"): Requirement("command")},
        ask=clients,
        remember=lambda tool, subject: remember_always(path, tool, subject),
    )

    def decide() -> Any:
        return asyncio.run(
            approver.decide(
                Requirement("command"), session="s", turn="t", call_id="c", tool="shell_run", plugin="shell",
                arguments={"command": "make test"},
            )
        )  # fmt: skip

    first, second = decide(), decide()
    assert (first.approved, first.decision, first.by) == (True, "always", "web")
    assert (second.approved, second.by, second.reason) == (True, "policy", "on the allow-list")
    assert len(asked) == 1


def test_the_chat_prompts_answers_are_decisions() -> None:
    assert [decision_of(a)[0] for a in ("y", "YES", " s ", "a", "n", "", "maybe")] == [
        "approve_once", "approve_once", "approve_for_session", "always", "deny", "deny", "deny",
    ]  # fmt: skip
