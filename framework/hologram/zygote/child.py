"""Inside a child forked by the zygote: become what `python -m MODULE` would have been, then run MODULE.

A forked child starts as a copy of the zygote: the zygote's session, fds, signal handlers, environment, cwd,
sys.path and argv. Everything a plugin can observe is rebuilt here from the kernel's request, in an order
that matters:

1. `setsid()` and the death signal first, so the child is its own process group (the kernel signals the group)
   and dies with the zygote, which dies with the kernel: `kill -9` of the kernel leaves nothing behind.
2. fds: the kernel's pipe ends and inherited fds go to the numbers the kernel put in the `initialize` params.
   They are first moved above every number involved, because a received fd may sit exactly on another
   one's target; then every other fd (the zygote's socket, its wakeup pipe …) is closed.
3. environment, cwd, sys.path, bytecode settings and argv as a fresh interpreter would have set them.

Interpreter start-up settings that cannot be changed after start (PYTHONHASHSEED, -X options, locale …) are
not applied here: the kernel only sends a request when they equal the zygote's own (`zygote.startup_key`).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import fcntl
import os
import runpy
import signal
import sys
import threading
import time
import traceback
from collections.abc import Mapping, Sequence
from typing import Any

_PR_SET_PDEATHSIG = 1
_PR_SET_NAME = 15
ENV_KERNEL_PID = "HOLOGRAM_KERNEL_PID"  # the kernel's pid, for a plugin to check it is still its parent

_prctl: Any
try:  # resolved in the zygote, before any fork
    _prctl = ctypes.CDLL(None, use_errno=True).prctl
except (OSError, AttributeError):  # pragma: no cover - not Linux
    _prctl = None


def die_with_parent(parent_pid: int) -> None:
    """PR_SET_PDEATHSIG, then leave if the parent already died (the window between fork and prctl).
    The one implementation: the zygote's children, the kernel's `preexec_fn` fallback and SDK plugins
    (`hologram.sdk._runtime`) call it; this module imports only the standard library, so all can."""
    if _prctl is not None:
        _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent_pid:
        os._exit(1)


def name_process(module: str) -> None:
    """`ps`/`top` show the comm name; /proc/PID/cmdline stays the zygote's (`python -m hologram.zygote.main`)."""
    if _prctl is not None:
        _prctl(_PR_SET_NAME, ctypes.c_char_p(module.rsplit(".", 1)[-1].encode()[:15]))


def install_fds(received: Sequence[int], targets: Sequence[int]) -> None:
    """Put `received[i]` at fd number `targets[i]` (inheritable, as subprocess's pass_fds) and close the rest."""
    base = max([*received, *targets, 2]) + 1
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, base) for fd in received]
    for fd, target in zip(high, targets, strict=True):
        os.dup2(fd, target, inheritable=True)
    keep = set(targets)
    for name in os.listdir("/proc/self/fd"):  # the listing's own fd is in it, already closed: EBADF
        fd = int(name)
        if fd not in keep:
            with contextlib.suppress(OSError):
                os.close(fd)


def set_environ(env: Mapping[str, str]) -> None:
    """Make os.environ (and the C environment) exactly `env`, touching only what differs.

    Not ``clear()`` + ``update()``: that freed and rebuilt every entry the zygote had, ~30 of them nearly always
    equal, and each freed object is a write to a page shared with the zygote (0.34 against 0.21 MB copied in a
    fork-emulating probe). Keys the child keeps stay in the zygote's order, new ones follow."""
    for key in [k for k in os.environ if k not in env]:
        del os.environ[key]
    for key, value in env.items():
        if os.environ.get(key) != value:
            os.environ[key] = value


def python_path(env: Mapping[str, str], cwd: str, zygote_path: Sequence[str], zygote_pythonpath: str) -> list[str]:
    """sys.path of `python -m` started in `cwd` with `env`: [cwd] + PYTHONPATH + the interpreter's own entries.

    The interpreter's own entries (stdlib, site-packages, .pth additions) are the zygote's sys.path without
    its first entry and without what came from the zygote's PYTHONPATH.
    """

    def entries(value: str) -> list[str]:
        return [os.path.abspath(p) for p in value.split(os.pathsep) if p]

    dropped = set(entries(zygote_pythonpath))
    safe_path = bool(getattr(sys.flags, "safe_path", False))
    head = [] if safe_path else [cwd]
    rest = list(zygote_path) if safe_path else list(zygote_path[1:])
    path: list[str] = []
    for entry in [*head, *entries(env.get("PYTHONPATH", "")), *(p for p in rest if p not in dropped)]:
        if entry not in path:
            path.append(entry)
    return path


def _exit_code(exc: SystemExit) -> int:
    """What the interpreter does with an uncaught SystemExit (Python/pythonrun.c handle_system_exit)."""
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    with contextlib.suppress(Exception):
        print(code, file=sys.stderr)
    return 1


def _finalize() -> None:
    """The parts of interpreter shutdown a plugin can notice: non-daemon threads joined, atexit run, flushed."""
    with contextlib.suppress(Exception):
        threading._shutdown()  # type: ignore[attr-defined]
    with contextlib.suppress(Exception):
        atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()


def run_module(module: str) -> int:
    """Run `module` as `__main__` like `python -m`; returns the process exit code."""
    sys.argv = [module]
    sys.orig_argv = [sys.executable, "-m", module]
    interrupted = False
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as exc:
        code = _exit_code(exc)
    except KeyboardInterrupt:
        interrupted = True
        code = 1
    except BaseException:
        traceback.print_exc()
        code = 1
    _finalize()
    if interrupted:  # like the interpreter: die of SIGINT, so the parent sees -2
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    return code


def become(
    request: Mapping[str, Any],
    received: Sequence[int],
    *,
    zygote_pid: int,
    signal_defaults: Mapping[signal.Signals, Any],
    zygote_path: Sequence[str],
    zygote_pythonpath: str,
) -> int:
    """Everything between fork and the plugin's first line, then the plugin; returns its exit code."""
    os.setsid()
    die_with_parent(zygote_pid)
    signal.set_wakeup_fd(-1)
    for signum, handler in signal_defaults.items():
        with contextlib.suppress(OSError, ValueError, TypeError):
            signal.signal(signum, handler)
    install_fds(received, [int(fd) for fd in request["fds"]])
    env = {str(k): str(v) for k, v in request["env"].items()}
    if ENV_KERNEL_PID in env:  # the SDK checks it is its parent's pid; the parent we die with is the zygote
        env[ENV_KERNEL_PID] = str(zygote_pid)
    set_environ(env)
    time.tzset()
    cwd = os.path.abspath(str(request["cwd"]))
    os.chdir(cwd)
    sys.path[:] = python_path(env, cwd, zygote_path, zygote_pythonpath)
    sys.pycache_prefix = env.get("PYTHONPYCACHEPREFIX") or None
    sys.dont_write_bytecode = bool(env.get("PYTHONDONTWRITEBYTECODE"))
    # Import caches: the zygote dropped its finders just before the fork (main.forget_import_caches).
    name_process(str(request["module"]))
    return run_module(str(request["module"]))
