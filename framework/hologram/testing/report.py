"""What a conformance run found, and how it reads as a test failure.

Each problem says what the plugin did (what the kit sent, what came back, what its log said) and how to fix
it, so a failing run explains itself to someone who has never read the protocol.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MAX_EXCERPT = 400


def excerpt(value: Any, limit: int = MAX_EXCERPT) -> str:
    """A value as compact JSON (or its text), cut to ``limit`` characters."""
    try:
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=repr)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass
class Finding:
    """One problem: which check, what is wrong (one line), what the plugin did, how to fix it."""

    check: str
    title: str
    did: list[tuple[str, str]] = field(default_factory=list)  # (label, text): "the kit sent", "its log", …
    fix: str = ""

    def render(self, number: int) -> str:
        lines = [f"{number}. {self.check}: {self.title}"]
        width = max((len(label) for label, _ in self.did), default=0)
        for label, text in self.did:
            parts = text.splitlines() or [""]
            lines.append(f"   {label + ':':<{width + 1}} {parts[0]}")
            lines.extend(f"   {'':<{width + 1}} {part}" for part in parts[1:])
        if self.fix:
            lines.append(f"   fix: {self.fix}")
        return "\n".join(lines)


@dataclass
class Report:
    """A whole run: the problems, the checks that passed (with what they saw), what could not be checked."""

    plugin: str
    manifest: Path
    findings: list[Finding] = field(default_factory=list)
    passed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.findings

    def problem(self, check: str, title: str, fix: str = "", **did: str) -> Finding:
        """Add a finding; ``did`` keywords become its labelled lines (underscores read as spaces)."""
        finding = Finding(check, title, [(k.replace("_", " "), v) for k, v in did.items()], fix)
        self.findings.append(finding)
        return finding

    def render(self) -> str:
        head = f"hologram conformance: plugin {self.plugin!r} ({self.manifest})"
        if self.ok:
            lines = [f"{head}: every check passed"]
        else:
            count = len(self.findings)
            lines = [f"{head}: {count} problem{'s' if count != 1 else ''}", ""]
            lines += [finding.render(i) + "\n" for i, finding in enumerate(self.findings, 1)]
        if self.passed:
            lines.append("passed: " + "; ".join(sorted(self.passed, key=_check_order)))
        if self.skipped:
            lines.append("not checked: " + "; ".join(self.skipped))
        lines += [f"note: {note}" for note in self.notes]
        return "\n".join(lines)


CHECKS = ("manifest", "handshake", "readiness", "tools", "stages", "stdout", "shutdown", "processes")


def _check_order(passed: str) -> int:
    """A passed check's place in the run's order (its text starts with the check's name)."""
    name = passed.split(" ", 1)[0]
    return CHECKS.index(name) if name in CHECKS else len(CHECKS)
