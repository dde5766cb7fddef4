"""`hologram plugin add / remove / list` into a running graph, through real processes (issue 36 item 4).

One throwaway venv per module (tests/kit/venv.py): what pip installs lands there, never in the project's
`.venv`. A real `hologram up` runs from that venv on a lock of two SDK plugins forked by the zygote — alpha
(provides alpha.svc) and beta (requires it) — and the tests add and remove plugins with the real CLI and real
pip, offline (PIP_NO_INDEX; no build isolation: the [dev] hatchling builds the editable install). Each test
compares what must not change — the lock's bytes, the running plugins' pids and restarts, `pip list` — and
asserts that it reached the path it claims (pip did install and uninstall; the plugin really ran).
"""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hologram.kernel.control import call
from tests.e2e.kernel import wait_for_graph
from tests.kit.manifests import write_manifest
from tests.kit.plugin_project import SDK_PLUGIN, plugin_project, sdk_package, tool_toml
from tests.kit.venv import make_wheel, offline_env, throwaway_venv
from tests.kit.wait import wait_until

pytestmark = pytest.mark.slow


@dataclass
class Graph:
    root: Path
    python: Path
    data: Path
    lock: Path
    process: subprocess.Popen[str] | None = None

    def hologram(self, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.python), "-m", "hologram", *args, "--data", str(self.data)],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            cwd=self.root,
            env=offline_env(env),
            timeout=300,
        )

    def plugins(self) -> dict[str, dict[str, Any]]:
        return {p["name"]: p for p in call(self.data, "status")["plugins"]}

    def running(self) -> dict[str, tuple[int, int]]:
        """Each plugin's (pid, restarts): what must stay as it was for the plugins an add does not touch."""
        return {n: (p["pid"], p["restarts"]) for n, p in self.plugins().items()}

    def pip_list(self) -> list[dict[str, str]]:
        out = subprocess.run(
            [str(self.python), "-m", "pip", "list", "--format=json"],
            capture_output=True,
            text=True,
            check=True,
            env=offline_env(),
        ).stdout
        listed: list[dict[str, str]] = json.loads(out)
        return listed

    def record(self) -> list[dict[str, Any]]:
        path = self.data / "plugins-added.json"
        added: list[dict[str, Any]] = json.loads(path.read_text())["added"] if path.is_file() else []
        return added


def cmdline(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()


def gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"
    except FileNotFoundError:
        return True


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Graph]:
    root = tmp_path_factory.mktemp("plugadd")
    python = throwaway_venv(root / "venv")
    code = root / "code"
    sdk_package(code / "alphaplug", "alphaplug", "alpha", "alpha_echo")
    sdk_package(code / "betaplug", "betaplug", "beta", "beta_echo")
    manifests = root / "manifests"
    env = {"PYTHONPATH": str(code)}
    write_manifest(manifests, "alpha", run={"module": "alphaplug", "env": env}, provides=["alpha.svc"])
    write_manifest(manifests, "beta", run={"module": "betaplug", "env": env}, requires=["alpha.svc"])
    lock = root / "hologram.lock"
    # built-ins left out (a small graph), installed distributions in: that is where an added package comes from
    build = "from pathlib import Path; from hologram.plan.lock import build, Sources; "
    build += f"build(Path({str(lock)!r}), Sources(builtins=False, installed=True, paths=('manifests',)))"
    subprocess.run([str(python), "-c", build], check=True, cwd=root, env=offline_env())
    data = root / "data"
    process = subprocess.Popen(
        [str(python), "-m", "hologram", "up", "--lock", str(lock), "--data", str(data)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=root,
        env=offline_env(),
    )
    graph = Graph(root, python, data, lock, process)
    try:
        wait_for_graph(process, data)
        yield graph
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()


def test_a_plugin_requiring_a_missing_facility_is_refused_and_nothing_changes(graph: Graph) -> None:
    bad = plugin_project(graph.root, "bad", requires=["missing.facility"])
    lock, running, pips = graph.lock.read_bytes(), graph.running(), graph.pip_list()

    result = graph.hologram("plugin", "add", str(bad), "--yes")

    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    # the resolver's own error, naming the manifest and the facility
    assert f"{bad}/bad/plugin.toml: error: facility 'missing.facility' is required by bad" in result.stderr
    # pip did install it (the path under test), and uninstalled it again
    assert "nothing changed" in result.stderr and "pip uninstalled bad-plugin again" in result.stderr
    assert graph.lock.read_bytes() == lock
    assert graph.running() == running
    assert graph.pip_list() == pips
    assert graph.record() == []


def test_without_a_terminal_add_asks_for_yes_and_installs_nothing(graph: Graph) -> None:
    acme = plugin_project(graph.root, "acme", requires=["alpha.svc"])
    lock, pips = graph.lock.read_bytes(), graph.pip_list()

    result = graph.hologram("plugin", "add", str(acme))

    assert result.returncode == 1
    assert "there is no terminal to ask on" in result.stderr and "--yes" in result.stderr
    assert graph.lock.read_bytes() == lock and graph.pip_list() == pips


def test_no_at_the_terminal_uninstalls_again_and_changes_nothing(graph: Graph) -> None:
    import os

    acme = plugin_project(graph.root, "acme", requires=["alpha.svc"])
    lock, running, pips = graph.lock.read_bytes(), graph.running(), graph.pip_list()
    controller, terminal = os.openpty()  # a terminal: add asks instead of refusing
    try:
        os.write(controller, b"n\n")
        result = subprocess.run(
            [str(graph.python), "-m", "hologram", "plugin", "add", str(acme), "--data", str(graph.data)],
            stdin=terminal, capture_output=True, text=True, cwd=graph.root, env=offline_env(), timeout=300,
        )  # fmt: skip
    finally:
        os.close(controller)
        os.close(terminal)

    assert result.returncode == 1, result.stdout + result.stderr
    assert "add acme? [y/N]" in result.stdout and '+name = "acme"' in result.stdout  # asked, after the diff
    assert "not added; nothing changed (what pip installed is uninstalled again)" in result.stdout
    assert graph.lock.read_bytes() == lock and graph.running() == running and graph.pip_list() == pips
    assert graph.record() == []


def test_add_starts_the_plugin_without_restarting_the_others_and_remove_reverses_it(graph: Graph) -> None:
    acme = plugin_project(graph.root, "acme", requires=["alpha.svc", "kernel.sessions"])
    lock, running, pips = graph.lock.read_bytes(), graph.running(), graph.pip_list()
    assert set(running) == {"alpha", "beta"}
    assert "hologram.zygote.main" in cmdline(running["alpha"][0]), "the others are forks of the zygote"

    added = graph.hologram("plugin", "add", str(acme), "--yes")

    assert added.returncode == 0, added.stdout + added.stderr
    out = added.stdout
    assert "acme 0.1.0" in out and "requires  alpha.svc, kernel.sessions" in out  # what the manifest says
    assert "list and read your conversations (kernel.sessions)" in out  # what it may do
    assert '+name = "acme"' in out and '+"alpha.svc" = "alpha"' in out  # the lock's diff
    assert "starts in the running kernel: acme" in out
    now = graph.plugins()
    assert now["acme"]["state"] == "ready" and now["acme"]["tools"] == ["acme_ping"]
    pid = now["acme"]["pid"]
    assert f"acme: ready (pid {pid})" in out
    assert graph.running() == {**running, "acme": (pid, 0)}, "alpha and beta kept their pids and restarts"
    # installed editable after the zygote started: spawned as a fresh `python -m acme`, which sees the new .pth
    assert cmdline(pid).endswith("-m acme ")
    assert 'name = "acme"' in graph.lock.read_text()
    assert {"name": "acme-plugin", "version": "0.1.0"}.items() <= {
        k: v for p in graph.pip_list() if p["name"] == "acme-plugin" for k, v in p.items()
    }.items()
    listed = json.loads(graph.hologram("plugin", "list", "--json").stdout)
    row = next(p for p in listed["plugins"] if p["name"] == "acme")
    assert row["installed"] and row["locked"] and row["state"] == "ready" and row["pid"] == pid
    assert row["added"] == {"kind": "editable", "target": str(acme)}

    removed = graph.hologram("plugin", "remove", "acme", "--yes")

    assert removed.returncode == 0, removed.stdout + removed.stderr
    assert '-name = "acme"' in removed.stdout and "uninstalled: acme-plugin" in removed.stdout
    assert graph.lock.read_bytes() == lock, "the lock is byte for byte what it was before the add"
    assert graph.running() == running
    wait_until(lambda: gone(pid), timeout=30, what="acme's process to end")
    assert graph.pip_list() == pips
    assert graph.record() == []


def test_a_manifest_directory_is_added_to_the_lock_paths_and_removed(graph: Graph) -> None:
    code = graph.root / "gamma-code"
    sdk_package(code / "gammaplug", "gammaplug", "gamma", "gamma_ping")
    directory = graph.root / "gamma-manifests"
    write_manifest(directory, "gamma", run={"module": "gammaplug", "env": {"PYTHONPATH": str(code)}})
    lock, running = graph.lock.read_bytes(), graph.running()

    added = graph.hologram("plugin", "add", str(directory), "--yes")

    assert added.returncode == 0, added.stdout + added.stderr
    assert '+    "gamma-manifests",' in added.stdout  # the lock's manifest directories
    assert graph.plugins()["gamma"]["state"] == "ready"
    assert {n: v for n, v in graph.running().items() if n != "gamma"} == running
    removed = graph.hologram("plugin", "remove", "gamma", "--yes")
    assert removed.returncode == 0, removed.stdout + removed.stderr
    assert graph.lock.read_bytes() == lock and graph.running() == running


def test_a_package_is_installed_from_the_index_and_uninstalled(graph: Graph, tmp_path: Path) -> None:
    package = {
        "__init__.py": SDK_PLUGIN.format(name="delta", tool="delta_ping"),
        "__main__.py": "from deltaplug import plugin\n\nplugin.run()\n",
        "plugin.toml": '[plugin]\nname = "delta"\nversion = "0.3.0"\nrun = { module = "deltaplug" }\n\n'
        + tool_toml("delta_ping"),
    }
    make_wheel(tmp_path, "delta-plugin", "deltaplug", package, "[hologram.plugins]\ndelta = deltaplug\n", "0.3.0")
    index = {"PIP_FIND_LINKS": str(tmp_path)}  # a local index: pip resolves the version as from PyPI
    lock, running, pips = graph.lock.read_bytes(), graph.running(), graph.pip_list()

    added = graph.hologram("plugin", "add", "delta-plugin==0.3.0", "--yes", env=index)

    assert added.returncode == 0, added.stdout + added.stderr
    assert graph.plugins()["delta"]["state"] == "ready"
    assert any(p["name"] == "delta-plugin" and p["version"] == "0.3.0" for p in graph.pip_list())
    assert graph.record()[0]["distributions"] == [{"name": "delta-plugin", "version": "0.3.0"}]
    removed = graph.hologram("plugin", "remove", "delta", "--yes")
    assert removed.returncode == 0, removed.stdout + removed.stderr
    assert graph.lock.read_bytes() == lock and graph.running() == running and graph.pip_list() == pips


def test_the_admin_methods_preview_then_confirm_as_the_web_page_will(graph: Graph) -> None:
    """kernel.plugins add/remove/inventory over the control socket: a preview changes nothing, a stale
    confirmation is refused, the confirmed one is done and adopted."""
    from hologram.base.errors import HologramError

    echo = plugin_project(graph.root, "echo", requires=["alpha.svc"])
    lock, running, pips = graph.lock.read_bytes(), graph.running(), graph.pip_list()

    preview = call(graph.data, "admin/add", {"target": str(echo)}, timeout=300)

    assert preview["applied"] is False and preview["plugins"] == ["echo"]
    assert preview["summaries"][0]["requires"] == ["alpha.svc"] and preview["changes"]["added"] == ["echo"]
    assert '+name = "echo"' in preview["diff"]
    assert graph.lock.read_bytes() == lock and graph.pip_list() == pips and graph.running() == running
    with pytest.raises(HologramError, match="not the one previewed"):
        call(graph.data, "admin/add", {"target": str(echo), "confirm": "sha256:stale"}, timeout=300)
    assert graph.lock.read_bytes() == lock and graph.pip_list() == pips

    done = call(graph.data, "admin/add", {"target": str(echo), "confirm": preview["confirm"]}, timeout=300)

    assert done["applied"] is True and done["reload"]["added"] == ["echo"]
    assert done["reload"]["plugins"][0]["state"] == "ready"
    rows = {r["name"]: r for r in call(graph.data, "admin/inventory")["plugins"]}
    assert rows["echo"]["locked"] and rows["echo"]["state"] == "ready" and rows["echo"]["added"]["kind"] == "editable"
    assert {n: v for n, v in graph.running().items() if n != "echo"} == running

    removing = call(graph.data, "admin/remove", {"name": "echo"})
    assert removing["applied"] is False and "echo" in graph.plugins()
    removed = call(graph.data, "admin/remove", {"name": "echo", "confirm": removing["confirm"]}, timeout=300)
    assert removed["applied"] is True and removed["reload"]["removed"] == ["echo"]
    assert graph.lock.read_bytes() == lock and graph.running() == running and graph.pip_list() == pips
