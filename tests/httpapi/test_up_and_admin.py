"""`hologram up` announces the web UI (the ready link once the http plugin is ready, the URL in
`hologram status`), a busy port is a clear error, and the admin pass-through routes reach the kernel's
facilities (providers, plugins, memory) end to end, plugins added and removed with the page's two calls
(preview, then confirm) included.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from hologram.kernel.control import call
from mock_llm import MockLLM
from tests.e2e.kernel import HOLOGRAM, env
from tests.kit.manifests import write_manifest
from tests.kit.plugin_project import sdk_package
from tests.kit.wait import wait_until

from .kernel import HttpKernel

pytestmark = pytest.mark.slow


class Lines:
    """A process's stdout, read in a thread so a test can wait for a line without blocking on it."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        assert process.stdout is not None
        stream = process.stdout
        self.thread = threading.Thread(target=lambda: self.lines.extend(iter(stream.readline, "")), daemon=True)
        self.thread.start()

    def drain(self, process: subprocess.Popen[str]) -> None:
        """Wait for the process to exit and this reader to reach the end of its output, before anyone closes
        the pipe under the reader (``communicate`` does: the reader then dies on "readline of closed file")."""
        process.wait(timeout=60)
        self.thread.join(timeout=60)
        assert not self.thread.is_alive(), "the reader did not reach the end of the output"

    def wait_for(self, prefix: str) -> str:
        found: str = wait_until(
            lambda: next((line for line in self.lines if line.startswith(prefix)), None),
            timeout=60,
            what=f"a line starting {prefix!r}",
        )
        return found


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory, mock: MockLLM) -> Iterator[HttpKernel]:
    k = HttpKernel(tmp_path_factory.mktemp("upadmin"), mock)
    k.start()
    k.output = Lines(k.process)  # type: ignore[arg-type, attr-defined]
    yield k
    assert k.process is not None
    k.process.send_signal(signal.SIGINT)
    k.output.drain(k.process)  # type: ignore[attr-defined]
    k.stop()


def test_up_prints_the_ready_link_and_status_the_url(kernel: HttpKernel) -> None:
    url = kernel.url
    line = kernel.output.wait_for("web UI: ")  # type: ignore[attr-defined]
    assert line.strip() == f"web UI: {url}/?token={kernel.token}"
    status = kernel.hologram("status", "--data", str(kernel.data), check=True).stdout
    assert f"web UI {url}" in status and kernel.token not in status
    as_json = kernel.hologram("status", "--json", "--data", str(kernel.data), check=True).stdout
    assert json.loads(as_json)["web"] == {"url": url, "tls": False} and kernel.token not in as_json
    assert kernel.token not in kernel.logs()  # the link goes to the terminal only


def test_a_busy_port_is_a_clear_error(kernel: HttpKernel, tmp_path_factory: pytest.TempPathFactory) -> None:
    """A second kernel asked for the first one's port: the http plugin fails with one line naming the port
    and the fix — once on the terminal, once in the log, no traceback, no restart (issue 41 item 6; it was
    four tracebacks). Mutation checked: `PortInUse` an ``OSError`` again (not `StartRefused`) — the plugin
    crashes four times, with a traceback each; the supervisor treating `START_REFUSED` as retryable — four
    lines and restarts."""
    taken = kernel.info()["port"]  # the first kernel's port: a second kernel asked for it cannot have it
    data = tmp_path_factory.mktemp("busy") / "data"
    data.mkdir()
    (data / "settings.toml").write_text((kernel.data / "settings.toml").read_text())
    (data / "settings.toml").chmod(0o600)
    process = subprocess.Popen(
        [*HOLOGRAM, "up", "--port", str(taken), "--lock", str(kernel.lock), "--data", str(data)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env(),
        cwd=kernel.root,
    )
    try:
        lines = Lines(process)
        line = wait_until(
            lambda: next((x for x in lines.lines if "http" in x and "is in use" in x), None),
            timeout=60,
            what="the http plugin's start failing on the busy port",
        )
        assert f"port {taken} is in use: hologram up --port N, or [plugins.http] port" in line
        assert not (data / "http.json").exists()
        http = wait_until(
            lambda: {p["name"]: p for p in call(data, "status", timeout=5)["plugins"]}["http"],
            accept=lambda p: p["state"] == "failed", timeout=60, what="http failed",
        )  # fmt: skip
        assert http["restarts"] == 0, http  # the port stays taken: no restart loop
    finally:
        process.terminate()
        lines.drain(process)
    said = [x for x in lines.lines if "is in use" in x]
    assert len(said) == 1 and "http" in said[0] and "failed" in said[0], said  # one line on the terminal
    [log] = (data / "logs").glob("hologram-*.log")
    logged = log.read_text()
    assert logged.count("is in use") == 1 and "Traceback" not in logged, logged  # and one in the log
    with socket.create_connection(("127.0.0.1", taken), timeout=10):
        pass  # the first kernel still serves it


def test_the_admin_routes_reach_the_kernel(kernel: HttpKernel, mock: MockLLM) -> None:
    mock.reset()
    mock.script([{"content": "remember the blue teapot"}], default={"content": "pong"})
    with kernel.client() as client:
        [provider] = client.get("/api/providers").json()["providers"]
        assert provider["base_url"] == mock.base_url and provider["api_key_set"] is True
        assert client.get("/api/info").json()["providers"] == 1
        tested = client.post("/api/providers/test", json={"name": provider["name"]}).json()
        assert tested["ok"] is True and tested["error"] is None, tested
        failed = client.post("/api/providers/test", json={"provider": {**provider, "base_url": "http://127.0.0.1:9"}})
        assert failed.status_code == 200 and failed.json()["ok"] is False and failed.json()["error"]
        plugins = {p["name"]: p for p in client.get("/api/plugins").json()["plugins"]}
        assert plugins["http"]["state"] == "ready"
        # shell is `[start] lazy` (docs/manifest.md): no process before its first call; the restart route starts it
        assert (plugins["shell"]["state"], plugins["shell"]["pid"]) == ("stopped", None), plugins["shell"]
        assert client.post("/api/plugins/shell/restart").json() == {"ok": True}
        wait_until(
            lambda: {p["name"]: p for p in client.get("/api/plugins").json()["plugins"]}["shell"],
            accept=lambda p: p["state"] == "ready" and p["pid"] is not None,
            timeout=60,
            what="shell started by the restart",
        )
        log = client.get("/api/plugins/http/log", params={"lines": 50}).json()["lines"]
        assert any("listening on" in line for line in log), log
        started = client.post("/api/turns", json={"text": "the blue teapot", "session": "memo"}).json()
        wait_until(
            lambda: client.get("/api/sessions/memo").json()["events"],
            accept=lambda events: any(e["kind"] == "output" for e in events),
            timeout=60,
            what="the turn stored",
        )
        assert started["session"] == "memo"
        stats = client.get("/api/memory").json()
        assert stats["sessions"] >= 1 and {"l1", "l2"} <= set(stats)
        hits = wait_until(
            lambda: client.get("/api/memory/search", params={"q": "blue teapot"}).json()["hits"],
            timeout=60,
            what="memory search to find the turn",
        )
        assert any(h["session"] == "memo" for h in hits), hits
        renamed = client.patch("/api/sessions/memo", json={"title": "茶壶 teapot"})
        assert renamed.status_code == 200
        assert {s["id"]: s["title"] for s in client.get("/api/sessions").json()["sessions"]}["memo"] == "茶壶 teapot"


def test_plugins_are_added_and_removed_with_a_preview_then_a_confirmation(kernel: HttpKernel, tmp_path: Path) -> None:
    """The page's calls: a preview that changes nothing, a stale confirmation refused (422 with the kernel's
    words), the confirmed add started beside the others (their pids kept), the inventory listing it as added,
    then the same for the remove. A directory of manifests: the path that needs no pip (the browser test and
    tests/e2e/test_plugin_add_e2e.py install projects). Mutation checks (done): the route dropping `confirm`
    (every call a preview) turns it red (the stale confirmation answered 200), and so does the kernel's refusal
    left unmapped (a 502 `upstream`; test_security's malformed-bodies test too)."""
    code = tmp_path / "code"
    sdk_package(code / "gammaplug", "gammaplug", "gamma", "gamma_ping")
    directory = tmp_path / "gamma-manifests"
    write_manifest(directory, "gamma", run={"module": "gammaplug", "env": {"PYTHONPATH": str(code)}})
    lock = kernel.lock.read_bytes()

    def pids(client: httpx.Client) -> dict[str, int]:
        return {p["name"]: p["pid"] for p in client.get("/api/plugins").json()["plugins"]}

    with kernel.client() as client:
        running = pids(client)
        preview = client.post("/api/plugins/add", json={"target": str(directory)}).json()
        assert preview["applied"] is False and preview["plugins"] == ["gamma"], preview
        assert preview["changes"] == {"added": ["gamma"], "removed": [], "restarted": []}
        assert preview["summaries"][0]["may"][0]["kind"] == "process" and '+name = "gamma"' in preview["diff"]
        assert kernel.lock.read_bytes() == lock and "gamma" not in pids(client)
        stale = client.post("/api/plugins/add", json={"target": str(directory), "confirm": "sha256:stale"})
        assert stale.status_code == 422 and stale.json()["error"]["code"] == "refused"
        assert "not the one previewed" in stale.json()["error"]["message"]
        assert kernel.lock.read_bytes() == lock

        done = client.post("/api/plugins/add", json={"target": str(directory), "confirm": preview["confirm"]}).json()

        assert done["applied"] is True and done["reload"]["plugins"][0]["state"] == "ready", done
        rows = {r["name"]: r for r in client.get("/api/plugins/inventory").json()["plugins"]}
        assert rows["gamma"]["locked"] and rows["gamma"]["installed"] and rows["gamma"]["state"] == "ready"
        assert rows["gamma"]["added"] == {"kind": "path", "target": str(directory)}
        assert rows["shell"]["added"] is None and rows["shell"]["pid"] == running["shell"]
        assert {n: p for n, p in pids(client).items() if n != "gamma"} == running, "the others kept their pids"

        removing = client.post("/api/plugins/remove", json={"name": "gamma"}).json()
        assert removing["applied"] is False and removing["changes"]["removed"] == ["gamma"]
        assert "gamma" in pids(client)
        removed = client.post("/api/plugins/remove", json={"name": "gamma", "confirm": removing["confirm"]}).json()
        assert removed["applied"] is True and removed["reload"]["removed"] == ["gamma"]
        assert kernel.lock.read_bytes() == lock and pids(client) == running
        assert "gamma" not in {r["name"] for r in client.get("/api/plugins/inventory").json()["plugins"]}


def test_a_damaged_token_file_is_replaced_with_a_warning_and_the_link_works(
    tmp_path_factory: pytest.TempPathFactory, mock: MockLLM
) -> None:
    """A non-ASCII ``http-token`` crash-looped the http plugin (UnicodeDecodeError, never naming the file): now
    it is set aside as ``http-token.damaged``, the log names it, and the new token's link lets a browser in."""
    k = HttpKernel(tmp_path_factory.mktemp("badtoken"), mock)
    damaged = "ключ-доступа-испорчен-🙃".encode()
    (k.data / "http-token").write_bytes(damaged)
    k.start()
    try:
        url = k.url
        assert (k.data / "http-token.damaged").read_bytes() == damaged
        link = k.hologram("open", "--print", "--data", str(k.data), check=True).stdout.strip()
        assert link == f"{url}/?token={k.token}" and k.token.isascii()
        with httpx.Client() as browser:
            assert browser.get(link).status_code == 303
            assert browser.get(url + "/api/info").status_code == 200
        [http] = [p for p in k.status()["plugins"] if p["name"] == "http"]
        assert http["state"] == "ready" and http["restarts"] == 0, http
        warned = [line for line in k.logs().splitlines() if "http-token.damaged" in line]
        assert len(warned) == 1 and str(k.data / "http-token") in warned[0], warned
    finally:
        k.stop()
