"""Every start of a plugin takes its ``[plugins.NAME]`` table from settings.toml as the file is then (a real file,
read by the kernel's `SettingsFile`, under the supervisor with real plugin processes).

* A person's restart or start takes the edited table; while the file cannot be used (not TOML, or a value
  `hologram up` refuses) it is refused with the file:line error before anything is stopped: same pid, still ready.
* The supervisor's own starts — a crash restart, `restart_many` (what `up --watch` does on a code change), a
  plugin added to the running graph (`replace_specs`, what `hologram plugin add` does) — take the edited table
  too; a file that cannot be used then leaves the values last read (logged once), never a plugin down.

Mutation checks (done): `_launch` without `plugin.configure(...)` turns the first and third tests red (the old
value after the restart; the added plugin without its table); `check_settings` not called by
`restart_plugin` turns the second red (the restart goes ahead: a new pid); `PluginSettings.tables` re-raising
the error turns the third red at the crash restart (the plugin never starts again).
"""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path
from typing import Any

import pytest

from hologram.config.current import SettingsFile
from hologram.kernel import plugin_specs
from hologram.plan.lock import read_lock
from hologram.rpc import RpcError
from hologram.supervisor import State, Supervisor
from tests.kit.providers import write_settings
from tests.kit.wait import wait_until_async
from tests.launcher.kit import events, lock_for, wait_state, write_plugin

pytestmark = pytest.mark.slow


def supervisor_reading(directory: Path) -> tuple[Supervisor, SettingsFile]:
    """The supervisor as `hologram up` assembles it: the [plugins.*] tables re-read from DATA/settings.toml."""
    lock = read_lock(lock_for(directory))
    data = directory / "data"
    settings = SettingsFile(data)
    supervisor = Supervisor(
        plugin_specs(lock), data, kernel_facilities=list(lock.kernel.provides),
        plugin_config=settings.plugins(), read_plugin_config=settings.plugins, settings_path=settings.path,
    )  # fmt: skip
    return supervisor, settings


def edit(path: Path, text: str) -> None:
    """Write the file anew, with an mtime that cannot equal the last one (a coarse clock must not hide it)."""
    before = path.stat().st_mtime_ns if path.exists() else 0
    write_settings(path, text)
    os.utime(path, ns=(before + 1_000_000_000, before + 1_000_000_000))


def starts(directory: Path, plugin: str) -> list[dict[str, Any]]:
    return [e for e in events(directory) if e["plugin"] == plugin and e["event"] == "start"]


def test_a_restart_or_start_takes_the_table_as_the_file_is_now(tmp_path: Path) -> None:
    write_plugin(tmp_path, "tally", config={"max_counters": 100})
    settings_toml = tmp_path / "data" / "settings.toml"
    edit(settings_toml, "[plugins.tally]\nmax_counters = 20\n")

    async def scenario() -> None:
        supervisor, _ = supervisor_reading(tmp_path)
        supervisor.start()
        try:
            await wait_state(supervisor, "tally", State.READY)
            edit(settings_toml, "[plugins.tally]\nmax_counters = 7\n")
            await supervisor.restart_plugin("tally")
            await wait_state(supervisor, "tally", State.READY)
            await supervisor.stop_plugin("tally")
            edit(settings_toml, "[plugins.tally]\nmax_counters = 3\nenv = { TALLY_MODE = 'x' }\n")
            await supervisor.start_plugin("tally")
            await wait_state(supervisor, "tally", State.READY)
        finally:
            await supervisor.shutdown()

    asyncio.run(scenario())
    assert [s["config"]["max_counters"] for s in starts(tmp_path, "tally")] == [20, 7, 3]
    assert "env" not in starts(tmp_path, "tally")[-1]["config"], "env sets the environment, it is not configuration"


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("[plugins.tally]\nmax_counters = \n", "settings.toml:2: error: not valid TOML"),
        ("[plugins.tally]\nmax_counters = 7\n\n[agent]\nmax_stepz = 3\n", "settings.toml:5: error: agent.max_stepz"),
    ],
    ids=["not-toml", "refused-by-up"],
)
def test_a_restart_is_refused_before_anything_stops_while_the_file_cannot_be_used(
    tmp_path: Path, text: str, error: str
) -> None:
    write_plugin(tmp_path, "tally", config={"max_counters": 100})
    settings_toml = tmp_path / "data" / "settings.toml"
    edit(settings_toml, "[plugins.tally]\nmax_counters = 20\n")
    seen: dict[str, Any] = {}

    async def scenario() -> None:
        supervisor, _ = supervisor_reading(tmp_path)
        supervisor.start()
        try:
            await wait_state(supervisor, "tally", State.READY)
            plugin = supervisor.plugins["tally"]
            seen["pid"] = plugin.pid
            edit(settings_toml, text)
            for action in (supervisor.restart_plugin, supervisor.start_plugin):
                with pytest.raises(RpcError) as refused:
                    await action("tally")
                seen.setdefault("messages", []).append(refused.value.message)
            seen["after"] = (plugin.state, plugin.pid, plugin.restarts)
        finally:
            await supervisor.shutdown()

    asyncio.run(scenario())
    restart, start = seen["messages"]
    assert restart.startswith("tally was not restarted: settings.toml cannot be used\n"), restart
    assert error in restart, restart
    assert restart.endswith(f"tally keeps running (ready, pid {seen['pid']}) with the values it started with")
    assert start.startswith("tally was not started: settings.toml cannot be used\n"), start
    assert seen["after"] == (State.READY, seen["pid"], 0), "nothing was stopped"
    assert len(starts(tmp_path, "tally")) == 1


def test_the_supervisors_own_starts_take_the_current_table_and_survive_a_broken_file(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_plugin(tmp_path, "tally", config={"max_counters": 100}, restart="always")
    settings_toml = tmp_path / "data" / "settings.toml"
    edit(settings_toml, "[plugins.tally]\nmax_counters = 20\n\n[plugins.late]\nmax_counters = 9\n")
    caplog.set_level(logging.WARNING, logger="hologram.supervisor")

    async def scenario() -> None:
        supervisor, _ = supervisor_reading(tmp_path)
        supervisor.start()
        try:
            await wait_state(supervisor, "tally", State.READY)
            edit(settings_toml, "[plugins.tally]\nmax_counters = 7\n\n[plugins.late]\nmax_counters = 5\n")
            await supervisor.restart_many(["tally"])  # what `hologram up --watch` does when the code changed
            await wait_until_async(lambda: len(starts(tmp_path, "tally")) == 2, timeout=20, what="the second start")
            await wait_state(supervisor, "tally", State.READY)

            # a plugin added to the running graph (`hologram plugin add` → replace_specs) gets its table
            write_plugin(tmp_path, "late", config={"max_counters": 100})
            await supervisor.replace_specs(plugin_specs(read_lock(lock_for(tmp_path))))
            await wait_state(supervisor, "late", State.READY)

            # a crash while the file is broken: restarted with the values last read, not kept down
            edit(settings_toml, "[plugins.tally\nmax_counters = 1\n")
            supervisor.plugins["tally"].kill()
            await wait_until_async(lambda: len(starts(tmp_path, "tally")) == 3, timeout=20, what="the crash restart")
            await wait_state(supervisor, "tally", State.READY)
        finally:
            await supervisor.shutdown()

    asyncio.run(scenario())
    assert [s["config"]["max_counters"] for s in starts(tmp_path, "tally")] == [20, 7, 7]
    assert [s["config"]["max_counters"] for s in starts(tmp_path, "late")] == [5]
    warnings = [r.getMessage() for r in caplog.records if "cannot be used" in r.getMessage()]
    assert len(warnings) == 1, warnings  # said once, not at every start
    assert "plugins start with the values last read from it" in warnings[0]
    assert "settings.toml:1: error: not valid TOML" in warnings[0], warnings[0]
