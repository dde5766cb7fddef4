"""The approval policy for side-effecting tools (shell_run, code_run): ask / allow-list / allow / deny.

Two checkpoints enforce one decision. The plugin's `before_toolcall` hook decides — asking a person through
`kernel.sessions.approve` when needed — and records each approved call id with a digest of its arguments.
The tool then refuses any call that is neither allow-listed nor recorded. So a call that skipped the stage
(a kernel bug, a hook timeout, a direct `tool/invoke`) or whose arguments were changed after approval is
still refused: defence in depth, not trust in the pipeline.

Stage context this hook reads (before_toolcall, scope own_tools): `tool` (or `name`), `arguments`,
`call_id`, `session_id`; the same keys nested under `call` are accepted too. It returns `{"deny": reason}`
to refuse and None to let the call through unchanged.
"""

from __future__ import annotations

import json
import logging
import shlex
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from hologram.sdk import Plugin, ToolContext

log = logging.getLogger("hologram_plugins.policy")
MODES = ("ask", "allow-list", "allow", "deny")
# Characters that chain, redirect or substitute commands: `ls; rm -rf ~` must not ride on an "ls" rule.
SHELL_SYNTAX = frozenset(";&|<>$`(){}\n\r")
APPROVAL_TTL_S = 600.0
MAX_PENDING = 256


@dataclass
class Call:
    tool: str
    arguments: dict[str, Any]
    call_id: str
    session_id: str | None


def call_from_context(context: dict[str, Any]) -> Call | None:
    """The tool call a before_toolcall context describes, or None if it has none."""
    # docs/agent.md: the call is `tool_call {id, name, plugin, arguments}`; `call` and top-level keys are
    # accepted too, for hooks driven directly (tests, other kernels).
    nested = next((context[k] for k in ("tool_call", "call") if isinstance(context.get(k), dict)), None)
    source = nested if nested is not None else context
    assert isinstance(source, dict)
    tool = source.get("tool") or source.get("name")
    if not isinstance(tool, str):
        return None
    arguments = source.get("arguments")
    if isinstance(arguments, str):  # OpenAI-style: arguments as a JSON string
        try:
            arguments = json.loads(arguments)
        except ValueError:
            arguments = None
    call_id = source.get("call_id") or source.get("id") or context.get("call_id") or ""
    session = source.get("session_id") or context.get("session_id")
    return Call(tool, arguments if isinstance(arguments, dict) else {}, str(call_id), session)


def digest(arguments: dict[str, Any]) -> str:
    return json.dumps(arguments, sort_keys=True, ensure_ascii=False, default=str)


def matches_allow_list(command: str, allow: list[str]) -> bool:
    """True when `command` starts with one of the allowed prefixes, word by word, and has no shell syntax.

    `git status` allows `git status -s` but not `git statusx`, and nothing allows `ls && rm x`.
    """
    if not allow or any(c in SHELL_SYNTAX for c in command):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    for rule in allow:
        try:
            prefix = shlex.split(rule)
        except ValueError:
            continue
        if prefix and words[: len(prefix)] == prefix:
            return True
    return False


@dataclass
class Policy:
    """One plugin's policy. `allow` auto-approves matching shell commands in both `ask` and `allow-list`."""

    mode: str = "ask"
    allow: list[str] = field(default_factory=list)
    approval_timeout_s: float = 300.0

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Policy:
        mode = str(config.get("mode", "ask"))
        if mode not in MODES:
            raise ValueError(f"config.mode must be one of {', '.join(MODES)}; got {mode!r}")
        allow = config.get("allow", [])
        if not isinstance(allow, list) or not all(isinstance(a, str) for a in allow):
            raise ValueError("config.allow must be a list of command prefixes, e.g. ['ls', 'git status']")
        return cls(mode, list(allow), float(config.get("approval_timeout_s", 300.0)))

    def pre_approved(self, command: str | None) -> bool:
        """Runs without asking: mode `allow` (the user trusts every call), or an allow-listed shell command."""
        if self.mode == "allow":
            return True
        return self.mode != "deny" and command is not None and matches_allow_list(command, self.allow)


class Approvals:
    """Call ids the hook approved, each bound to the exact arguments approved; each is used once."""

    def __init__(self) -> None:
        self._granted: OrderedDict[str, tuple[str, float]] = OrderedDict()

    def grant(self, call_id: str, arguments: dict[str, Any]) -> None:
        self._granted[call_id] = (digest(arguments), time.monotonic())
        while len(self._granted) > MAX_PENDING:
            self._granted.popitem(last=False)

    def consume(self, call_id: str, arguments: dict[str, Any]) -> str | None:
        """None if this call was approved with these arguments; otherwise why it was not."""
        entry = self._granted.pop(call_id, None) if call_id else None
        if entry is None:
            return "it was not approved (no approval was recorded for this call)"
        approved, at = entry
        if time.monotonic() - at > APPROVAL_TTL_S:
            return "its approval expired"
        if approved != digest(arguments):
            return "its arguments differ from the ones that were approved"
        return None


async def ask_policy(
    owner: Plugin, policy: Policy, approvals: Approvals, call: Call, summary: str, command: str | None
) -> str | None:
    """The policy decision for one call; on approval the call id is recorded for the tool's own check."""
    if policy.mode == "deny":
        return f"{call.tool} is disabled by policy (mode = deny)"
    if policy.pre_approved(command):
        approvals.grant(call.call_id, call.arguments)
        return None
    if policy.mode == "allow-list":
        return f"{call.tool}: {command!r} is not on the allow-list (config.allow) and mode is allow-list"
    try:
        answer = await owner.facility("kernel.sessions", timeout=policy.approval_timeout_s).call(
            "approve",
            session_id=call.session_id,
            tool=call.tool,
            arguments=call.arguments,
            summary=summary,
        )
    except Exception as exc:  # no channel to ask through, timeout, kernel error: refusing is the safe answer
        log.warning("approval for %s failed: %s", call.call_id, exc)
        return f"{call.tool} needs approval, and asking for it failed: {exc}"
    if isinstance(answer, dict) and answer.get("approved") is True:
        approvals.grant(call.call_id, call.arguments)
        return None
    reason = answer.get("reason") if isinstance(answer, dict) else None
    return f"the user did not approve this {call.tool} call" + (f": {reason}" if reason else "")


def refusal(policy: Policy, approvals: Approvals, ctx: ToolContext, arguments: dict[str, Any]) -> str | None:
    """The tool-side check: refused unless allowed by the list or approved by the hook for exactly this call."""
    if policy.mode == "deny":
        return "disabled by policy (mode = deny)"
    why = approvals.consume(ctx.call_id, arguments)
    if why is None:
        return None
    command = arguments.get("command")
    if policy.pre_approved(command if isinstance(command, str) else None):
        return None
    return f"refused: {why}. Side-effecting calls run only after the before_toolcall approval"
