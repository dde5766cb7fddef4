"""`hologram plugin add` and `remove` as prepare → (a person confirms) → apply → finish, or roll back.

Nothing is left half-done. `prepare_add` installs (it must: a package's manifest is inside it), resolves
the graph with the new plugin and renders the new lock *without writing it*; when anything fails — pip, a
package without a plugin, the resolver (a facility nobody provides, an ambiguity, a cycle) — it uninstalls
what it installed and raises, so the environment, the lock and the running graph are as they were.
`prepare_remove` changes nothing: it resolves the graph without the plugin first, so a plugin others
still require is refused before anything stops. `apply` writes the lock (refusing if someone else changed
it meanwhile); the caller then has the running kernel adopt it; `finish` uninstalls what `add` installed.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from packaging.utils import canonicalize_name

from hologram.base.errors import HologramError, Problem
from hologram.install import environment, record
from hologram.install.environment import Installed
from hologram.install.record import Entry
from hologram.install.summary import Summary, summarise
from hologram.install.target import Target
from hologram.manifest import LoadedManifest
from hologram.manifest.facility import KERNEL
from hologram.plan import diff
from hologram.plan.lock import BuildResult, LockFile, Sources, build, read_lock, write_lock_text

ENTRY_POINT = "entry-point:"


@dataclass(frozen=True)
class Project:
    """Where an add or remove acts: the lock file and the data directory (both absolute)."""

    lock_path: Path
    data_dir: Path


@dataclass
class Pending:
    action: Literal["add", "remove"]
    project: Project
    entry: Entry
    """add: the record entry `apply` writes; remove: the one `finish` drops."""
    summaries: tuple[Summary, ...]
    old_text: str | None
    new_text: str
    new_lock: LockFile
    changes: diff.Changes
    diff: list[str]
    warnings: list[str] = field(default_factory=list)
    installed: list[Installed] = field(default_factory=list)
    """add: what pip installed new (a rollback uninstalls it)."""
    upgraded: list[tuple[str, str, str]] = field(default_factory=list)
    """add: (name, version before, version now) that pip changed (a rollback puts the old version back)."""

    @property
    def plugins(self) -> tuple[str, ...]:
        return self.entry.plugins

    @property
    def content_hash(self) -> str:
        return self.new_lock.content_hash


def _read_text(path: Path) -> str | None:
    return path.read_text(encoding="utf-8") if path.is_file() else None


def _current(project: Project) -> tuple[str | None, LockFile | None]:
    """The lock as it is now (validated: a damaged lock is the lock's own clear error), or none yet."""
    text = _read_text(project.lock_path)
    if text is None:
        return None, None
    return text, read_lock(project.lock_path).file


def _unchanged_note(what: str, undone: list[str]) -> Problem:
    done = f"; {'; '.join(undone)}" if undone else ""
    return Problem(f"{what}: nothing changed (the lock and the running graph are as they were{done})")


def _distribution_of(source: str) -> str | None:
    return canonicalize_name(source.removeprefix(ENTRY_POINT)) if source.startswith(ENTRY_POINT) else None


def _locked_from(lock: LockFile | None, dist: str) -> list[str]:
    return [p.name for p in (lock.plugins if lock else ()) if p.source and _distribution_of(p.source) == dist]


# -- add --------------------------------------------------------------------------------------------------


def prepare_add(target: Target, project: Project) -> Pending:
    """Install `target` and work out the lock with its plugin(s); raises (everything undone) if it cannot be added."""
    old_text, old_lock = _current(project)
    sources = old_lock.sources if old_lock is not None else Sources()
    installed: list[Installed] = []
    upgraded: list[tuple[str, str, str]] = []
    dists: set[str] = set()
    before: dict[str, str] = {}
    if target.kind == "path":
        assert target.path is not None
        relative = Sources.entry(target.path, project.lock_path.parent)
        if relative in sources.paths:
            raise HologramError(
                Problem(f"{target.path} is already one of the lock's manifest directories", file=str(project.lock_path))
            )
        sources = Sources(builtins=sources.builtins, installed=sources.installed, paths=(*sources.paths, relative))
    else:
        if not sources.installed:
            raise HologramError(
                Problem(
                    "this lock was built without installed plugins (`hologram build --no-discover`), so an "
                    "installed plugin would not be in it",
                    file=str(project.lock_path),
                    hint="rebuild it with discovery (`hologram build`), or add a directory of manifests",
                )
            )
        before = environment.snapshot()
        if target.distribution and target.distribution in before and _locked_from(old_lock, target.distribution):
            names = ", ".join(_locked_from(old_lock, target.distribution))
            raise HologramError(
                Problem(
                    f"{target.distribution} is installed and its plugins are in the lock already: {names}",
                    hint=f"`hologram plugin remove {names.split(',')[0]}` first to add another version",
                )
            )
    try:  # from here every failure undoes what was installed (pip may fail after installing a part)
        if target.kind != "path":
            try:
                environment.install(target.pip_args(), what=f"installing {target.text}")
            finally:
                installed, upgraded = environment.difference(before, environment.snapshot())
            dist = target.distribution
            if target.kind == "editable":
                assert target.path is not None
                dist = environment.editable_at(target.path) or dist
            if dist is None:
                raise HologramError(Problem(f"pip installed {target.text}, but no distribution could be told from it"))
            dists = {dist, *(i.name for i in installed)}
        return _resolve_add(target, project, sources, old_text, old_lock, dists, installed, upgraded)
    except HologramError as exc:
        left = _undo_install(installed, upgraded)
        if left:
            note = Problem(f"{target.text} was not added, but not everything it installed could be uninstalled")
            raise HologramError([*exc.problems, *(Problem(line) for line in left), note]) from None
        undone = [f"pip uninstalled {', '.join(i.name for i in installed)} again"] if installed else []
        raise HologramError([*exc.problems, _unchanged_note(f"{target.text} was not added", undone)]) from None
    except BaseException:
        _undo_install(installed, upgraded)
        raise


def _resolve_add(
    target: Target,
    project: Project,
    sources: Sources,
    old_text: str | None,
    old_lock: LockFile | None,
    dists: set[str],
    installed: list[Installed],
    upgraded: list[tuple[str, str, str]],
) -> Pending:
    result = build(project.lock_path, sources, write=False)
    mine = _manifests_of(target, result, dists)
    own_problems = [p for p in result.discovery.skipped if any(f"plugin from {d} " in p.message for d in dists)]
    if not mine:
        problem = (
            Problem(f"{target.describe()} holds no plugin manifest")
            if target.kind == "path"
            else Problem(
                f"{target.describe()} installed no hologram plugin (no entry point in the group 'hologram.plugins')",
                hint='a plugin project declares [project.entry-points."hologram.plugins"] (docs/authoring.md)',
            )
        )
        raise HologramError([*own_problems, problem])
    locked = {p.name for p in (old_lock.plugins if old_lock else ())}
    added = [m for m in mine if m.name not in locked]
    if not added:
        names = ", ".join(m.name for m in mine)
        raise HologramError(Problem(f"already in the lock: {names}"))
    new_lock = diff.parse(result.text)
    assert new_lock is not None, "a lock just rendered reads as one"
    entry = Entry(
        plugins=tuple(m.name for m in added),
        kind=target.kind,
        target=str(target.path) if target.path is not None else str(target.requirement),
        distributions=tuple((i.name, i.version) for i in installed),
        lock=str(project.lock_path),
        python=sys.executable,
    )
    warnings = [p.render().replace("error:", "warning:", 1) for p in result.discovery.skipped]
    return Pending(
        "add",
        project,
        entry,
        tuple(summarise(m) for m in added),
        old_text,
        result.text,
        new_lock,
        diff.changes(old_lock, new_lock),
        diff.unified(old_text, result.text, project.lock_path.name),
        warnings,
        installed,
        upgraded,
    )


def _manifests_of(target: Target, result: BuildResult, dists: set[str]) -> list[LoadedManifest]:
    """The plugins `target` brought: a directory's manifests, or those of the distributions it installed."""
    found = result.discovery.manifests
    if target.kind == "path":
        return [m for m in found if m.source == "path" and m.path.parent.resolve() == target.path]
    return [m for m in found if _distribution_of(m.source) in dists]


def _undo_install(installed: list[Installed], upgraded: list[tuple[str, str, str]]) -> list[str]:
    """Uninstall what an add installed, put back versions it changed; returns what could not be undone."""
    left: list[str] = []
    try:
        environment.uninstall([i.name for i in installed], what="uninstalling what was just installed")
    except HologramError as exc:
        left.append(exc.render())
    for name, old, _ in upgraded:
        try:
            environment.install(["--no-deps", f"{name}=={old}"], what=f"putting back {name} {old}")
        except HologramError as exc:
            left.append(exc.render())
    return left


def rollback(pending: Pending) -> list[str]:
    """Undo a prepared add that will not be applied (the person said no, or the preview was only a look);
    returns what could not be undone."""
    return _undo_install(pending.installed, pending.upgraded) if pending.action == "add" else []


# -- remove -----------------------------------------------------------------------------------------------


def prepare_remove(name: str, project: Project) -> Pending:
    """The lock without `name` (and the plugins added with it); raises if it is not removable. Changes nothing."""
    old_text, old_lock = _current(project)
    entries = record.read(project.data_dir)
    entry = record.find(entries, name)
    locked = {p.name: p for p in (old_lock.plugins if old_lock else ())}
    if entry is None:
        raise HologramError(_not_added(name, locked.get(name), project))
    if entry.lock and Path(entry.lock) != project.lock_path:
        raise HologramError(Problem(f"{name} was added to the lock {entry.lock}", hint=f"pass --lock {entry.lock}"))
    sources = old_lock.sources if old_lock is not None else Sources()
    exclude: tuple[str, ...] = ()
    if entry.kind == "path":
        relative = Sources.entry(Path(entry.target), project.lock_path.parent)
        paths = tuple(p for p in sources.paths if p != relative)
        sources = Sources(builtins=sources.builtins, installed=sources.installed, paths=paths)
    else:
        exclude = entry.plugins
    what = f"{name} was not removed"
    try:
        result = build(project.lock_path, sources, write=False, exclude=exclude)
    except HologramError as exc:
        raise HologramError([*exc.problems, _unchanged_note(what, [])]) from None
    new_lock = diff.parse(result.text)
    assert new_lock is not None, "a lock just rendered reads as one"
    return Pending(
        "remove",
        project,
        entry,
        (),
        old_text,
        result.text,
        new_lock,
        diff.changes(old_lock, new_lock),
        diff.unified(old_text, result.text, project.lock_path.name),
    )


def _not_added(name: str, locked: object, project: Project) -> Problem:
    from hologram.plan.lock import LockedPlugin

    if not isinstance(locked, LockedPlugin) or name == KERNEL:
        return Problem(
            f"no plugin {name!r} was added with `hologram plugin add`", hint="`hologram plugin list` shows them"
        )
    source = locked.source or ""
    if source == "builtin":
        hint = f"built-in plugins stay installed; `hologram plugin stop {name}` stops it"
    elif source.startswith(ENTRY_POINT):
        dist = source.removeprefix(ENTRY_POINT)
        hint = f"it comes from the distribution {dist}: `pip uninstall {dist}`, then `hologram build`"
    else:
        hint = f"its manifest is {locked.manifest}, in a directory given to `hologram build -m`"
    return Problem(f"{name} was not added with `hologram plugin add`, so it is not removed here", hint=hint)


# -- both -------------------------------------------------------------------------------------------------


def apply(pending: Pending) -> None:
    """Write the new lock and the record. Refused (and an add rolled back) if the lock changed since prepare."""
    project = pending.project
    if _read_text(project.lock_path) != pending.old_text:
        rollback(pending)
        raise HologramError(
            Problem(
                "the lock changed while this ran (another `hologram build`?); nothing was changed",
                file=str(project.lock_path),
                hint="run the command again",
            )
        )
    entries = record.read(project.data_dir)
    write_lock_text(project.lock_path, pending.new_text)
    if pending.action == "add":
        record.write(project.data_dir, [*entries, pending.entry])


def finish(pending: Pending) -> list[str]:
    """After the kernel let go of a removed plugin: uninstall what its add installed, drop its record.
    Returns what could not be undone (pip's error), for the person to do by hand."""
    if pending.action != "remove":
        return []
    left: list[str] = []
    names = [n for n, _ in pending.entry.distributions]
    try:
        environment.uninstall(names, what=f"uninstalling {', '.join(names)}")
    except HologramError as exc:
        left.append(exc.render())
    entries = [e for e in record.read(pending.project.data_dir) if e != pending.entry]
    record.write(pending.project.data_dir, entries)
    return left
