"""Build small plugin graphs for launcher tests: manifests that run `testplug.py` with a given config."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hologram.kernel import plugin_specs
from hologram.plan.lock import Sources, build, read_lock
from hologram.supervisor import State, Supervisor
from hologram.supervisor.managed import PluginSpec
from tests.kit.manifests import write_manifest
from tests.kit.wait import wait_until_async

TESTPLUG = Path(__file__).with_name("testplug.py")
ROOT = Path(__file__).resolve().parents[2]


def write_plugin(
    directory: Path,
    name: str,
    *,
    provides: Iterable[str] = (),
    requires: Iterable[str] = (),
    after_if_present: Iterable[str] = (),
    config: dict[str, Any] | None = None,
    timeout_s: float = 10,
    restart: str = "on-failure",
    lazy: bool = False,
    command: list[str] | None = None,
    env: dict[str, str] | None = None,
    extra: str = "",
) -> Path:
    """A manifest running `testplug.py` (or `command`), which logs what it did to ``directory/events.jsonl``."""
    run: dict[str, Any] = {"command": command or [sys.executable, str(TESTPLUG)]}
    if env:
        run["env"] = env
    return write_manifest(
        directory,
        name,
        run=run,
        description=None,
        provides=provides,
        requires=requires,
        after_if_present=after_if_present,
        start={"timeout_s": timeout_s, "restart": restart, **({"lazy": True} if lazy else {})},
        extra=extra,
        config={"events_file": str(directory / "events.jsonl"), **(config or {})},
    )


def events(directory: Path) -> list[dict[str, Any]]:
    path = directory / "events.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def first(directory: Path, plugin: str, event: str) -> float:
    return next(e["t"] for e in events(directory) if e["plugin"] == plugin and e["event"] == event)


def lock_for(directory: Path) -> Path:
    lock_path = directory / "hologram.lock"
    build(lock_path, Sources(builtins=False, installed=False, paths=(".",)))
    return lock_path


def specs_for(directory: Path) -> list[PluginSpec]:
    return plugin_specs(read_lock(lock_for(directory)))


def supervisor_for(directory: Path) -> Supervisor:
    lock = read_lock(lock_for(directory))
    return Supervisor(plugin_specs(lock), directory / "data", kernel_facilities=list(lock.kernel.provides))


async def wait_state(supervisor: Supervisor, name: str, *states: State, timeout: float = 20.0) -> None:
    """Until plugin `name` is in one of `states`; the failure names the state and reason it was left in.

    Polled, not woken by the supervisor's state listener: woken inside the transition itself, these tests
    went on to shut the loop down so soon that a subprocess transport was left to be collected on a closed
    loop ("Event loop is closed" at exit, seen running test_sdk.py after test_supervisor.py)."""
    plugin = supervisor.plugins[name]
    await wait_until_async(
        lambda: (plugin.state, plugin.reason),
        accept=lambda seen: seen[0] in states,
        timeout=timeout,
        what=f"{name} to be {' or '.join(s.value for s in states)}",
    )
