"""`hologram up`: start the kernel and the plugins, following the lock."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from hologram.base.errors import HologramError, Problem
from hologram.cli._common import add_data_option, add_lock_option, command_parser, require_kernel

# What the command runs is imported when it runs: building the parser (every command, `--version`) must stay
# cheap (hologram/cli/__init__.py).
if TYPE_CHECKING:
    from hologram.agent import TurnService
    from hologram.cli.progress import Progress
    from hologram.doctor.caches import CacheCheck
    from hologram.kernel import Kernel
    from hologram.kernel.executor import Workers
    from hologram.kernel.notices import Notice
    from hologram.plan.lock import Lock

__all__ = ["add_data_option", "print_notice", "register", "run"]  # add_data_option: moved to _common

LOAD_WAIT_S = 180.0  # the longest the heap freeze waits for jieba and the embedding model to load
HOLD_MAX_S = 10.0  # the longest the held loads wait for a launch that drags on when no turn came (_preload)

DETAILS = """\
Starts the kernel, then each plugin the moment every facility it requires is ready (as announced by its
provider), following hologram.lock. The lock carries everything needed to start (run spec, config defaults,
tools, stage order); `up` never discovers plugins or re-resolves the graph unless told --build or --watch.
Where there is no lock yet (a first start in a new directory) it builds one, as `hologram build` would.
Before starting it checks the lock against the manifests it names (their hashes): a stale lock is refused
(run `hologram build`, or pass --build), and so is a missing manifest. A plugin installed since the lock was
built starts after `hologram build` (or `up --build`, which also discovers). --frozen skips that check and
starts from the lock alone: no manifest is read, nothing is discovered (deployments that ship only the lock
and the plugin code).
Ctrl-C stops plugins in reverse dependency order. A log of this start, plugin output included, is written
to DATA/logs/, rotated by size ([log] in settings.toml: 10 MiB, 3 backups, the last 10 starts kept).

examples:
  hologram up                       ./hologram.lock, data in ./.hologram (the lock is built if missing)
  hologram up --user                the per-user agent: lock and data in ~/.local/share/hologram
  hologram up --frozen              start from the lock alone; the manifests need not exist
  hologram up --build               rebuild the lock first if the manifests changed
  hologram up --watch               rebuild and restart changed plugins when manifests or code change
  hologram status                   (in another terminal) what runs, what waits and why
"""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = command_parser(subparsers, "up", "start the kernel and every plugin in the lock", DETAILS)
    add_lock_option(parser)
    add_data_option(parser)
    parser.add_argument("--build", action="store_true", help="rebuild a missing or stale lock instead of refusing")
    parser.add_argument("--watch", action="store_true", help="watch manifests and plugin code; rebuild and restart")
    parser.add_argument(
        "--frozen", action="store_true", help="start from the lock alone: no manifest read, no staleness check"
    )
    parser.add_argument(
        "--port",
        type=int,
        default=None,
        help="the web UI's port (default: [plugins.http] port, 8080); 0: any free port",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    lock_path: Path = args.lock
    if args.frozen and (args.build or args.watch):
        raise HologramError(
            Problem(
                "--frozen starts from the lock as it is; it cannot be combined with --build or --watch",
                hint="drop --frozen to rebuild or watch, or drop --build/--watch",
            )
        )
    require_kernel("up")
    from hologram.base._heap import limit_arenas

    limit_arenas()  # before the kernel starts any thread (hologram/base/_heap.py ARENA_MAX)
    from hologram.kernel import preload as _preload
    from hologram.kernel.instance import hold_data_dir
    from hologram.supervisor import zygote

    # Data files 0600, directories 0700, for the kernel and every process it starts — set before the zygote
    # is (it forks the plugins, which inherit its umask, not the kernel's).
    os.umask(0o077)
    hold_data_dir(args.data)  # a second kernel on this directory stops here, before it opens anything
    zygote.prestart()  # its interpreter and SDK imports on the other core, while the kernel imports its own
    _preload.start(hold=True)  # the memory stack's imports beside the kernel's; the loads after the first answer
    from hologram.base import _loop
    from hologram.cli.terminal import say
    from hologram.doctor.caches import CacheCheck
    from hologram.kernel import open_log_file, prepare_data_dir
    from hologram.plan.lock import read_lock

    if not args.frozen and not lock_path.is_file():
        _first_lock(lock_path)
    lock = read_lock(lock_path)
    if not args.frozen:
        lock = _current(lock, rebuild=args.build)
    data_dir = prepare_data_dir(args.data)
    log_path = open_log_file(data_dir)
    say(f"Hologram kernel starting: lock {lock_path}, data {data_dir}, log {log_path}")
    caches = CacheCheck(data_dir)  # vectors.db, scenes.db: checked (set aside when damaged) beside the imports
    return _loop.run(_serve(lock, data_dir, args, caches))


def _first_lock(lock_path: Path) -> None:
    """No lock yet (a first start, in a new directory or --user): build it as `hologram build` would — the
    built-ins and the installed plugins — and say so. There is nothing to re-resolve: a lock that exists is
    followed, or refused when stale, never rebuilt without --build."""
    from hologram.cli.build_cmd import sources_for
    from hologram.plan.lock import build

    lock_path.parent.mkdir(parents=True, exist_ok=True)
    result = build(lock_path, sources_for(lock_path, [], no_discover=False))
    for problem in result.discovery.skipped:
        print(problem.render().replace("error:", "warning:", 1), file=sys.stderr)
    print(f"{lock_path}: written ({len(result.graph.order)} plugins; there was no lock: `hologram build` remakes it)")


def _current(lock: Lock, *, rebuild: bool) -> Lock:
    """The lock, checked against the manifests it names (and rebuilt if stale and `rebuild`)."""
    from hologram.cli.terminal import say
    from hologram.plan.lock import build, changed_manifests, missing_manifests, read_lock

    missing = missing_manifests(lock)
    if missing and not rebuild:
        raise HologramError(missing)
    if not missing:
        changed = changed_manifests(lock)
        if not changed and not rebuild:
            return lock
        if changed and not rebuild:
            raise HologramError(
                Problem(
                    f"the lock is stale: the manifest of {', '.join(changed)} changed since it was built",
                    file=str(lock.path),
                    hint="run `hologram build` (or `hologram up --build`)",
                )
            )
    if build(lock.path, lock.sources).written:
        say(f"{lock.path}: rebuilt")
    return read_lock(lock.path)


async def _serve(lock: Lock, data_dir: Path, args: argparse.Namespace, caches: CacheCheck) -> int:
    import asyncio

    from hologram.agent import attach_agent
    from hologram.cli.progress import Progress
    from hologram.cli.terminal import say
    from hologram.kernel import Kernel
    from hologram.kernel.executor import install as install_workers
    from hologram.kernel.logfile import apply_log_settings

    workers = install_workers(asyncio.get_running_loop())  # before anything runs in the loop's executor
    kernel = Kernel(lock, data_dir)
    apply_log_settings(kernel.settings.log, data_dir / "logs")  # the file was opened before settings were read
    _web_port(kernel, args.port)
    for warning in caches.wait():  # before the memory opens them
        say(f"hologram: {warning}", sys.stderr)
    service = attach_agent(kernel)
    kernel.on_notice(print_notice)  # the agent's "no provider" is replayed; watch reports come as they happen
    progress = Progress(kernel.supervisor)
    progress.loading = True  # the summary ("ready") after the start-up loads: _settle_heap says when
    settle = asyncio.ensure_future(_settle_heap(kernel, service, progress, workers))
    kernel.add_listener(progress)
    if args.watch:
        from hologram.kernel.watch import watch

        task = asyncio.ensure_future(watch(kernel))
        try:
            await kernel.run()
        finally:
            task.cancel()
    else:
        await kernel.run()
    settle.cancel()
    await service.aclose()
    say("Hologram stopped.")
    return 0


def _web_port(kernel: Kernel, port: int | None) -> None:
    """``--port``: the HTTP channel plugin's port for this start, over settings.toml and its manifest."""
    if port is None:
        return
    if not 0 <= port <= 65535:
        raise HologramError(Problem(f"--port {port}: not a port", hint="give 1-65535, or 0 for any free port"))
    plugin = kernel.supervisor.plugins.get("http")
    if plugin is not None:
        plugin.pin("port", port)  # over settings.toml at every start of this kernel, restarts included


def print_notice(notice: Notice) -> None:
    """A kernel notice on the terminal: what ``--watch`` did goes to stdout beside the progress lines,
    anything else (a warning: no LLM provider configured) to stderr."""
    from hologram.cli.terminal import say

    if notice.source == "watch":
        say(f"watch: {notice.text}")
    else:
        say(f"hologram: {notice.text}", sys.stderr)


async def _settle_heap(kernel: Kernel, service: TurnService, progress: Progress, workers: Workers) -> None:
    """Freeze the start-up heap once jieba and the embedding model are loaded (hologram/base/_heap.py) and the
    launch is over: the freeze's full collection runs on the event loop (tens of ms with the model's heap),
    and in the middle of the launch it would hold up every plugin's handshake. Then the summary line: "ready"
    comes after the loads and the freeze, not beside them (issue 39 item 9). The kernel's worker threads have
    all started before it too, each with its malloc arena (hologram/kernel/executor.py)."""
    from hologram.agent.first_turn import warm as warm_first_turn
    from hologram.base._heap import freeze_when_loaded
    from hologram.kernel import preload as _preload
    from hologram.memory.text.tokenizer import wait_if_loading

    memory = service.agent.memory
    waits: list[Callable[[], object]] = [lambda: wait_if_loading(LOAD_WAIT_S)]
    if memory is not None:
        waits.append(lambda: memory.embedder_ready.wait(LOAD_WAIT_S))
    await _launched(kernel, HOLD_MAX_S)
    _preload.release()  # no turn came during the launch: load now, while nothing waits (hologram/kernel/preload.py)
    await _launched(kernel)
    await workers.started()  # every worker thread up and its arena made: no turn adds one (kernel/executor.py)
    await warm_first_turn(service)  # the first turn's one-time set-ups, before the freeze and "ready"
    try:
        kernel.heap_frozen = await freeze_when_loaded(waits)
    finally:
        progress.loaded()


async def _launched(kernel: Kernel, timeout: float = LOAD_WAIT_S) -> None:
    """Until no plugin is waiting or starting (the launch is over, whatever its outcome), at most `timeout`:
    a plugin that waits for ever for a failed provider must not keep the heap unfrozen."""
    import asyncio

    from hologram.supervisor import ManagedPlugin, State

    done = asyncio.Event()
    pending = (State.WAITING, State.STARTING)

    def check(_: ManagedPlugin | None = None) -> None:
        if all(p.state not in pending for p in kernel.supervisor.plugins.values()):
            done.set()

    kernel.add_listener(check)
    check()
    try:
        await asyncio.wait_for(done.wait(), timeout)
    except asyncio.TimeoutError:
        pass
    finally:
        kernel.supervisor.listeners.remove(check)
