"""`hologram open`: the web UI's ready link (URL + token) of the kernel running with a data directory.

The http plugin writes ``<data>/http.json`` (where it listens, no secret) once it listens and removes it at
stop; the token is ``<data>/http-token`` (0600). Reading both here, rather than asking the kernel, works
for whoever can read the data directory — the same people the token file's mode lets in — and needs no
running control socket to say what is wrong. A browser is opened only where one can show a window: on a
server over SSH `webbrowser` would start a text browser inside the terminal, so there the link is printed
with how to forward the port.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from hologram.base.errors import HologramError, Problem
from hologram.cli._common import add_data_option, command_parser

OPEN_DETAILS = """\
Prints the link to the web UI of the kernel running with this data directory (`hologram up`) — its URL with
the access token, which the page turns into a cookie — and opens it in a browser when this machine has one.

examples:
  hologram open
  hologram open --print                        only print the link (e.g. to copy it to another machine)
  hologram open --data /srv/hologram/.hologram
"""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = command_parser(subparsers, "open", "open the running kernel's web UI in a browser", OPEN_DETAILS)
    add_data_option(parser)
    parser.add_argument("--print", action="store_true", dest="print_only", help="print the link, open nothing")
    parser.set_defaults(run=run_open)


def ready_link(data_dir: Path) -> tuple[str, dict[str, Any]]:
    """(the link with the token, http.json). Raises `HologramError` saying what to do when nothing serves.
    The link is `hologram.cli._web.web_link`'s, the one `hologram up` prints; this adds why there is none."""
    from hologram.cli._web import TOKEN_FILE, web_link

    info = _read_info(data_dir)
    token_path = data_dir / TOKEN_FILE
    try:
        token = token_path.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        raise HologramError(
            Problem("no access token yet", file=str(token_path), hint="the http plugin makes it at its first start")
        ) from None
    except OSError as exc:
        raise HologramError(Problem(f"cannot read the access token: {exc.strerror}", file=str(token_path))) from None
    except UnicodeDecodeError:
        raise HologramError(
            Problem(
                "the access token file is damaged (not ASCII)",
                file=str(token_path),
                hint="restart the kernel: the http plugin sets it aside and makes a new one (or delete it first)",
            )
        ) from None
    link = web_link(data_dir)
    if not token or link is None:  # an empty token file, or the plugin stopped just now
        raise HologramError(Problem("no usable web link yet", file=str(token_path), hint="restart the kernel"))
    return link, info


def _read_info(data_dir: Path) -> dict[str, Any]:
    from hologram.cli._web import INFO_FILE

    path = data_dir / INFO_FILE
    if not data_dir.is_dir():
        raise HologramError(
            Problem(
                f"no data directory {data_dir}",
                hint="run `hologram up` here first, or pass --data DIR of the kernel to open",
            )
        )
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise _not_serving(data_dir) from None
    except (OSError, ValueError) as exc:
        raise HologramError(Problem(f"unreadable ({exc}); restart the kernel to rewrite it", file=str(path))) from None
    if not isinstance(info, dict) or not isinstance(info.get("url"), str):
        raise HologramError(Problem("has no url; restart the kernel to rewrite it", file=str(path)))
    pid = info.get("pid")
    if isinstance(pid, int) and not _alive(pid):
        raise HologramError(
            Problem(
                f"is left from an http plugin that is gone (pid {pid})",
                file=str(path),
                hint=f"start the kernel: hologram up --data {data_dir}",
            )
        )
    return info


def _not_serving(data_dir: Path) -> HologramError:
    from hologram.kernel.control import socket_path

    if socket_path(data_dir).exists():
        return HologramError(
            Problem(
                f"the kernel of {data_dir} runs, but its http plugin is not serving",
                hint="`hologram status` shows the http plugin's state and why; is it in the graph "
                "(manifests/http.toml, then `hologram build`)?",
            )
        )
    return HologramError(
        Problem(f"no kernel runs with data directory {data_dir}", hint=f"start one: hologram up --data {data_dir}")
    )


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: it exists
        return True
    return True


def can_show_a_browser() -> bool:
    """Whether `webbrowser` would open a window (not a text browser inside this terminal)."""
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def run_open(args: argparse.Namespace) -> int:
    link, info = ready_link(args.data)
    if args.print_only:
        print(link)
        return 0
    print(f"web UI: {link}")
    if can_show_a_browser():
        import webbrowser

        if webbrowser.open(link, new=2):
            print("opened in your browser", file=sys.stderr)
            return 0
    port = info.get("port", "PORT")
    print(
        "no browser to open here: paste the link into a browser on this machine; from another machine, "
        f"forward the port first (ssh -L {port}:127.0.0.1:{port} THIS-HOST) and open the same link there",
        file=sys.stderr,
    )
    return 0
