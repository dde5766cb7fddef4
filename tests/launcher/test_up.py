"""`hologram up` as a user runs it: a real kernel process, its control socket, its plugins."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from hologram.kernel.control import call
from tests.kit.wait import wait_until
from tests.launcher.kit import ROOT, events, write_plugin

pytestmark = pytest.mark.slow
EXITED = "the kernel exited"  # what Kernel.wait sees instead of its condition once the process is gone
PERL_OK = shutil.which("perl") is not None and subprocess.run(["perl", "-MJSON::PP", "-e1"]).returncode == 0


def hologram(*args: str, cwd: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, "-m", "hologram", *args], cwd=cwd, capture_output=True, text=True, timeout=60
    )
    if check and result.returncode != 0:
        raise AssertionError(f"hologram {' '.join(args)} failed: {result.stderr}")
    return result


class Kernel:
    def __init__(self, directory: Path, *extra: str) -> None:
        self.directory = directory
        self.data = directory / "data"
        env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
        self.output = (directory / "up.out").open("w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "hologram", "up", "--port", "0", "--data", str(self.data), *extra],
            cwd=directory,
            stdout=self.output,
            stderr=subprocess.STDOUT,
            env=env,
        )

    def status(self) -> dict[str, Any]:
        result: dict[str, Any] = call(self.data, "status")
        return result

    def plugin(self, name: str) -> dict[str, Any]:
        return next(p for p in self.status()["plugins"] if p["name"] == name)

    def wait(self, predicate: Any, timeout: float = 30, what: str = "the kernel's condition") -> None:
        def exited_or() -> Any:
            return EXITED if self.process.poll() is not None else predicate()

        try:
            # an exception is "not yet": the socket is not there yet, the log not written yet
            outcome = wait_until(exited_or, timeout=timeout, what=what, retry_on=(Exception,))
        except AssertionError as exc:
            raise AssertionError(f"{exc}; output:\n{self.text()}") from None
        if outcome is EXITED:
            raise AssertionError(f"kernel exited: {self.text()}")

    def wait_state(self, name: str, state: str, timeout: float = 30) -> dict[str, Any]:
        self.wait(lambda: self.plugin(name)["state"] == state, timeout, f"{name} to be {state}")
        return self.plugin(name)

    def text(self) -> str:
        if not self.output.closed:
            self.output.flush()
        return (self.directory / "up.out").read_text()

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                # a failure bound: after "kernel stopped" the process still waits for its start-up loads (jieba,
                # the embedding model) to finish, which took 22 s on a busy 2-core machine
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.output.close()
        return self.process.returncode


@pytest.fixture
def up(tmp_path: Path) -> Iterator[Any]:
    started: list[Kernel] = []

    def start(*extra: str) -> Kernel:
        hologram("build", "--no-discover", "-m", ".", cwd=tmp_path)
        kernel = Kernel(tmp_path, *extra)
        started.append(kernel)
        return kernel

    yield start
    for kernel in started:
        kernel.stop()


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead for our purpose; /proc tells the difference.
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split(")")[-1].split()[0] != "Z"


def test_status_json_restart_and_clean_stop(up: Any, tmp_path: Path) -> None:
    write_plugin(tmp_path, "alpha", provides=["alpha.f"])
    write_plugin(tmp_path, "beta", requires=["alpha.f"])
    kernel = up()
    kernel.wait_state("beta", "ready")
    status = kernel.status()
    assert status["kernel"]["pid"] == kernel.process.pid
    alpha = kernel.plugin("alpha")
    assert {"name", "state", "pid", "restarts", "provides", "waiting_on"} <= set(alpha)
    assert alpha["provides"] == ["alpha.f"] and alpha["restarts"] == 0
    cli = hologram("status", "--json", "--data", str(kernel.data), cwd=tmp_path)
    assert json.loads(cli.stdout)["plugins"][0]["name"] == "alpha"
    table = hologram("status", "--data", str(kernel.data), cwd=tmp_path).stdout
    assert "alpha" in table and "ready" in table
    old_pid = alpha["pid"]
    hologram("plugin", "restart", "alpha", "--data", str(kernel.data), cwd=tmp_path)
    restarted = kernel.wait_state("alpha", "ready")
    assert restarted["pid"] != old_pid and restarted["restarts"] == 1
    missing = hologram("plugin", "restart", "nope", "--data", str(kernel.data), cwd=tmp_path, check=False)
    assert missing.returncode == 1 and "no plugin named 'nope'" in missing.stderr
    pids = [kernel.plugin(n)["pid"] for n in ("alpha", "beta")]
    assert kernel.stop() == 0
    assert not any(alive(pid) for pid in pids)
    assert "Hologram stopped." in kernel.text()
    logs = list((kernel.data / "logs").glob("hologram-*.log"))
    assert len(logs) == 1 and "kernel stopped" in logs[0].read_text()


STUCK = Path(__file__).with_name("stuckplug.py")


def test_settings_plugins_table_overrides_manifest_config(up: Any, tmp_path: Path) -> None:
    write_plugin(tmp_path, "alpha", provides=["alpha.f"], config={"colour": "red", "size": 1})
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "settings.toml").write_text('[plugins.alpha]\ncolour = "blue"\n\n[plugins.ghost]\nx = 1\n')
    kernel = up()
    kernel.wait_state("alpha", "ready")
    start = next(e for e in events(tmp_path) if e["plugin"] == "alpha" and e["event"] == "start")
    assert start["config"]["colour"] == "blue", "the user's settings win"
    assert start["config"]["size"] == 1, "manifest defaults stay for keys the user did not set"
    log = next((kernel.data / "logs").glob("*.log")).read_text()
    assert "[plugins.ghost] configures a plugin that is not in the lock; ignored" in log


def test_kill_9_of_the_kernel_leaves_no_plugin_behind(up: Any, tmp_path: Path) -> None:
    """`wedged` never reads stdin, so only PR_SET_PDEATHSIG can end it (mutation: without prctl, red)."""
    write_plugin(tmp_path, "orphan-a", provides=["a.f"])
    write_plugin(tmp_path, "orphan-b", requires=["a.f"])
    write_plugin(
        tmp_path, "wedged", command=[sys.executable, str(STUCK)], env={"STUCK_PID_FILE": str(tmp_path / "stuck.pid")}
    )
    kernel = up()
    kernel.wait_state("orphan-b", "ready")
    kernel.wait_state("wedged", "ready")
    pids = [kernel.plugin(n)["pid"] for n in ("orphan-a", "orphan-b", "wedged")]
    assert all(alive(pid) for pid in pids)
    kernel.process.kill()
    kernel.process.wait()
    wait_until(  # a failure bound: they die at once, or never without PR_SET_PDEATHSIG
        lambda: [pid for pid in pids if alive(pid)],
        accept=lambda living: not living,
        timeout=30,
        what="the plugin processes to die with the kernel",
    )
    assert not any(alive(pid) for pid in pids), "plugin processes outlived the kernel"


def logged_at(log: str, message: str) -> float:
    """When the kernel logged ``message`` (its log's timestamp, in seconds)."""
    line = next(line for line in log.splitlines() if message in line)
    return datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()


def test_shutdown_escalates_to_sigkill_for_a_wedged_plugin(up: Any, tmp_path: Path) -> None:
    """The escalation is timed on the kernel's own log, from "stopping" to "kernel stopped": the process exits
    only after its start-up loads (jieba, the embedding model) have finished as well, and how long those take
    depends on the machine (up to 22 s under load), not on the shutdown."""
    write_plugin(
        tmp_path, "wedged", command=[sys.executable, str(STUCK)], env={"STUCK_PID_FILE": str(tmp_path / "stuck.pid")}
    )
    kernel = up()
    pid = kernel.wait_state("wedged", "ready")["pid"]
    assert kernel.stop() == 0
    assert not alive(pid)
    log = next((kernel.data / "logs").glob("*.log")).read_text()
    stopping = logged_at(log, "hologram.kernel: stopping")
    term = logged_at(log, "[wedged] did not exit after shutdown; sending SIGTERM")
    kill = logged_at(log, "[wedged] did not exit after SIGTERM; sending SIGKILL")
    stopped = logged_at(log, "hologram.kernel: kernel stopped")
    assert stopping <= term <= kill <= stopped
    assert term - stopping >= 3.0 and kill - term >= 2.0, "shutdown grace (3 s), then SIGTERM grace (2 s)"
    assert 4.0 < stopped - stopping < 15, "shutdown grace (3 s), then SIGTERM grace (2 s), then SIGKILL"


def test_stale_lock_is_refused_with_the_fix(up: Any, tmp_path: Path) -> None:
    write_plugin(tmp_path, "alpha", provides=["alpha.f"])
    hologram("build", "--no-discover", "-m", ".", cwd=tmp_path)
    write_plugin(tmp_path, "alpha", provides=["alpha.f"], requires=["kernel.llm"])
    refused = hologram("up", "--data", "data", cwd=tmp_path, check=False)
    assert refused.returncode == 1
    assert "error: the lock is stale: the manifest of alpha changed since it was built" in refused.stderr
    assert "hint: run `hologram build` (or `hologram up --build`)" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_plain_up_starts_what_the_lock_holds_and_discovers_nothing(tmp_path: Path) -> None:
    """A manifest that appears after the build (a plugin installed since) is not started, and does not make the
    lock stale: `up` reads only the manifests the lock names, to compare their hashes (issue 12). With the
    former check — resolve the graph again from the lock's sources — this start was refused as stale."""
    write_plugin(tmp_path, "alpha", provides=["alpha.f"])
    hologram("build", "--no-discover", "-m", ".", cwd=tmp_path)
    write_plugin(tmp_path, "newcomer", requires=["alpha.f"])
    kernel = Kernel(tmp_path)
    try:
        kernel.wait_state("alpha", "ready")
        assert "newcomer" not in {p["name"] for p in call(kernel.data, "status")["plugins"]}
    finally:
        kernel.stop()


@pytest.mark.skipif(not PERL_OK, reason="needs perl with JSON::PP for the other-language plugin")
def test_a_plugin_in_another_language_speaks_the_documented_protocol(up: Any, tmp_path: Path) -> None:
    script = tmp_path / "rawplug.pl"
    shutil.copy(Path(__file__).with_name("rawplug.pl"), script)
    write_plugin(tmp_path, "perl", provides=["perl.upper"], command=["perl", "./rawplug.pl"])
    write_plugin(tmp_path, "user", requires=["perl.upper"])
    kernel = up()
    kernel.wait_state("user", "ready")
    assert kernel.plugin("perl")["tools"] == ["shout"]
    log = next((kernel.data / "logs").glob("*.log")).read_text()
    assert "[perl] perl plugin initialised" in log, "stderr is the plugin's log, prefixed"


@pytest.mark.skipif(not PERL_OK, reason="needs perl with JSON::PP")
def test_protocol_version_mismatch_is_refused_clearly(up: Any, tmp_path: Path) -> None:
    shutil.copy(Path(__file__).with_name("rawplug.pl"), tmp_path / "rawplug.pl")
    write_plugin(
        tmp_path, "future", provides=["perl.upper"], command=["perl", "./rawplug.pl"], env={"RAWPLUG_PROTOCOL": "2"}
    )
    kernel = up()
    failed = kernel.wait_state("future", "failed")
    assert failed["reason"] == (
        "start failed: speaks protocol 2, this kernel speaks 1: install matching versions of hologram and the plugin"
    )
    assert failed["restarts"] == 0, "a version mismatch is not retried"


def test_inproc_plugin_arena_payload_and_events(up: Any, tmp_path: Path) -> None:
    (tmp_path / "inside.toml").write_text(
        '[plugin]\nname = "inside"\nversion = "0.1.0"\nrun = { inproc = "tests.launcher.inproc_demo" }\n'
        '[[tools]]\nname = "whereami"\ndescription = "Where does this run"\n'
    )
    write_plugin(tmp_path, "outside", provides=["out.f"])
    kernel = up()
    kernel.wait_state("inside", "ready")
    kernel.wait_state("outside", "ready")
    assert kernel.plugin("inside")["pid"] == kernel.process.pid, "in-process plugins run in the kernel"
    assert kernel.plugin("outside")["pid"] != kernel.process.pid
    assert events(tmp_path)[0]["plugin"] == "outside"


def test_watch_rebuilds_on_manifest_change_and_restarts_only_affected(up: Any, tmp_path: Path) -> None:
    for name in ("base", "leaf", "other"):
        shutil.copy(Path(__file__).with_name("testplug.py"), tmp_path / f"{name}_plug.py")
    write_plugin(tmp_path, "base", provides=["base.f"], command=[sys.executable, "./base_plug.py"])
    write_plugin(tmp_path, "leaf", requires=["base.f"], command=[sys.executable, "./leaf_plug.py"])
    write_plugin(tmp_path, "other", provides=["other.f"], command=[sys.executable, "./other_plug.py"])
    kernel = up("--watch")
    for name in ("base", "leaf", "other"):
        kernel.wait_state(name, "ready")
    pids = {n: kernel.plugin(n)["pid"] for n in ("base", "leaf", "other")}
    # the watcher logs "watching" and registers its watches in the same step, before any edit below
    kernel.wait(lambda: "hologram.watch: watching " in next((kernel.data / "logs").glob("*.log")).read_text())
    # An invalid edit is reported and the running graph kept.
    broken = (tmp_path / "leaf.toml").read_text()
    (tmp_path / "leaf.toml").write_text(broken.replace('requires = ["base.f"]', 'requires = ["missing.f"]'))
    kernel.wait(lambda: "manifest change rejected, the running graph is kept" in kernel.text(), timeout=15)
    assert {n: kernel.plugin(n)["pid"] for n in pids} == pids
    # A valid edit of base restarts base and its dependent leaf, and leaves other alone.
    (tmp_path / "leaf.toml").write_text(broken)
    base = (tmp_path / "base.toml").read_text()
    (tmp_path / "base.toml").write_text(base.replace("requires = []", 'requires = ["kernel.events"]'))
    kernel.wait(
        lambda: kernel.plugin("base")["pid"] not in (None, pids["base"]) and kernel.plugin("base")["state"] == "ready",
        timeout=20,
    )
    kernel.wait_state("leaf", "ready")
    assert kernel.plugin("leaf")["pid"] != pids["leaf"]
    assert kernel.plugin("other")["pid"] == pids["other"]
    # A code change restarts exactly that plugin (and its dependents).
    other_pid = pids["other"]
    (tmp_path / "other_plug.py").write_text((tmp_path / "other_plug.py").read_text() + "\n# touched\n")
    kernel.wait(
        lambda: kernel.plugin("other")["pid"] not in (None, other_pid) and kernel.plugin("other")["state"] == "ready",
        timeout=20,
    )


def test_up_frozen_starts_the_graph_from_the_lock_alone(up: Any, tmp_path: Path) -> None:
    """The manifests are deleted after `hologram build`: config defaults, tools and the run spec all come from
    the lock. Mutation check (done): dropping the lock's config from `initialize` (alpha then has no
    `events_file` and records nothing) turns this red."""
    tool = '[[tools]]\nname = "alpha_tool"\ndescription = "A tool from the lock"\n'
    write_plugin(tmp_path, "alpha", provides=["alpha.f"], extra=tool, config={"greeting": "from-the-lock"})
    write_plugin(tmp_path, "beta", requires=["alpha.f"])
    hologram("build", "--no-discover", "-m", ".", cwd=tmp_path)
    for name in ("alpha", "beta"):
        (tmp_path / f"{name}.toml").unlink()
    refused = hologram("up", "--data", str(tmp_path / "data"), cwd=tmp_path, check=False)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert "alpha.toml: error: the manifest of plugin 'alpha' is missing" in refused.stderr
    assert "hologram up --frozen" in refused.stderr
    assert "hologram build" in refused.stderr
    kernel = Kernel(tmp_path, "--frozen")
    try:
        kernel.wait_state("beta", "ready")
        assert "alpha_tool" in kernel.plugin("alpha")["tools"], "the manifest's tool, from the lock"
        start = next(e for e in events(tmp_path) if e["plugin"] == "alpha" and e["event"] == "start")
        assert start["config"]["greeting"] == "from-the-lock", "the config defaults came from the lock"
    finally:
        assert kernel.stop() == 0


def test_up_frozen_refuses_build_and_watch(tmp_path: Path) -> None:
    result = hologram("up", "--frozen", "--build", cwd=tmp_path, check=False)
    assert result.returncode != 0 and "cannot be combined" in result.stderr and "Traceback" not in result.stderr
