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
    [approvals.tools."mcp_fs_*"]  # a key ending in * is a prefix: here every tool of the MCP server fs
    mode = "allow"               # (a tool's own table wins, then the longest pattern)

``ask`` asks the clients watching the turn (any one that can approve answers) unless the subject is on the
allow-list; ``allow-list`` runs what is on it and denies the rest without asking; ``allow`` runs everything;
``deny`` nothing. The kernel decides *before* ``tool/invoke``, after ``before_toolcall`` (whose hooks stay for
audit, deny and rewrite — the decision is about the arguments that will run), so a plugin only ever receives
calls that were approved. The decision (approved, by whom, when, under which mode, why) is stored with the
call's result in the session.

What a person answers is a decision (docs/protocol.md §9): ``approve_once``; ``approve_for_session`` (the same
tool and subject run without asking for the rest of that session: `hologram.agent.hub.TurnHub` keeps the grant);
``always`` (the subject joins the tool's allow-list in settings.toml, or a tool without a subject gets
``mode = "allow"``: `hologram.config.approvals_write`, and the policy is re-read so the next call is not asked);
``deny``; ``cancel`` (denied, and the turn is cancelled).

Whether a tool needs approval is read from the lock (the manifest the user built), not only from what the
running plugin registers: a plugin cannot drop the requirement by re-registering its tool.
"""

from __future__ import annotations

import logging
import shlex
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from hologram.base.errors import HologramError
from hologram.config.settings import SHELL_SYNTAX, ApprovalSettings, ToolApproval

log = logging.getLogger("hologram.agent")
SUMMARY_CHARS = 300


@dataclass(frozen=True, slots=True)
class Decision:
    approved: bool
    by: str  # "policy" (mode or allow-list), "kernel" (nobody could be asked, no answer), or the client
    mode: str
    reason: str = ""
    at: float = 0.0
    decision: str = ""  # what a person answered (approve_once …); "" when nobody was asked

    def record(self) -> dict[str, Any]:
        """What the session stores with the call's result."""
        stored = {"approved": self.approved, "by": self.by, "mode": self.mode, "reason": self.reason, "at": self.at}
        if self.decision:
            stored["decision"] = self.decision
        return stored


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
    subject: str | None = None  # the argument a grant for the session matches (None: the whole tool)


class Answer(NamedTuple):
    """The clients' answer to a request (the kernel's own, when nobody answered)."""

    approved: bool
    by: str
    reason: str
    decision: str = ""  # approve_once | approve_for_session | always | deny | cancel


# asks the clients of the turn; answers an `Answer` (or a plain (approved, by, reason))
AskClients = Callable[[ApprovalRequest], Awaitable[tuple[Any, ...]]]
# writes an "always" to the policy: (tool, subject) → the policy as re-read from the file
Remember = Callable[[str, str | None], ApprovalSettings]


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
        remember: Remember | None = None,
    ) -> None:
        self.settings = settings
        self.declared = declared
        self.ask = ask
        self.remember = remember
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
        explicit = rule_for(self.settings, tool)
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
            subject if isinstance(subject, str) else None,
        )
        answer = Answer(*await self.ask(request))
        reason = answer.reason
        if answer.decision == "always" and answer.approved:
            if requirement.subject and request.subject is None:  # not the whole tool for want of a subject
                reason = f"{reason} (not remembered: this call has no {requirement.subject} to make a rule of)"
            else:
                reason = self._always(tool, request.subject, reason)
        return Decision(answer.approved, answer.by, policy.mode, reason, self.clock(), answer.decision)

    def _always(self, tool: str, subject: str | None, reason: str) -> str:
        """Write the "always" to the policy and adopt the policy re-read; the call runs either way (the person
        said yes), and when the rule cannot be kept the reason says why."""
        if self.remember is None:
            return f"{reason} (not remembered: this kernel has no settings file to write)"
        try:
            self.settings = self.remember(tool, subject)
        except (HologramError, ValueError) as exc:
            why = exc.problems[0].message if isinstance(exc, HologramError) else str(exc)
            log.warning("approvals: %s: not remembered: %s", tool, why)
            return f"{reason} (not remembered: {why})"
        return reason


def rule_for(settings: ApprovalSettings, tool: str) -> ToolApproval | None:
    """The ``[approvals.tools.*]`` rule of ``tool``: its own table, else the longest pattern that matches — a
    key ending in ``*`` is a prefix (``"mcp_fs_*"``: every tool of the MCP server ``fs``) —, else None."""
    exact = settings.tools.get(tool)
    if exact is not None:
        return exact
    best: tuple[int, ToolApproval] | None = None
    for key, rule in settings.tools.items():
        if key.endswith("*") and tool.startswith(key[:-1]) and (best is None or len(key) > best[0]):
            best = (len(key), rule)
    return best[1] if best is not None else None


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
