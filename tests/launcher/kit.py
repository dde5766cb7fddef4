"""Build small plugin graphs for launcher tests: manifests that run `testplug.py` with a given config."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hologram.kernel import plugin_specs
from hologram.lock import Sources, build, read_lock
from hologram.supervisor import State, Supervisor
from hologram.supervisor.managed import PluginSpec

TESTPLUG = Path(__file__).with_name("testplug.py")
ROOT = Path(__file__).resolve().parents[2]


def toml_value(value: Any) -> str:
    return json.dumps(value)


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
    command: list[str] | None = None,
    env: dict[str, str] | None = None,
    extra: str = "",
) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    run = command or [sys.executable, str(TESTPLUG)]
    cfg = {"events_file": str(directory / "events.jsonl"), **(config or {})}
    env_part = ", env = { " + ", ".join(f"{k} = {toml_value(v)}" for k, v in env.items()) + " }" if env else ""
    config_lines = "\n".join(f"{k} = {toml_value(v)}" for k, v in cfg.items())
    text = (
        f'[plugin]\nname = "{name}"\nversion = "0.1.0"\nrun = {{ command = {toml_value(run)}{env_part} }}\n\n'
        f"[facilities]\nprovides = {toml_value(list(provides))}\nrequires = {toml_value(list(requires))}\n"
        f"after_if_present = {toml_value(list(after_if_present))}\n\n"
        f'[start]\ntimeout_s = {timeout_s}\nrestart = "{restart}"\n\n{extra}\n[config]\n{config_lines}\n'
    )
    path = directory / f"{name}.toml"
    path.write_text(text, encoding="utf-8")
    return path


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


async def wait_for(condition: Any, timeout: float = 20.0, interval: float = 0.02) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {condition}")
        await asyncio.sleep(interval)


async def wait_state(supervisor: Supervisor, name: str, *states: State, timeout: float = 20.0) -> None:
    await wait_for(lambda: supervisor.plugins[name].state in states, timeout)
