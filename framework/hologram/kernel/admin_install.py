"""``kernel.plugins`` `reload`, `inventory`, `add`, `remove`: plugins added to and removed from the running graph.

`reload` is what `hologram plugin add/remove` calls once it has written the new lock: the kernel reads the
lock it runs from and adopts it (`Kernel.replace_lock`, the machinery of `hologram up --watch`), so exactly
the added plugins start and the removed ones stop; every other plugin keeps running, same pid (unless its
own lock entry changed: `after_if_present` on a facility the new plugin provides). It answers once each added
plugin has come up or failed, so the caller can tell the person which.

`add` and `remove` are the same steps the CLI runs (hologram/install/transaction.py), for a client without a
terminal (the web page): called without `confirm` they return the preview — what the manifest provides,
requires and may do, the lock's diff, which plugins start, stop or restart — and change nothing (an add's
install is undone); called with `confirm` set to the preview's `confirm` value, they do it, provided the
result is still the one previewed.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hologram.base import sitepaths
from hologram.base.errors import HologramError, Problem
from hologram.kernel.settle import settle
from hologram.rpc import APPLICATION_ERROR, RpcError
from hologram.supervisor import State

if TYPE_CHECKING:
    from hologram.install.transaction import Pending, Project
    from hologram.kernel.core import Kernel

FACILITY = "kernel.plugins"
UNSETTLED = (State.WAITING, State.STARTING)  # an added plugin may first wait for others


def _refused(exc: HologramError) -> RpcError:
    return RpcError(APPLICATION_ERROR, exc.render())


def preview(pending: Pending) -> dict[str, Any]:
    """What a person confirms: the plugins and their summaries, the lock's diff, what the kernel will do."""
    changes = pending.changes
    return {
        "action": pending.action,
        "plugins": list(pending.plugins),
        "summaries": [s.to_json() for s in pending.summaries],
        "diff": pending.diff,
        "changes": {
            "added": list(changes.added),
            "removed": list(changes.removed),
            "restarted": list(changes.restarted),
        },
        "warnings": pending.warnings,
        "confirm": pending.content_hash,
    }


class InstallAdmin:
    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self._reloading = asyncio.Lock()

    def project(self) -> Project:
        from hologram.install.transaction import Project

        return Project(self.kernel.lock.path.resolve(), self.kernel.data_dir)

    # -- adopting the lock ------------------------------------------------------------------------------

    async def reload(self, expect: str | None = None) -> dict[str, Any]:
        """Adopt the lock file this kernel runs from; `expect`: its content-hash, refused if it differs."""
        from hologram.plan.lock import read_lock

        async with self._reloading:
            try:
                lock = await asyncio.to_thread(read_lock, self.kernel.lock.path)
            except HologramError as exc:
                raise _refused(exc) from None
            if expect is not None and lock.content_hash != expect:
                raise RpcError(
                    APPLICATION_ERROR,
                    f"the lock file {lock.path} is not the one expected (its content-hash is {lock.content_hash}, "
                    f"not {expect}): it changed meanwhile; run the command again",
                )
            before = {p.name for p in self.kernel.lock.plugins}
            after = {p.name for p in lock.plugins}
            # what pip installed since the kernel started (a new .pth) is importable here from now on
            await asyncio.to_thread(sitepaths.refresh)
            restarted = await self.kernel.replace_lock(lock)
            added = sorted(after - before)
            await settle(self.kernel, added, UNSETTLED)
            states = {p["name"]: p for p in self.kernel.supervisor.snapshot()["plugins"]}
            return {
                "added": added,
                "removed": sorted(before - after),
                "restarted": sorted(set(restarted) - set(added)),
                "plugins": [
                    {k: states[n][k] for k in ("name", "state", "pid", "reason")} for n in added if n in states
                ],
            }

    # -- what is installed, locked, running ----------------------------------------------------------------

    async def inventory(self) -> dict[str, Any]:
        """`hologram plugin list` as data: installed vs locked vs running, one row per plugin."""
        from hologram.install.inventory import inventory

        try:
            lock = self.kernel.lock
            rows = await asyncio.to_thread(inventory, lock.file, lock.path, self.kernel.data_dir)
        except HologramError as exc:
            raise _refused(exc) from None
        return {"plugins": with_running(rows, self.kernel.supervisor.snapshot()["plugins"])}

    # -- add and remove, for a client without a terminal ---------------------------------------------------

    async def add(self, target: str, confirm: str | None = None) -> dict[str, Any]:
        """Preview (no `confirm`) or do (`confirm` = the preview's) adding PATH (absolute) or PACKAGE[==VERSION]."""
        from hologram.install.target import looks_like_path, parse_target
        from hologram.install.transaction import prepare_add

        try:
            if looks_like_path(target) and not Path(target).expanduser().is_absolute():
                raise HologramError(Problem(f"{target}: give an absolute path (the kernel's directory is not yours)"))
            parsed = parse_target(target)
        except HologramError as exc:
            raise _refused(exc) from None
        return await self._run(lambda project: prepare_add(parsed, project), confirm)

    async def remove(self, name: str, confirm: str | None = None) -> dict[str, Any]:
        """Preview (no `confirm`) or do (`confirm` = the preview's) removing a plugin `add` brought."""
        from hologram.install.transaction import prepare_remove

        return await self._run(lambda project: prepare_remove(name, project), confirm)

    async def _run(self, prepare: Any, confirm: str | None) -> dict[str, Any]:
        from hologram.install import record
        from hologram.install.transaction import apply, finish, rollback

        project = self.project()

        def prepared() -> tuple[dict[str, Any], Pending | None]:
            with record.exclusive(project.data_dir):
                pending: Pending = prepare(project)
                answer = preview(pending)
                if confirm != pending.content_hash:
                    left = rollback(pending)
                    if confirm is not None:
                        problem = "the result is not the one previewed (the package or the lock changed): preview again"
                        raise HologramError([Problem(problem), *(Problem(line) for line in left)])
                    return {**answer, "applied": False}, None
                apply(pending)
                return {**answer, "applied": True}, pending

        try:
            answer, pending = await asyncio.to_thread(prepared)
        except HologramError as exc:
            raise _refused(exc) from None
        if pending is None:
            return answer
        answer["reload"] = await self.reload(pending.content_hash)
        left = await asyncio.to_thread(finish, pending)
        if left:
            answer["warnings"] = [*answer["warnings"], *left]
        return answer

    def serve(self) -> None:
        from hologram.kernel.admin import serve_admin

        for method in (self.reload, self.inventory, self.add, self.remove):
            serve_admin(self.kernel, FACILITY, method.__name__, method)


def with_running(rows: list[dict[str, Any]], running: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Inventory rows with each plugin's `state` and `pid` in the running kernel (None: not running there)."""
    states = {p["name"]: p for p in running}
    out = []
    for row in rows:
        plugin = states.get(row["name"], {})
        out.append({**row, "state": plugin.get("state"), "pid": plugin.get("pid")})
    return out
