"""`hologram up --watch`: rebuild the lock when a manifest changes, restart plugins whose code changes.

An invalid manifest edit is reported and the running graph is kept: a typo while editing must not take down
plugins that were working. Only the plugins whose lock entry or code changed, and their dependents, restart.
What happened is logged and given as a notice (`Kernel.notify`, source ``watch``), which `hologram up` prints.
"""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import watchfiles

from hologram.base.errors import HologramError
from hologram.manifest.discovery import builtin_manifest_dir
from hologram.plan.lock import build, read_lock

if TYPE_CHECKING:
    from hologram.kernel import Kernel

log = logging.getLogger("hologram.watch")


def code_roots(kernel: Kernel) -> dict[Path, str]:
    """Each plugin's code → plugin name: a module plugin's package (or module file), a command plugin's files."""
    roots: dict[Path, str] = {}
    for plugin in kernel.supervisor.plugins.values():
        run = plugin.spec.plugin.run
        module = (run.module or run.inproc) if run is not None else None
        root: Path | None = None
        if module:
            try:
                spec = importlib.util.find_spec(str(module))
            except (ImportError, ValueError):
                spec = None
            if spec is not None and spec.origin:
                origin = Path(spec.origin)
                root = origin.parent if origin.name in ("__init__.py", "__main__.py") else origin
        elif plugin.spec.manifest_dir is not None:
            # A command plugin's code is the files its command names (`./main.js`, `plugin.py`); watching
            # the whole directory would also catch whatever the plugin writes next to its manifest.
            base = plugin.spec.manifest_dir.resolve()
            for part in (run.command or []) if run is not None else []:
                candidate = (base / str(part)).resolve()
                if candidate.is_file() and base in candidate.parents:
                    roots[candidate] = plugin.name
        if root is not None:
            roots[root.resolve()] = plugin.name
    return roots


def manifest_dirs(kernel: Kernel) -> list[Path]:
    sources = kernel.lock.sources
    dirs = [builtin_manifest_dir()] if sources.builtins else []
    dirs.extend(sources.directories(kernel.lock.path.parent))
    return [d.resolve() for d in dirs if d.is_dir()]


def plugins_for(paths: Iterable[Path], roots: dict[Path, str]) -> set[str]:
    owners = set()
    for path in paths:
        for root, name in roots.items():
            if path == root or root in path.parents:
                owners.add(name)
    return owners


async def rebuild(kernel: Kernel) -> None:
    lock_path = kernel.lock.path
    try:
        result = build(lock_path, kernel.lock.sources)
    except HologramError as exc:
        text = f"manifest change rejected, the running graph is kept:\n{exc.render()}"
        log.error("%s", text)
        kernel.notify("watch", text, warning=True)
        return
    if not result.written:
        return
    restarted = await kernel.replace_lock(read_lock(lock_path))
    text = f"lock rebuilt; restarted {', '.join(restarted) or 'nothing'}"
    log.info("%s", text)
    kernel.notify("watch", text)


async def watch(kernel: Kernel) -> None:
    dirs = manifest_dirs(kernel)
    roots = code_roots(kernel)
    watched = sorted({*dirs, *(r if r.is_dir() else r.parent for r in roots)})
    log.info("watching %s", ", ".join(map(str, watched)))
    async for changes in watchfiles.awatch(*watched, stop_event=kernel.stop_requested):
        paths = {Path(p).resolve() for _, p in changes}
        if any(p.suffix == ".toml" and p.parent in dirs for p in paths):
            await rebuild(kernel)
            roots = code_roots(kernel)
        code = {p for p in paths if p.suffix != ".toml" and "__pycache__" not in p.parts}
        owners = plugins_for(code, roots)
        if owners:
            restarted = await kernel.supervisor.restart_many(sorted(owners))
            text = f"code changed; restarted {', '.join(restarted)}"
            log.info("%s", text)
            kernel.notify("watch", text)
