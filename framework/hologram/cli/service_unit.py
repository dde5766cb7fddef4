"""The systemd user unit of `hologram service install`: its text, from absolute paths, and nothing else.

The unit runs `hologram up` as `make up` would, with the lock and the data directory written absolute (the
service starts in no particular directory). How it stops is what `hologram up` does on SIGTERM: no new turn,
queued turns dropped, a running turn given 10 s to finish (then cancelled, and 10 s to close its session),
then the plugins stopped in reverse dependency order (shutdown request 3 s, SIGTERM 2 s, SIGKILL each). So
only the kernel gets the signal (KillMode=mixed) — plugins signalled by systemd at the same moment would die
under a turn that is still finishing — and the rest of the group is killed only if the kernel has not ended
everything by TimeoutStopSec.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

MARK = "# Written by `hologram service install`"
"""The unit's first line: `install` replaces and `uninstall` removes only a file that starts with it."""
STOP_TIMEOUT_S = 60  # the drain (10 s + 10 s) and the plugins' stop graces, with room; then SIGKILL
RESTART_S = 5
START_LIMIT = (5, 300)  # at most 5 starts in 300 s: a lock refused as stale must not restart for ever


@dataclass(frozen=True)
class Unit:
    """What the unit runs: `command` (the absolute `hologram` and `up`'s options) in `directory`."""

    command: Sequence[str]
    directory: Path
    data: Path
    version: str

    def render(self) -> str:
        program, *arguments = self.command
        exec_start = " ".join([quote_argument(program, executable=True), *map(quote_argument, arguments)])
        return f"""{MARK} (Hologram {self.version}); `hologram service uninstall` removes it.
[Unit]
Description=Hologram agent kernel ({escape_specifiers(str(self.data))})
StartLimitIntervalSec={START_LIMIT[1]}
StartLimitBurst={START_LIMIT[0]}

[Service]
Type=exec
WorkingDirectory={escape_specifiers(str(self.directory))}
ExecStart={exec_start}
# KEY=value lines for the API keys settings.toml names by api_key_env (keep the file 0600)
EnvironmentFile=-{escape_specifiers(str(self.data / "service.env"))}
Environment=PYTHONUNBUFFERED=1
# `hologram up` drains on SIGTERM, then stops its plugins in order: the signal to the kernel alone
KillMode=mixed
KillSignal=SIGTERM
TimeoutStopSec={STOP_TIMEOUT_S}
Restart=on-failure
RestartSec={RESTART_S}

[Install]
WantedBy=default.target
"""


def escape_specifiers(value: str) -> str:
    """A value as systemd reads it back: `%` starts a specifier (%h, %u…) unless doubled."""
    return value.replace("%", "%%")


def quote_argument(argument: str, *, executable: bool = False) -> str:
    """One word of ExecStart: `%` doubled (specifiers) and, in an argument, `$` (variable expansion, which
    the executable's own path does not get); quoted, with `\\` and `"` escaped, when it holds whitespace, a
    quote, a backslash or a `;` (systemd's command-line syntax)."""
    escaped = escape_specifiers(argument)
    if not executable:
        escaped = escaped.replace("$", "$$")
    if escaped and not any(c.isspace() or c in "\"'\\;" for c in escaped):
        return escaped
    return '"' + escaped.replace("\\", "\\\\").replace('"', '\\"') + '"'
