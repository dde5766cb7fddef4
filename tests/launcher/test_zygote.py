"""The zygote: `run.module` plugins forked from a pre-imported interpreter must be indistinguishable from
`python -m` ones — same process state, same supervision — and must still die with the kernel."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from hologram.supervisor import State, Supervisor, zygote
from hologram.supervisor.child import ENV_KERNEL_PID, plugin_env
from hologram.supervisor.zygote import ZygoteProcess
from tests.kit.manifests import write_manifest
from tests.kit.wait import wait_until, wait_until_async
from tests.launcher.kit import ROOT, supervisor_for, wait_state
from tests.launcher.test_up import Kernel, alive, hologram

MODULE = "tests.launcher.zygote_plug"


def write_module_plugin(
    directory: Path,
    name: str,
    *,
    provides: Sequence[str] = (),
    env: dict[str, str] | None = None,
    config: dict[str, Any] | None = None,
    restart: str = "on-failure",
) -> dict[str, str]:
    """A manifest running `python -m tests.launcher.zygote_plug`; returns the env it adds."""
    extra = {"PYTHONPATH": str(ROOT), **(env or {})}
    write_manifest(
        directory,
        name,
        run={"module": MODULE, "env": extra},
        description=None,
        provides=provides,
        start={"timeout_s": 20, "restart": restart},
        config=config or {},
    )
    return extra


@pytest.fixture
def zygote_on(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv(zygote.ENV_SWITCH, raising=False)
    yield


def zygote_pid() -> int:
    server = zygote._registry.server
    assert server is not None and server.alive
    return server.popen.pid


async def probe(supervisor: Supervisor, name: str) -> dict[str, Any]:
    result = await supervisor.invoke_tool(name, "probe", {}, call_id="p", session_id=None)
    info: dict[str, Any] = json.loads(result.content)
    return info


def passed_fds(supervisor: Supervisor, name: str) -> set[int]:
    managed = supervisor.plugins[name]
    runtime = managed.runtime
    assert runtime is not None
    return {*(a.fd for a in runtime.arenas), runtime.eventfd, managed.ring.spec()["fd"]}


def test_a_forked_plugin_looks_like_python_dash_m_from_the_inside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, zygote_on: None
) -> None:
    """Probed once through the zygote and once classically: same fds, env, cwd, argv, sys.path, signals."""
    extra = write_module_plugin(tmp_path, "zyg", provides=["zyg.f"], env={"ZYG_MARK": "marked"})

    async def run_probe() -> tuple[dict[str, Any], type, set[int], Path]:
        supervisor = supervisor_for(tmp_path)
        supervisor.start()
        try:
            await wait_state(supervisor, "zyg", State.READY)
            runtime = supervisor.plugins["zyg"].runtime
            assert runtime is not None
            return (
                await probe(supervisor, "zyg"),
                type(runtime.process),
                passed_fds(supervisor, "zyg"),
                supervisor.plugins["zyg"].data_dir,
            )
        finally:
            await supervisor.shutdown()

    forked, kind, fds, data_dir = asyncio.run(run_probe())
    assert kind is ZygoteProcess
    assert forked["pid"] == forked["sid"] == forked["pgid"], "its own session, signalled as a group"
    assert forked["ppid"] == zygote_pid()
    expected_env = plugin_env("zyg", extra) | {ENV_KERNEL_PID: str(forked["ppid"])}
    assert forked["env"] == expected_env
    assert forked["cwd"] == str(data_dir)
    assert {int(fd) for fd in forked["fds"]} == {0, 1, 2} | fds, "no stray fd from the zygote"
    assert all(forked["fds"][str(fd)].startswith("pipe:") for fd in (0, 1, 2))

    monkeypatch.setenv(zygote.ENV_SWITCH, "0")
    classic, classic_kind, classic_fds, _ = asyncio.run(run_probe())
    assert classic_kind is not ZygoteProcess
    assert {int(fd) for fd in classic["fds"]} == {0, 1, 2} | classic_fds
    assert forked["refused"] == [], "a plugin's own code can import what the zygote refused (trio)"
    for key in ("cwd", "name", "argv", "path0", "signals", "blocked", "refused"):
        assert forked[key] == classic[key], key
    assert forked["name"] == "__main__" and forked["argv"][0].endswith("zygote_plug.py")
    different = {k for k in set(forked["env"]) | set(classic["env"]) if forked["env"].get(k) != classic["env"].get(k)}
    assert different <= {ENV_KERNEL_PID, zygote.ENV_SWITCH}


def test_kill_9_exit_codes_and_import_errors_are_reported_as_for_any_process(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, zygote_on: None
) -> None:
    write_module_plugin(tmp_path, "victim", provides=["victim.f"])
    write_module_plugin(tmp_path, "quitter", restart="never")
    write_module_plugin(tmp_path, "broken", env={"ZYGOTE_PLUG_RAISE": "1"}, restart="never")
    caplog.set_level(logging.INFO)

    async def scenario() -> None:
        supervisor = supervisor_for(tmp_path)
        supervisor.start()
        try:
            await wait_state(supervisor, "victim", State.READY)
            await wait_state(supervisor, "quitter", State.READY)
            victim = supervisor.plugins["victim"]
            pid = victim.pid
            assert pid is not None
            os.kill(pid, signal.SIGKILL)
            await wait_state(supervisor, "victim", State.CRASHED)
            assert victim.reason == "killed by SIGKILL; restarting in 1 s"
            await wait_state(supervisor, "victim", State.READY, timeout=10)
            assert victim.pid != pid and victim.runtime is not None
            assert isinstance(victim.runtime.process, ZygoteProcess), "restarted through the zygote"

            quit = await supervisor.invoke_tool("quitter", "quit", {"code": 7}, call_id="q", session_id=None)
            assert quit.content == "leaving"
            await wait_until_async(
                lambda: supervisor.plugins["quitter"].exit_description,
                accept=lambda description: description == "exited with code 7",
                timeout=20,
                what="quitter to exit",
            )

            await wait_state(supervisor, "broken", State.FAILED, State.CRASHED)
            assert "exited with code 1" in supervisor.plugins["broken"].reason
        finally:
            await supervisor.shutdown()

    asyncio.run(scenario())
    assert "RuntimeError: zygote_plug refuses to start" in caplog.text, "the traceback goes to the plugin's log"


def test_a_dead_zygote_takes_its_plugins_along_and_is_restarted_lazily(tmp_path: Path, zygote_on: None) -> None:
    write_module_plugin(tmp_path, "child", provides=["child.f"])

    async def scenario() -> None:
        supervisor = supervisor_for(tmp_path)
        supervisor.start()
        try:
            await wait_state(supervisor, "child", State.READY)
            plugin = supervisor.plugins["child"]
            first_zygote, first_pid = zygote_pid(), plugin.pid
            assert first_pid is not None
            os.kill(first_zygote, signal.SIGKILL)
            await wait_state(supervisor, "child", State.CRASHED)
            assert plugin.reason == "killed by SIGKILL; restarting in 1 s"
            assert not alive(first_pid)
            await wait_state(supervisor, "child", State.READY, timeout=15)
            assert isinstance(plugin.runtime and plugin.runtime.process, ZygoteProcess)
            assert zygote_pid() != first_zygote
        finally:
            await supervisor.shutdown()

    asyncio.run(scenario())


def test_spawns_classically_when_the_zygote_cannot_serve(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, zygote_on: None
) -> None:
    """A zygote that fails to start, different start-up settings (PYTHONHASHSEED) or HOLOGRAM_ZYGOTE=0."""
    write_module_plugin(tmp_path, "plain", provides=["plain.f"])
    write_module_plugin(tmp_path, "seeded", provides=["seeded.f"], env={"PYTHONHASHSEED": "7"})
    caplog.set_level(logging.INFO)

    async def kinds() -> dict[str, type]:
        supervisor = supervisor_for(tmp_path)
        supervisor.start()
        try:
            found = {}
            for name in ("plain", "seeded"):
                await wait_state(supervisor, name, State.READY)
                runtime = supervisor.plugins[name].runtime
                assert runtime is not None
                found[name] = type(runtime.process)
            return found
        finally:
            await supervisor.shutdown()

    assert asyncio.run(kinds()) == {"plain": ZygoteProcess, "seeded": asyncio.subprocess.Process}

    monkeypatch.setattr(zygote, "_registry", zygote._Registry())
    monkeypatch.setattr(zygote, "MAIN_MODULE", "hologram.zygote.no_such_module")
    assert asyncio.run(kinds()) == {"plain": asyncio.subprocess.Process, "seeded": asyncio.subprocess.Process}
    assert "zygote unavailable" in caplog.text and "No module named" in caplog.text

    monkeypatch.setattr(zygote, "_registry", zygote._Registry())
    monkeypatch.setattr(zygote, "MAIN_MODULE", "hologram.zygote.main")
    monkeypatch.setenv(zygote.ENV_SWITCH, "0")
    assert asyncio.run(kinds()) == {"plain": asyncio.subprocess.Process, "seeded": asyncio.subprocess.Process}
    assert zygote._registry.server is None, "switched off: never started"


def zygotes_of(kernel_pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == kernel_pid and b"hologram.zygote.main" in cmdline:
            found.append(int(entry.name))
    return found


@pytest.mark.slow
def test_kill_9_of_the_kernel_leaves_neither_zygote_nor_plugins(tmp_path: Path, zygote_on: None) -> None:
    """`wedged` survives stdin EOF and SIGTERM: only the PR_SET_PDEATHSIG chain kernel → zygote → plugin ends it."""
    write_module_plugin(tmp_path, "mod-a", provides=["a.f"])
    write_module_plugin(tmp_path, "wedged", config={"wedge": True})
    hologram("build", "--no-discover", "-m", ".", cwd=tmp_path)
    kernel = Kernel(tmp_path)
    try:
        kernel.wait_state("mod-a", "ready")
        kernel.wait_state("wedged", "ready")
        pids = [kernel.plugin(n)["pid"] for n in ("mod-a", "wedged")]
        zygotes = zygotes_of(kernel.process.pid)
        assert len(zygotes) == 1, "one zygote per kernel"
        assert all(alive(pid) for pid in [*pids, *zygotes])
        assert all(
            int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1]) == zygotes[0] for pid in pids
        )
        kernel.process.kill()
        kernel.process.wait()
        wait_until(  # a failure bound: they die at once, or never without PR_SET_PDEATHSIG
            lambda: [pid for pid in [*pids, *zygotes] if alive(pid)],
            accept=lambda living: not living,
            timeout=30,
            what="the zygote and its plugins to die with the kernel",
        )
        assert not any(alive(pid) for pid in zygotes), "the zygote outlived the kernel"
        assert not any(alive(pid) for pid in pids), "plugin processes outlived the kernel"
    finally:
        kernel.stop()


def test_a_prestarted_zygote_serves_the_first_spawn_and_one_with_other_settings_is_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, zygote_on: None
) -> None:
    """`hologram up` starts the zygote before the kernel's imports (`zygote.prestart`); the first module spawn
    claims it when its interpreter settings match, and starts a fresh one when they do not.
    Mutation check (done): `_claim_early` always returning False turns the first assertion on `server` red."""
    write_module_plugin(tmp_path, "zyg", provides=["zyg.f"])

    async def launch() -> type:
        supervisor = supervisor_for(tmp_path)
        supervisor.start()
        try:
            await wait_state(supervisor, "zyg", State.READY)
            runtime = supervisor.plugins["zyg"].runtime
            assert runtime is not None
            return type(runtime.process)
        finally:
            await supervisor.shutdown()

    monkeypatch.setattr(zygote, "_registry", zygote._Registry())
    zygote.prestart()
    early = zygote._registry.early
    assert early is not None
    try:
        assert asyncio.run(launch()) is ZygoteProcess
        assert zygote._registry.server is early and zygote._registry.early is None
        assert zygote_pid() == early.popen.pid
    finally:
        early.lost("test over")

    monkeypatch.setattr(zygote, "_registry", zygote._Registry())
    monkeypatch.setenv("PYTHONHASHSEED", "3")
    zygote.prestart()
    monkeypatch.delenv("PYTHONHASHSEED")
    mismatched = zygote._registry.early
    assert mismatched is not None
    try:
        assert asyncio.run(launch()) is ZygoteProcess
        assert not mismatched.alive and zygote._registry.server is not mismatched
    finally:
        server = zygote._registry.server
        if server is not None:
            server.lost("test over")
