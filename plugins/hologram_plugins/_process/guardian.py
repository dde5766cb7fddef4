"""The guardian of one tool call's processes: it runs the command and, when the call ends, kills all it started.

    python -I -S -c BOOT --parent PID --report-fd FD [--max-processes N] [--poll-s S]
                         [--rlimit NAME=SOFT:HARD ...] -- ARGV...

(BOOT, in tree.py, imports this module so its bytecode is cached; run as a script it works the same.)

Why a process of its own. A process group or a session does not hold a call's processes: `setsid sleep 99 &`,
`Popen(start_new_session=True)` or a double fork leave it, and once their parent exits they are re-parented
to PID 1, where nothing can tell whose they were. The guardian sets PR_SET_CHILD_SUBREAPER, so every orphan
of the command's subtree is re-parented to *it* instead, whatever session or group it moved to: "the call's
processes" becomes exactly "the guardian's descendants", which it finds by walking /proc. It needs no
cgroup and no privilege (Linux ≥ 3.4).

When it kills: the command exited (whatever it left in the background goes), SIGTERM (the plugin stops the
call: its own timeout, or a cancel from the kernel), the plugin died (PR_SET_PDEATHSIG=SIGTERM; the plugin
dies with the kernel the same way), or the subtree grew past --max-processes (counted every --poll-s or
less often when the tree is big: RLIMIT_NPROC counts every process of the user, and root ignores it, so it
cannot bound one call). Killing is SIGKILL to every descendant, reap, repeat until the guardian has no
children left: a killed process cannot fork any more, so each round only finds what was born before it.
Then it writes a report on --report-fd and exits. The death signal is tied to the *thread* that forked
us: the plugin must start guardians from a thread that lives as long as it does (its event loop's).

Only the cheapest parts of the standard library are imported (no `signal`, `subprocess`, `ctypes` package
or `argparse`: each costs milliseconds, and a guardian starts for every call; docs/plugins.md has the
measured cost). The report, one item per line:

    exit CODE|-        the command's exit code (negative: killed by that signal), - if it did not exit
    reason exit|signal|limit|parent
    count N            with reason limit: the count that crossed the limit (counting stops there)
    killed PID NAME    a process that was alive and got SIGKILL (at most MAX_LISTED lines)
    more N             killed processes not listed
    survived PID NAME  a process that could not be killed in KILL_DEADLINE_S (e.g. setuid, stuck in D state)
"""

from __future__ import annotations

import _ctypes
import _signal  # type: ignore[import-not-found]  # `signal` without its enum import (~10 ms)
import os
import resource
import sys
import time

TYPE_CHECKING = False  # `typing` and `collections.abc` cost ~5 ms of start-up; type checkers read this as True
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

    Prctl = Callable[[int, int], int]

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
SIGCHLD, SIGTERM, SIGKILL = _signal.SIGCHLD, _signal.SIGTERM, _signal.SIGKILL
WAKE = {SIGCHLD, SIGTERM, _signal.SIGINT, _signal.SIGHUP}
# Python ignores these at start-up and `exec` keeps ignored signals ignored: the command gets them back, or
# `yes | head` would end in "Broken pipe" errors (SIGPIPE) and RLIMIT_FSIZE would not kill (SIGXFSZ).
RESTORE = (_signal.SIGPIPE, _signal.SIGXFSZ)
MAX_LISTED = 200  # keeps the report far below a pipe's 64 KiB buffer: the plugin reads it after we exit
KILL_DEADLINE_S = 10.0
NO_LIMIT_POLL_S = 3600.0


class Options:
    def __init__(self) -> None:
        self.parent = 0
        self.report_fd = -1
        self.max_processes = 0  # 0: no limit
        self.poll_s = 0.02
        self.rlimits: list[tuple[int, int, int]] = []
        self.argv: list[str] = []


def parse(args: list[str]) -> Options:
    options = Options()
    i = 0
    while i < len(args):
        flag = args[i]
        if flag == "--":
            options.argv = args[i + 1 :]
            break
        value = args[i + 1]
        if flag == "--parent":
            options.parent = int(value)
        elif flag == "--report-fd":
            options.report_fd = int(value)
        elif flag == "--max-processes":
            options.max_processes = int(value)
        elif flag == "--poll-s":
            options.poll_s = float(value)
        elif flag == "--rlimit":
            name, _, limits = value.partition("=")
            soft, _, hard = limits.partition(":")
            options.rlimits.append((getattr(resource, f"RLIMIT_{name}"), int(soft), int(hard or soft)))
        else:
            raise ValueError(f"unknown option {flag}")
        i += 2
    if not options.argv:
        raise ValueError("no command after --")
    return options


def load_prctl() -> Prctl:
    """libc's prctl. Built from `_ctypes` directly, as `ctypes.CDLL` would (importing the `ctypes` package
    costs ~8 ms, a fifth of the guardian's start); the package is the fallback if that ever stops working."""
    raw: Any = _ctypes  # private API (typeshed types it for ctypes' own use): checked by the fallback below
    try:

        class Int(raw._SimpleCData):  # type: ignore[misc]
            _type_ = "i"

        class Function(raw.CFuncPtr):  # type: ignore[misc]
            _flags_ = raw.FUNCFLAG_CDECL | raw.FUNCFLAG_USE_ERRNO
            _restype_ = Int

        class Libc:
            _handle = raw.dlopen(None, raw.RTLD_LOCAL)

        function: Prctl = Function(("prctl", Libc()))
    except Exception:  # pragma: no cover - a Python whose _ctypes differs
        import ctypes

        function = ctypes.CDLL(None, use_errno=True).prctl
    return function


# -- the process tree ------------------------------------------------------------------------------------


def _read(path: str) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return os.read(fd, 4096)
    finally:
        os.close(fd)


def descendants(root: int) -> dict[int, tuple[str, str]]:
    """Every process whose parent chain reaches `root`: pid → (name, state), from one pass over /proc.

    The whole of /proc, not `/proc/PID/task/TID/children`: that file is documented as unreliable while
    the tree changes, and this is the pass that decides what is killed. Thread ids do not appear in
    /proc's listing, and a process's ppid is its parent's process id even when a thread forked it."""
    parent_of: dict[int, int] = {}
    info: dict[int, tuple[str, str]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = _read(f"/proc/{name}/stat")
        except OSError:  # it exited meanwhile
            continue
        close = stat.rfind(b")")
        fields = stat[close + 2 :].split(b" ", 2)
        if len(fields) < 2:
            continue
        pid = int(name)
        parent_of[pid] = int(fields[1])
        comm = stat[stat.find(b"(") + 1 : close].decode("utf-8", "replace")
        info[pid] = ("".join(c if c.isprintable() and not c.isspace() else "?" for c in comm), fields[0].decode())
    children: dict[int, list[int]] = {}
    for pid, ppid in parent_of.items():
        children.setdefault(ppid, []).append(pid)
    found: dict[int, tuple[str, str]] = {}
    stack = [root]
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in found:
                found[child] = info[child]
                stack.append(child)
    return found


def _children(pid: int) -> Iterable[int]:
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return ()
    out: list[int] = []
    for tid in tids:
        try:
            out.extend(int(word) for word in _read(f"/proc/{pid}/task/{tid}/children").split())
        except OSError:
            continue
    return out


def count_above(root: int, limit: int, use_children_files: bool) -> int:
    """How many descendants `root` has, counting stops past `limit` (the check runs every poll: it must
    cost what the subtree costs, not what the machine's whole process table does)."""
    if not use_children_files:
        return len(descendants(root))
    count, stack = 0, [root]
    while stack:
        for child in _children(stack.pop()):
            count += 1
            if count > limit:
                return count
            stack.append(child)
    return count


def reap(command: int) -> tuple[bool, int | None]:
    """Collect every child that ended. Returns (children remain, the command's wait status if it ended)."""
    status = None
    while True:
        try:
            pid, code = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return False, status
        if pid == 0:
            return True, status
        if pid == command:
            status = code


def kill_tree(me: int) -> tuple[dict[int, str], dict[int, str]]:
    """SIGKILL every descendant, reap, repeat until none is left. Returns (killed, survivors)."""
    killed: dict[int, str] = {}
    deadline = time.monotonic() + KILL_DEADLINE_S
    while True:
        found = descendants(me)
        for pid, (name, state) in found.items():
            if state in ("Z", "X"):  # already dead, waiting to be reaped by its parent (or by us)
                continue
            try:
                os.kill(pid, SIGKILL)
            except (ProcessLookupError, PermissionError):
                continue
            killed.setdefault(pid, name)
        remain, _ = reap(-1)
        if not remain:
            return killed, {}
        if time.monotonic() > deadline:
            alive = {pid: name for pid, (name, state) in descendants(me).items() if state not in ("Z", "X")}
            return {pid: name for pid, name in killed.items() if pid not in alive}, alive
        _signal.sigtimedwait([SIGCHLD], 0.002)


# -- running the command ---------------------------------------------------------------------------------


def spawn(options: Options, prctl: Prctl) -> int:
    """Fork and exec the command: it dies with us (PDEATHSIG), gets its resource limits, signals as a
    fresh process would have them, and not our report fd (it is close-on-exec)."""
    guardian = os.getpid()
    pid = os.fork()
    if pid:
        return pid
    try:
        prctl(PR_SET_PDEATHSIG, SIGKILL)
        if os.getppid() != guardian:
            os._exit(1)
        for number in RESTORE:
            _signal.signal(number, _signal.SIG_DFL)
        _signal.pthread_sigmask(_signal.SIG_SETMASK, [])
        for which, soft, hard in options.rlimits:
            resource.setrlimit(which, (soft, hard))
        execvp(options.argv)
    except BaseException as exc:
        message = f"{options.argv[0]}: cannot run it: {exc}\n"
        os.write(2, message.encode("utf-8", "replace"))
    os._exit(127)


def execvp(argv: list[str]) -> None:
    """`os.execvp` without its `warnings` import (~3 ms, in the child: on every call's critical path)."""
    if "/" in argv[0]:
        os.execv(argv[0], argv)
    denied: OSError | None = None
    for directory in os.environ.get("PATH", os.defpath).split(os.pathsep):
        try:
            os.execv(os.path.join(directory or ".", argv[0]), argv)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except PermissionError as exc:  # as execvp: remember it, try the rest of PATH
            denied = exc
    raise denied or FileNotFoundError(2, "command not found", argv[0])


def watch(command: int, options: Options, use_children_files: bool) -> tuple[str, int | None, int]:
    """Wait for the command to exit, a stop signal, or the process limit. Returns (reason, status, count)."""
    me = os.getpid()
    limit = options.max_processes
    poll = options.poll_s if limit else NO_LIMIT_POLL_S
    while True:
        info = _signal.sigtimedwait(WAKE, poll)
        if info is None:
            started = time.monotonic()
            if limit and (count := count_above(me, limit, use_children_files)) > limit:
                return "limit", None, count
            # At most ~5% of a core on counting: a big tree (make -j) is counted less often than a small one.
            poll = max(options.poll_s, 20 * (time.monotonic() - started))
        elif info.si_signo == SIGCHLD:
            remain, status = reap(command)
            if status is not None:
                return ("exit" if remain else "done"), status, 0
        else:
            return "signal", None, 0


def report_lines(
    reason: str, status: int | None, count: int, killed: dict[int, str], survivors: dict[int, str]
) -> list[str]:
    lines = ["exit -" if status is None else f"exit {os.waitstatus_to_exitcode(status)}", f"reason {reason}"]
    if reason == "limit":
        lines.append(f"count {count}")
    listed = sorted(killed.items())
    lines += [f"killed {pid} {name}" for pid, name in listed[:MAX_LISTED]]
    if len(listed) > MAX_LISTED:
        lines.append(f"more {len(listed) - MAX_LISTED}")
    lines += [f"survived {pid} {name}" for pid, name in sorted(survivors.items())[:MAX_LISTED]]
    return lines


def write_report(fd: int, lines: list[str]) -> None:
    data = ("\n".join(lines) + "\n").encode("utf-8", "replace")
    try:
        while data:
            data = data[os.write(fd, data) :]
    except OSError:  # the plugin is gone (EPIPE: Python ignores SIGPIPE): nobody to tell
        pass


def main(args: list[str]) -> int:
    _signal.pthread_sigmask(_signal.SIG_BLOCK, WAKE)  # from now on they wait for sigtimedwait
    try:
        options = parse(args)
    except (ValueError, IndexError, AttributeError) as exc:
        os.write(2, f"guardian: {exc}\n".encode())
        return 2
    if options.report_fd >= 0:  # -1: no report (a long-lived server's guardian: the mcp plugin)
        os.set_inheritable(options.report_fd, False)
    prctl = load_prctl()
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    prctl(PR_SET_PDEATHSIG, SIGTERM)
    if os.getppid() != options.parent:  # the plugin died before the death signal was armed
        write_report(options.report_fd, report_lines("parent", None, 0, {}, {}))
        return 0
    me = os.getpid()
    use_children_files = os.path.exists(f"/proc/{me}/task/{me}/children")
    command = spawn(options, prctl)
    reason, status, count = watch(command, options, use_children_files)
    killed: dict[int, str] = {}
    survivors: dict[int, str] = {}
    if reason == "done":  # the command ended and we have no child left: as a subreaper, no descendant either
        reason = "exit"  # (the common case, and no /proc scan)
    else:
        if reason == "signal" and os.getppid() != options.parent:
            reason = "parent"
        killed, survivors = kill_tree(me)
    write_report(options.report_fd, report_lines(reason, status, count, killed, survivors))
    return 0


def run(args: list[str]) -> None:
    """The entry point (tree.BOOT). A bug here must not leave the tree behind: anything unexpected still
    ends in a kill (the plugin then reads no report and says so). `os._exit` skips the interpreter's
    shutdown, a few ms per call."""
    try:
        code = main(args)
    except BaseException as exc:
        os.write(2, f"guardian: {type(exc).__name__}: {exc}\n".encode("utf-8", "replace"))
        try:  # noqa: SIM105 - contextlib would cost ~5 ms of start-up
            kill_tree(os.getpid())
        except BaseException:
            pass
        code = 70
    os._exit(code)


if __name__ == "__main__":
    run(sys.argv[1:])
