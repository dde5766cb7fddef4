"""`hologram service install|uninstall`: the agent as a systemd user service, running after login."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from hologram.base.errors import HologramError, Problem
from hologram.cli._common import add_data_option, add_lock_option, command_parser, require_kernel

UNIT_NAME = "hologram.service"

DETAILS = """\
Runs `hologram up` as a systemd user service: started at login (or at boot, with lingering), restarted
after a crash, stopped the way Ctrl-C stops it (the running turn finishes, then the plugins stop in order).
The unit is ~/.config/systemd/user/hologram.service ($XDG_CONFIG_HOME/systemd/user); `install` writes it and
prints the systemctl commands that enable it, `uninstall` removes it. Nothing is started or enabled for you.

examples:
  hologram service install              the agent of this directory (./hologram.lock, ./.hologram)
  hologram service install --user       the per-user agent (~/.local/share/hologram)
  hologram service install --print      show the unit, write nothing
  hologram service uninstall            after `systemctl --user disable --now hologram`
"""

INSTALL = """\
Writes the unit for the lock and data directory given (absolute in the unit; default ./hologram.lock and
./.hologram, or the per-user ones with --user), running this installation's `hologram`. A unit already there
is replaced if `hologram service install` wrote it, and left alone otherwise. API keys that settings.toml
names by api_key_env go in DATA/service.env (KEY=value lines, 0600): a service does not see your shell.
"""

UNINSTALL = """\
Removes the unit `hologram service install` wrote. Disable it first (`systemctl --user disable --now
hologram`): a unit still enabled is left in place, so no service runs on without its file.
"""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = command_parser(subparsers, "service", "run Hologram as a systemd user service", DETAILS)
    sub = parser.add_subparsers(dest="service_command", metavar="SUBCOMMAND", required=True)
    install = command_parser(sub, "install", "write the systemd user unit", INSTALL)
    add_lock_option(install)
    add_data_option(install)
    install.add_argument("--print", action="store_true", help="print the unit on stdout; write nothing")
    install.set_defaults(run=run_install)
    uninstall = command_parser(sub, "uninstall", "remove the systemd user unit", UNINSTALL)
    uninstall.set_defaults(run=run_uninstall)


def unit_dir() -> Path:
    """Where systemd's user manager reads units a person wrote: $XDG_CONFIG_HOME/systemd/user."""
    base = os.environ.get("XDG_CONFIG_HOME", "")
    root = Path(base) if os.path.isabs(base) else Path.home() / ".config"
    return root / "systemd" / "user"


def hologram_command() -> list[str]:
    """This installation's `hologram`, absolute: the script beside the interpreter (a pipx or uv tool venv's
    bin/, the checkout's .venv/bin/), else the interpreter running the package. The interpreter's path is kept
    as it is: resolving its symlink would leave the virtual environment."""
    interpreter = Path(sys.executable).absolute()
    script = interpreter.parent / "hologram"
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [str(interpreter), "-m", "hologram"]


def run_install(args: argparse.Namespace) -> int:
    from hologram._version import __version__
    from hologram.cli.service_unit import Unit

    require_kernel("service install")
    lock, data = Path(args.lock).absolute(), Path(args.data).absolute()
    for path in (lock, data):
        if "\n" in str(path) or "\r" in str(path):
            raise HologramError(Problem("a path with a line break cannot go into a unit file", file=repr(str(path))))
    command = [*hologram_command(), "up", "--lock", str(lock), "--data", str(data)]
    text = Unit(command=command, directory=lock.parent, data=data, version=__version__).render()
    if args.print:
        print(text, end="")
        return 0
    target = unit_dir() / UNIT_NAME
    replaced = _refuse_foreign(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = target.with_name(f".{UNIT_NAME}.{os.getpid()}")
    scratch.write_text(text, encoding="utf-8")
    scratch.chmod(0o644)
    os.replace(scratch, target)
    print(f"{target}: {'replaced' if replaced else 'written'}")
    print(f"  runs: {' '.join(command)}")
    print("enable it (now and at every login):")
    print("  systemctl --user daemon-reload")
    print("  systemctl --user enable --now hologram")
    print("keep it running while you are logged out, and start it at boot:")
    print(f"  loginctl enable-linger {_user()}")
    print(f"its output: journalctl --user -u hologram -f; the web UI's link: hologram open --data {data}")
    return 0


def run_uninstall(args: argparse.Namespace) -> int:
    target = unit_dir() / UNIT_NAME
    if not target.exists():
        print(f"{target}: not there; nothing to remove")
        return 0
    _refuse_foreign(target)
    wanted = target.parent / "default.target.wants" / UNIT_NAME
    if wanted.is_symlink() or wanted.exists():
        raise HologramError(
            Problem(
                "the service is still enabled: removing its unit would leave it running without its file",
                file=str(wanted),
                hint="run `systemctl --user disable --now hologram`, then `hologram service uninstall` again",
            )
        )
    target.unlink()
    print(f"{target}: removed")
    print("  systemctl --user daemon-reload")
    return 0


def _refuse_foreign(target: Path) -> bool:
    """Whether `target` is a unit `install` wrote (to replace or remove); raises for any other file there."""
    from hologram.cli.service_unit import MARK

    try:
        with target.open(encoding="utf-8", errors="replace") as unit:
            first = unit.readline()
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise HologramError(Problem(f"cannot read it: {exc.strerror}", file=str(target))) from None
    if not first.startswith(MARK):
        raise HologramError(
            Problem(
                "a unit of that name is there, and `hologram service install` did not write it: left as it is",
                file=str(target),
                hint="move it away (or edit it yourself), then run the command again",
            )
        )
    return True


def _user() -> str:
    return os.environ.get("USER") or os.environ.get("LOGNAME") or "$USER"
