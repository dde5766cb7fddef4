"""A tool policy: which tools a turn may be offered and may run, as a list of entries (issue 38, item 5).

Why a list of entries and not per-tool switches: a channel open to other people (a QQ group) must get "every tool
that only reads" by default, whatever plugins are installed later, so an entry can name a tool's *effect*
(``@read``: the manifest's ``[[tools]] effect = "read"``) as well as a tool (``files_read``) or a prefix
(``notes_*``). The same grammar is written in a manifest's ``[channel] tools`` (the channel's default) and in
settings.toml's ``[channels.NAME] tools`` (the user's word, which wins); both check it here, so a typo is an
error naming the line, never a policy that silently allows nothing or everything.

Here, below the manifest, settings and the agent, because all three read it (tests/guard/test_layers.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

# What a tool's call does, as its manifest declares it (`[[tools]] effect`). A tool that does not say is none
# of these: no `@…` entry offers it, only its name (or "*") does.
EFFECTS = ("read", "write", "execute", "send", "manage")
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}\*?$")
GRAMMAR = 'a tool name (files_read), a prefix ending in * (notes_*), "*" for every tool, or an effect: ' + ", ".join(
    f"@{e}" for e in EFFECTS
)


def entry_problem(entry: str) -> str | None:
    """Why ``entry`` is not a policy entry, or None."""
    if entry == "*" or _NAME.match(entry):
        return None
    if entry.startswith("@"):
        if entry[1:] in EFFECTS:
            return None
        return f"{entry!r} is not an effect; effects are {', '.join('@' + e for e in EFFECTS)}"
    return f"{entry!r} is not a policy entry: write {GRAMMAR}"


def check_entries(entries: Iterable[str]) -> list[str]:
    """The entries as given, or ValueError naming the first that is not one (for pydantic validators)."""
    out = list(entries)
    for entry in out:
        problem = entry_problem(entry)
        if problem is not None:
            raise ValueError(problem)
    return out


@dataclass(frozen=True, slots=True)
class ToolPolicy:
    """The tools a turn may use: ``entries`` (the grammar above), and where they were written (``source``,
    named in a refusal so a person knows what to edit)."""

    entries: tuple[str, ...]
    source: str

    def allows(self, tool: str, effect: str | None) -> bool:
        for entry in self.entries:
            if entry == "*" or entry == tool:
                return True
            if entry.startswith("@"):
                if effect is not None and entry[1:] == effect:
                    return True
            elif entry.endswith("*") and tool.startswith(entry[:-1]):
                return True
        return False

    def refusal(self, tool: str, channel: str) -> str:
        """What the model (and the person reading the session) is told of a call outside the policy."""
        allowed = ", ".join(self.entries) or "no tools"
        return f"{tool} is not allowed in turns from {channel}: its tool policy ({self.source}) allows {allowed}"
