"""Writing an "always" answer into the ``[approvals]`` policy of ``<data>/settings.toml``, keeping everything
else the user wrote.

A person who answers ``always`` to a call of a tool wants it not asked again: its subject (a command, a target)
joins ``[approvals.tools.TOOL] allow`` — a prefix rule of the allow-list (`hologram.agent.approvals`), so
``git status`` allows ``git status -s`` too — and a tool without a subject gets ``mode = "allow"``. The policy
is then read back from the file (`remember_always` returns it), so what the kernel applies is what the file
says, not a copy that could differ.

The same care as `hologram.config.settings_write` (the providers): edited with `tomlkit` so comments, layout
and quoting stay; the result parsed back with tomli and compared with what was meant — every other key
unchanged, only this rule added — else nothing is written; written through `write_private` (0600, a temporary
file renamed over the old one: never half-written, a failed write leaves the file as it was). A file that is
not valid TOML, or whose ``[approvals]`` is not a valid policy, is a `HologramError` naming the file and the
fix, and the file is left alone. A subject with shell syntax (``;``, ``|``, ``$`` …) cannot be an allow-list
rule (it would never match: the allow-list refuses such commands) and is refused with a `ValueError`.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import tomli

from hologram.base.errors import HologramError, Problem
from hologram.config.settings import SHELL_SYNTAX, TEMPLATE, ApprovalSettings, read_text
from hologram.config.settings_write import write_private

FIX = "correct the file (docs/settings.md, Approvals), then answer again"


def _wanted(original: dict[str, Any], tool: str, subject: str | None) -> dict[str, Any]:
    """The whole settings as they should read after the rule is added."""
    wanted = copy.deepcopy(original)
    rule = wanted.setdefault("approvals", {}).setdefault("tools", {}).setdefault(tool, {})
    if subject is None:
        rule["mode"] = "allow"
    else:
        allow = list(rule.get("allow", []))
        if subject not in allow:
            allow.append(subject)
        rule["allow"] = allow
    return wanted


def _edited(text: str, tool: str, subject: str | None) -> str:
    """The text with the rule added in place (tomlkit: comments and layout kept)."""
    import tomlkit

    document = tomlkit.parse(text)
    approvals = document.get("approvals")
    if approvals is None:
        approvals = tomlkit.table()
        document.add("approvals", approvals)
    tools = approvals.get("tools")
    if tools is None:
        tools = tomlkit.table(is_super_table=True)
        approvals.add("tools", tools)
    rule = tools.get(tool)
    new = rule is None
    if rule is None:
        rule = tomlkit.table()
        tools.add(tool, rule)
    if subject is None:
        rule["mode"] = "allow"
    else:
        allow = rule.get("allow")
        if allow is None:
            rule["allow"] = [subject]
        elif subject not in allow:
            allow.append(subject)
    if new:
        rule.add(tomlkit.nl())  # a blank line before whatever header follows
    return tomlkit.dumps(document)


def _damaged(path: Path, message: str) -> HologramError:
    return HologramError(Problem(message, file=str(path), hint=FIX))


def remember_always(path: Path, tool: str, subject: str | None) -> ApprovalSettings:
    """Add the rule for ``tool`` (``subject`` None: the whole tool) to the file; the policy as re-read from it.

    Raises `HologramError` (the file is not TOML, its policy not valid, or the edit would change something
    else) and `ValueError` (a subject that cannot be a rule); in both cases the file is unchanged."""
    if subject is not None and (not subject.strip() or any(c in SHELL_SYNTAX for c in subject)):
        raise ValueError(f"{subject[:80]!r} has shell syntax or is empty: it cannot be an allow-list rule")
    text = read_text(path) if path.exists() else TEMPLATE
    try:
        original = tomli.loads(text)
    except tomli.TOMLDecodeError as exc:
        raise _damaged(path, f"not valid TOML: {exc}") from None
    try:  # the policy as it is first: an `[approvals]` of the wrong shape is the user's to correct
        ApprovalSettings.model_validate(original.get("approvals", {}))
        wanted = _wanted(original, tool, subject)
        policy = ApprovalSettings.model_validate(wanted.get("approvals", {}))
    except ValueError as exc:
        raise _damaged(path, f"[approvals] is not a valid policy: {exc}") from None
    from tomlkit.exceptions import TOMLKitError

    try:
        rendered = _edited(text, tool, subject)
        same = tomli.loads(rendered) == wanted
    except (TOMLKitError, tomli.TOMLDecodeError, AttributeError, TypeError) as exc:  # an odd layout (inline tables)
        raise _damaged(path, f"[approvals] could not be edited in place ({type(exc).__name__})") from None
    if not same:
        raise _damaged(path, "[approvals] could not be edited without changing something else")
    if "\r\n" in text and text.count("\r\n") == text.count("\n"):
        rendered = rendered.replace("\r\n", "\n").replace("\n", "\r\n")
    write_private(path, rendered)
    return policy


def rules(policy: ApprovalSettings) -> list[dict[str, Any]]:
    """The policy's per-tool rules, as the web settings page lists them."""
    return [{"tool": tool, "mode": rule.mode, "allow": list(rule.allow)} for tool, rule in sorted(policy.tools.items())]
