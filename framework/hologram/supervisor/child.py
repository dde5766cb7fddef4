"""Spawning a plugin process: argv, environment, inherited fds, and dying with the kernel.

Children start in their own session, so a Ctrl-C in the terminal reaches only the kernel, which then stops
plugins in reverse dependency order instead of all of them dying at once. Each child also asks Linux to
SIGKILL it when the kernel dies (PR_SET_PDEATHSIG), so even `kill -9` of the kernel leaves no orphans.

The death signal is set by util-linux's `setpriv --pdeathsig KILL`, which then execs the plugin. Setting it
from Python (`preexec_fn`) forces a full fork() of the kernel, on the event loop: measured 31 ms per spawn
with a 300 MB kernel heap against 1.2 ms through setpriv (which lets Python use vfork). `preexec_fn` stays
as the fallback where setpriv is missing. SDK plugins also set it themselves (`hologram.sdk._runtime`),
which closes the short window between fork and setpriv's prctl.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hologram.base import protocol
from hologram.manifest.model import RunSpec
from hologram.rpc.streams import spawn
from hologram.supervisor import zygote
from hologram.supervisor.environment import PLUGIN_FIXED_ENV, scrubbed_environ
from hologram.zygote.child import ENV_KERNEL_PID, die_with_parent  # prctl resolved before any fork


def plugin_argv(run: RunSpec, manifest_dir: Path | None) -> list[str]:
    if run.module is not None:
        return [sys.executable, "-m", run.module]
    command = list(run.command or ())
    executable = command[0]
    # `./plugin.sh` is relative to the manifest, so a plugin directory can be moved as a whole.
    if manifest_dir is not None and (executable.startswith("./") or executable.startswith("../")):
        command[0] = str((manifest_dir / executable).resolve())
    return command


def plugin_env(name: str, extra: Mapping[str, str]) -> dict[str, str]:
    """A plugin's environment: the scrubbed kernel environment, then what its manifest and settings give it."""
    env = scrubbed_environ()
    env.update(extra)
    env[protocol.ENV_PLUGIN] = name
    env[protocol.ENV_PROTOCOL] = str(protocol.PROTOCOL_VERSION)
    env[ENV_KERNEL_PID] = str(os.getpid())
    env.update(PLUGIN_FIXED_ENV)
    return env


async def spawn_plugin(
    argv: Sequence[str], *, env: Mapping[str, str], cwd: Path, pass_fds: Sequence[int]
) -> tuple[asyncio.subprocess.Process, asyncio.StreamReader, asyncio.StreamWriter]:
    # -- zygote (docs/architecture.md "Fast spawn: the zygote"): `python -m MODULE` is forked from a pre-imported
    # interpreter; None means it cannot serve this one, and the classic spawn below runs. HOLOGRAM_ZYGOTE=0: off.
    module = zygote.module_of(argv) if zygote.enabled() else None
    if module is not None:
        forked = await zygote.spawn_module(module, env=env, cwd=cwd, pass_fds=pass_fds)
        if forked is not None:
            return forked
    # -- end zygote
    parent = os.getpid()
    options: dict[str, Any] = {}
    if zygote.SETPRIV is None:  # pragma: no cover - util-linux is part of every mainstream Linux base system
        options["preexec_fn"] = lambda: die_with_parent(parent)
    argv = zygote.under_setpriv(argv)
    return await spawn(
        argv,
        pass_fds=pass_fds,
        env=dict(env),
        cwd=str(cwd),
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
        **options,
    )
