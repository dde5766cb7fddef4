"""`hologram plugin add|remove|list|restart|stop|start`: the project's plugins, and the running kernel's.

`add` and `remove` run here, in this process (hologram/install/transaction.py: install or resolve, show,
confirm, write the lock, undo everything on a refusal), then ask the running kernel, if one runs on the data
directory, to adopt the new lock (`admin/reload`): exactly the added plugin starts, the removed one stops,
the others keep running. The environment is the one this `hologram` runs from; a kernel started from
another one is refused (the plugin would land where the kernel cannot import it).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hologram.base.errors import HologramError, Problem
from hologram.cli._common import add_data_option, command_parser

# What the command runs is imported when it runs: building the parser (every command, `--version`) must stay
# cheap (hologram/cli/__init__.py).
if TYPE_CHECKING:
    from hologram.install.transaction import Pending, Project

DETAILS = """\
add PATH|PACKAGE[==VERSION]   install a plugin and add it to the lock; start it in the running kernel
remove NAME                   the reverse of add: stop it, take it out of the lock, uninstall what add installed
list                          every plugin: installed (a manifest is found), locked, running, added by `add`
restart|stop|start NAME       control one plugin of the running kernel

`hologram plugin ACTION --help` explains each one.

examples:
  hologram plugin add ./acme                 a plugin project, installed editable, started in the running kernel
  hologram plugin list                       installed vs locked vs running
  hologram plugin remove acme
  hologram plugin restart notes              (also re-enables automatic restarts after a crash loop)
"""

ADD_DETAILS = """\
PATH is written as a path (./acme, /src/acme): a Python project (pyproject.toml) is installed editable with
pip into the environment this `hologram` runs from; a directory of manifests (*.toml, no project) is added to
the lock's manifest directories. Anything else is a package for pip (acme, acme==1.2).

Before anything is written it shows what the plugin provides, requires and may do (tools that need approval,
the kernel facilities it asks for, running with your user's rights), the lock's diff and which plugins will
start or restart, and asks to confirm (--yes: do not ask; without a terminal --yes is required). Then it
writes the lock and, if a kernel runs on --data, starts the plugin there: the other plugins keep running.

A plugin whose requirements cannot be met (a facility nobody provides, two providers, a cycle) is refused
with the resolver's error, and nothing changes: what pip installed is uninstalled again, the lock and the
running graph are untouched. What add installed is recorded in DATA/plugins-added.json for `remove`.

examples:
  hologram plugin add ./acme                 a plugin project, installed editable
  hologram plugin add hologram-weather==0.2  a package from the index
  hologram plugin add ./my-manifests --yes   a directory of manifests, no question asked
"""

REMOVE_DETAILS = """\
The reverse of `hologram plugin add`: shows the lock's diff and asks, then writes the lock, stops the plugin
in the running kernel (the others keep running) and uninstalls exactly what add installed (a dependency that
was there before stays). A plugin other plugins still require is refused with the resolver's error, and
nothing changes. Only plugins brought by `add` are removed here (`hologram plugin list`, column ADDED).

examples:
  hologram plugin remove acme
  hologram plugin remove acme --yes
"""

LIST_DETAILS = """\
One row per plugin this project knows of: INSTALLED (its manifest is found: built in, an installed
distribution, a manifest directory of the lock), LOCKED (in the lock), RUNNING (its state and pid in the
kernel on --data), ADDED (how `hologram plugin add` brought it). Installed but not locked: starts after
`hologram build`. Locked but not installed: `hologram up` refuses the lock until it is rebuilt.

examples:
  hologram plugin list
  hologram plugin list --json | jq '.plugins[] | select(.locked and .state != "ready")'
"""


STARTED_DETAILS = """\
The plugin starts with its [plugins.NAME] table of settings.toml as the file is now (edit it, then {action}).
A settings.toml that `hologram up` would refuse refuses the {action} too, with its file:line errors, and
nothing is stopped. The command waits until the plugin is ready or failed and prints which (a value its
config model refuses is named by file, line and key); it exits 1 unless the plugin is ready.

"""
CONTROL_DETAILS = {action: STARTED_DETAILS.format(action=action) for action in ("restart", "start")}


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = command_parser(
        subparsers, "plugin", "add, remove, list, or restart/stop/start the project's plugins", DETAILS
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)

    add = _action(actions, "add", "install a plugin and start it in the running graph", ADD_DETAILS)
    add.add_argument("target", metavar="PATH|PACKAGE[==VERSION]")
    _common(add, confirm=True)
    add.set_defaults(run=run_add)

    remove = _action(actions, "remove", "stop a plugin added with `add`, unlock and uninstall it", REMOVE_DETAILS)
    remove.add_argument("name", metavar="NAME")
    _common(remove, confirm=True)
    remove.set_defaults(run=run_remove)

    listing = _action(actions, "list", "installed vs locked vs running", LIST_DETAILS)
    _common(listing, confirm=False)
    listing.add_argument("--json", action="store_true", help="machine-readable output")
    listing.set_defaults(run=run_list)

    for action, summary in (
        (
            "restart",
            "stop (if running) and start again, with settings.toml as it is now; re-enables automatic "
            "restarts after a crash loop",
        ),
        ("stop", "stop and keep stopped (no automatic restart)"),
        ("start", "start a stopped or failed plugin, with settings.toml as it is now"),
    ):
        control = _action(
            actions, action, summary, CONTROL_DETAILS.get(action, "") + f"examples:\n  hologram plugin {action} notes\n"
        )
        control.add_argument("name", metavar="NAME")
        add_data_option(control)
        control.set_defaults(run=run_control)


def _action(
    actions: argparse._SubParsersAction[argparse.ArgumentParser], name: str, summary: str, details: str
) -> argparse.ArgumentParser:
    return actions.add_parser(
        name, help=summary, description=f"{summary}\n\n{details}", formatter_class=argparse.RawDescriptionHelpFormatter
    )


def _common(parser: argparse.ArgumentParser, *, confirm: bool) -> None:
    add_data_option(parser)
    parser.add_argument(
        "--lock",
        type=Path,
        default=None,
        metavar="FILE",
        help="the lock file (default: the running kernel's, else ./hologram.lock)",
    )
    if confirm:
        parser.add_argument("--yes", "-y", action="store_true", help="do not ask to confirm")


CONTROL_TIMEOUT_S = 900.0  # a failure bound: the kernel answers once the plugin settled, within its start timeout


def run_control(args: argparse.Namespace) -> int:
    """Stop, or (re)start and say how the plugin ended up: ready, or why not (a refused setting's file:line)."""
    from hologram.kernel.control import call

    answer = call(args.data, f"plugin/{args.action}", {"name": args.name}, timeout=CONTROL_TIMEOUT_S)
    plugin = answer.get("plugin") if isinstance(answer, dict) else None
    if plugin is None:
        print(f"{args.name}: {args.action} done")
        return 0
    state, pid, reason = plugin["state"], plugin["pid"], plugin["reason"]
    detail = f" (pid {pid})" if pid else ""
    print(f"{args.name}: {state}{detail}" + (f": {reason}" if reason and state != "ready" else ""))
    return 0 if state == "ready" else 1


# -- where: the project, and the kernel running on it --------------------------------------------------------


def _kernel(data: Path) -> dict[str, Any] | None:
    """The running kernel's status, or None when none runs on `data`."""
    from hologram.kernel.control import call, socket_path

    if not socket_path(data).exists():
        return None
    try:
        status: dict[str, Any] = call(data, "status", timeout=10)
    except HologramError as exc:
        if "no kernel is running" in exc.render():
            return None
        raise
    return status


def _where(args: argparse.Namespace) -> tuple[Project, dict[str, Any] | None]:
    from hologram.base._defaults import DEFAULT_LOCK
    from hologram.install.transaction import Project

    data = Path(args.data).resolve()
    status = _kernel(data)
    if status is None:
        return Project(Path(args.lock or DEFAULT_LOCK).resolve(), data), None
    kernel = status["kernel"]
    prefix = kernel.get("prefix")
    if prefix and Path(prefix).resolve() != Path(sys.prefix).resolve():
        raise HologramError(
            Problem(
                f"the kernel running on {data} runs from the Python environment {prefix}, this hologram from "
                f"{sys.prefix}: a plugin installed here could not be imported there",
                hint=f"run the kernel's own hologram: {Path(kernel.get('python', 'python')).parent / 'hologram'}",
            )
        )
    lock = Path(kernel["lock"])
    if args.lock is not None and Path(args.lock).resolve() != lock:
        raise HologramError(
            Problem(
                f"the kernel running on {data} follows the lock {lock}, not {Path(args.lock).resolve()}",
                hint="leave --lock out (the kernel's lock is used), or stop that kernel first",
            )
        )
    return Project(lock, data), status


def _needs_terminal(args: argparse.Namespace, verb: str) -> None:
    if not args.yes and not sys.stdin.isatty():
        raise HologramError(
            Problem(
                f"{verb} asks to confirm, and there is no terminal to ask on",
                hint="pass --yes to confirm without a question (scripts, CI)",
            )
        )


def _confirm(question: str) -> bool:
    try:
        answer = input(f"{question} [y/N] ")
    except EOFError:
        return False
    return answer.strip().lower() in ("y", "yes")


# -- add and remove --------------------------------------------------------------------------------------------


def _show(pending: Pending, kernel_runs: bool) -> None:
    for warning in pending.warnings:
        print(warning, file=sys.stderr)
    for summary in pending.summaries:
        print()
        print("\n".join(summary.lines()))
    print()
    if pending.diff:
        print("\n".join(pending.diff))
    else:
        print(f"{pending.project.lock_path}: unchanged")
    changes = pending.changes
    where = "in the running kernel" if kernel_runs else "at the next `hologram up`"
    for label, names in (("starts", changes.added), ("stops", changes.removed), ("restarts", changes.restarted)):
        if names:
            print(f"{label} {where}: {', '.join(names)}")


def _adopt(project: Project, pending: Pending, status: dict[str, Any] | None) -> int:
    """Have the running kernel take the lock just written; say what it did."""
    from hologram.kernel.control import call

    if status is None:
        print(f"no kernel is running on {project.data_dir}: `hologram up` starts the graph with this lock")
        return 0
    bound = max((p.start.timeout_s for p in pending.new_lock.plugins if p.name in pending.changes.added), default=30)
    answer = call(project.data_dir, "admin/reload", {"expect": pending.content_hash}, timeout=2 * bound + 60)
    code = 0
    for plugin in answer["plugins"]:
        state, pid = plugin["state"], plugin["pid"]
        detail = f" (pid {pid})" if pid else ""
        reason = f": {plugin['reason']}" if plugin["reason"] and state != "ready" else ""
        print(f"{plugin['name']}: {state}{detail}{reason}")
        if state != "ready":
            code = 1
    if answer["removed"]:
        print(f"stopped: {', '.join(answer['removed'])}")
    if answer["restarted"]:
        print(f"restarted (their lock entries changed): {', '.join(answer['restarted'])}")
    return code


def run_add(args: argparse.Namespace) -> int:
    from hologram.install import record
    from hologram.install.target import parse_target
    from hologram.install.transaction import apply, prepare_add, rollback

    target = parse_target(args.target)
    _needs_terminal(args, "`hologram plugin add`")
    project, status = _where(args)
    with record.exclusive(project.data_dir):
        if target.kind != "path":
            print(f"installing {target.describe()} with {sys.executable} -m pip …", flush=True)
        pending = prepare_add(target, project)
        try:
            _show(pending, status is not None)
            confirmed = args.yes or _confirm(f"add {', '.join(pending.plugins)}?")
        except BaseException:  # Ctrl-C at the question: what pip installed goes again
            rollback(pending)
            raise
        if not confirmed:
            left = rollback(pending)
            for line in left:
                print(line, file=sys.stderr)
            undone = " (what pip installed is uninstalled again)" if pending.installed and not left else ""
            print(f"not added; nothing changed{undone}")
            return 1
        apply(pending)
        print(f"{project.lock_path}: written; {', '.join(pending.plugins)} added")
        return _adopt(project, pending, status)


def run_remove(args: argparse.Namespace) -> int:
    from hologram.install import record
    from hologram.install.transaction import apply, finish, prepare_remove

    _needs_terminal(args, "`hologram plugin remove`")
    project, status = _where(args)
    with record.exclusive(project.data_dir):
        pending = prepare_remove(args.name, project)
        _show(pending, status is not None)
        if not args.yes and not _confirm(f"remove {', '.join(pending.plugins)}?"):
            print("not removed; nothing changed")
            return 1
        apply(pending)
        print(f"{project.lock_path}: written; {', '.join(pending.plugins)} removed")
        code = _adopt(project, pending, status)
        for line in finish(pending):
            print(line, file=sys.stderr)
            code = 1
        names = [n for n, _ in pending.entry.distributions]
        if names:
            print(f"uninstalled: {', '.join(names)}")
        return code


# -- list ------------------------------------------------------------------------------------------------------


def run_list(args: argparse.Namespace) -> int:
    from hologram.cli._width import table
    from hologram.install.inventory import inventory
    from hologram.kernel.admin_install import with_running
    from hologram.kernel.control import call
    from hologram.plan.lock import read_lock

    project, status = _where(args)
    if status is not None:
        rows: list[dict[str, Any]] = call(project.data_dir, "admin/inventory")["plugins"]
    else:
        lock = read_lock(project.lock_path).file if project.lock_path.is_file() else None
        rows = with_running(inventory(lock, project.lock_path, project.data_dir), [])
    if args.json:
        print(json.dumps({"kernel": status is not None, "plugins": rows}, indent=2, sort_keys=True))
        return 0
    lines: list[list[str]] = [["PLUGIN", "VERSION", "SOURCE", "INSTALLED", "LOCKED", "RUNNING", "ADDED"]]
    for row in rows:
        if status is None:
            running = "no kernel"
        elif row["state"] is None:
            running = "-"
        else:
            running = row["state"] + (f" (pid {row['pid']})" if row["pid"] else "")
        added = row["added"]
        lines.append(
            [
                row["name"],
                row["version"] or "-",
                row["source"] or "-",
                "yes" if row["installed"] else "no",
                "yes" if row["locked"] else "no",
                running,
                f"{added['kind']} {added['target']}" if added else "-",
            ]
        )
    print("\n".join(table(lines)))
    return 0
