"""Approvals in the kernel: which calls need a person's yes, the policy that answers first, and the record.

A tool says in its manifest that its calls need approval (``needs_approval = true``; ``approval_subject``
names the argument a person reads and the allow-list matches, e.g. shell's ``command``). The user's policy
lives in settings.toml:

    [approvals]
    default = "ask"              # for every tool that needs approval: ask | allow | deny
    timeout_s = 300              # an unanswered request is denied after this
    [approvals.tools.shell_run]
    mode = "allow-list"          # ask | allow-list | allow | deny
    allow = ["ls", "git status"] # subjects that start with one of these run without asking

``ask`` asks the clients watching the turn (any one that can approve answers) unless the subject is on the
allow-list; ``allow-list`` runs what is on it and denies the rest without asking; ``allow`` runs everything;
``deny`` nothing. The kernel decides *before* ``tool/invoke``, after ``before_toolcall`` (whose hooks stay for
audit, deny and rewrite — the decision is about the arguments that will run), so a plugin only ever receives
calls that were approved. The decision (approved, by whom, when, under which mode, why) is stored with the
call's result in the session.

Whether a tool needs approval is read from the lock (the manifest the user built), not only from what the
running plugin registers: a plugin cannot drop the requirement by re-registering its tool.
"""

from __future__ import annotations

import logging
import shlex
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from hologram.config.settings import ApprovalSettings, ToolApproval

log = logging.getLogger("hologram.agent")
# Characters that chain, redirect or substitute commands: `ls; rm -rf ~` must not ride on an "ls" rule.
SHELL_SYNTAX = frozenset(";&|<>$`(){}\n\r")
SUMMARY_CHARS = 300


@dataclass(frozen=True, slots=True)
class Decision:
    approved: bool
    by: str  # "policy" (mode or allow-list), "kernel" (nobody could be asked, no answer), or the client
    mode: str
    reason: str = ""
    at: float = 0.0

    def record(self) -> dict[str, Any]:
        """What the session stores with the call's result."""
        return {"approved": self.approved, "by": self.by, "mode": self.mode, "reason": self.reason, "at": self.at}


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    session: str
    turn: str
    call_id: str
    tool: str
    plugin: str
    arguments: dict[str, Any]
    summary: str
    timeout_s: float


# asks the clients of the turn; answers (approved, by, reason)
AskClients = Callable[[ApprovalRequest], Awaitable[tuple[bool, str, str]]]


def matches_allow_list(subject: str, allow: tuple[str, ...] | list[str]) -> bool:
    """True when ``subject`` starts with one of the allowed prefixes, word by word, and has no shell syntax.

    ``git status`` allows ``git status -s`` but not ``git statusx``, and nothing allows ``ls && rm x``.
    """
    if not allow or any(c in SHELL_SYNTAX for c in subject):
        return False
    try:
        words = shlex.split(subject)
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


@dataclass(frozen=True, slots=True)
class Requirement:
    """That a tool needs approval, and the argument its allow-list matches."""

    subject: str | None = None


class Approver:
    """The kernel's approval step. ``requirement(plugin, tool, ...)`` → the requirement or None;
    ``legacy`` maps a plugin to its pre-kernel-approvals ``[plugins.NAME] mode/allow`` (honoured, with a
    warning, until the user writes ``[approvals.tools.TOOL]``)."""

    def __init__(
        self,
        settings: ApprovalSettings,
        declared: Callable[[], Mapping[tuple[str, str], Requirement]],
        ask: AskClients,
        *,
        legacy: Mapping[str, Mapping[str, Any]] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self.declared = declared
        self.ask = ask
        self.legacy = legacy or {}
        self.clock = clock
        self._warned: set[str] = set()

    def requirement(
        self, plugin: str, tool: str, *, registered: bool = False, subject: str | None = None
    ) -> Requirement | None:
        """The lock's word first; what the running plugin registered (``registered``) may add the requirement,
        never drop it."""
        found = self.declared().get((plugin, tool))
        if found is not None:
            return found
        return Requirement(subject) if registered else None

    def policy(self, plugin: str, tool: str) -> ToolApproval:
        explicit = self.settings.tools.get(tool)
        if explicit is not None:
            return explicit
        old = self.legacy.get(plugin) or {}
        if "mode" in old or "allow" in old:
            if plugin not in self._warned:
                self._warned.add(plugin)
                log.warning(
                    "settings: [plugins.%s] mode/allow are read as [approvals.tools.%s]; move them there "
                    "(docs/settings.md, Approvals)",
                    plugin,
                    tool,
                )
            try:
                return ToolApproval.model_validate({k: old[k] for k in ("mode", "allow") if k in old})
            except ValueError:
                log.warning("settings: [plugins.%s] mode/allow are not a valid policy; asking instead", plugin)
        return ToolApproval(mode=self.settings.default)

    async def decide(
        self,
        requirement: Requirement,
        *,
        session: str,
        turn: str,
        call_id: str,
        tool: str,
        plugin: str,
        arguments: dict[str, Any],
    ) -> Decision:
        policy = self.policy(plugin, tool)
        subject = arguments.get(requirement.subject) if requirement.subject else None
        now = self.clock()
        if policy.mode == "deny":
            return Decision(False, "policy", policy.mode, f"{tool} is disabled by policy (mode = deny)", now)
        if policy.mode == "allow":
            return Decision(True, "policy", policy.mode, "mode = allow", now)
        if isinstance(subject, str) and matches_allow_list(subject, policy.allow):
            return Decision(True, "policy", policy.mode, "on the allow-list", now)
        if policy.mode == "allow-list":
            what = repr(subject) if isinstance(subject, str) else "this call"
            return Decision(
                False, "policy", policy.mode, f"{tool}: {what} is not on the allow-list and mode is allow-list", now
            )
        request = ApprovalRequest(
            session,
            turn,
            call_id,
            tool,
            plugin,
            arguments,
            summarise(tool, subject, arguments),
            self.settings.timeout_s,
        )
        approved, by, reason = await self.ask(request)
        return Decision(approved, by, policy.mode, reason, self.clock())


def summarise(tool: str, subject: Any, arguments: dict[str, Any]) -> str:
    """One line a person can judge: the subject (a command, a program's first lines), else the arguments."""
    if isinstance(subject, str) and subject.strip():
        text = subject.strip()
    else:
        from hologram.base import _fastjson as _json

        text = _json.dumps(arguments, default=str)
    if len(text) > SUMMARY_CHARS:
        text = text[: SUMMARY_CHARS - 1] + "…"
    return f"{tool}: {text}"
