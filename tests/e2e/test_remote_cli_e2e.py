"""End to end, the remote CLI: `hologram ask/chat --url` and `hologram open` against a real `hologram up --port 0`
serving the http plugin, the strict DeepSeek mock as the model, real HTTP on loopback.

Covered:
- `ask --url` answers (token from HOLOGRAM_TOKEN), the session id on stderr, the turn run by the http plugin;
  the docs' example client (docs/examples/web/remote_client.py) answers too.
- `chat --url --token-file` in a real pseudo-terminal: a tool call that needs approval is asked at the prompt,
  "y" runs it, the chat goes on.
- `ask --url` not on a terminal: the approval is refused at once with the reason (not left to time out).
- a dropped connection mid-turn: a TCP relay between client and server cuts the event stream in the middle
  of an SSE event after the third content delta; the client reconnects with Last-Event-ID and prints the
  answer exactly once, nothing lost, nothing repeated.
- Ctrl-C of `ask --url` mid-turn cancels the turn at the server (the call closed, the session valid).
- a wrong token: the clear error, exit 1, no traceback, the token not echoed (ask and chat).
- `open --print`: the link works (GET → the cookie is set → 200).
- https (a self-signed certificate): refused with a hint until SSL_CERT_FILE names it, then `ask` answers.

Mutation check (done): `HttpTurnClient._read_once` not sending Last-Event-ID on reconnect → both resume tests
are red (the reconnection comes after the turn ended; without the header the server replays nothing of a
finished turn, the deltas after the cut never arrive and the client waits: the `ask` times out).
"""

from __future__ import annotations

import contextlib
import json
import select
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from hologram.api.turn import TURN_API_VERSION
from hologram.clients.http_client import TOKEN_REFUSED
from mock_llm import MockLLM
from tests.kit.manifests import copy_shipped
from tests.kit.tls import self_signed
from tests.kit.wait import wait_until

from .kernel import HOLOGRAM, E2EKernel, env, wait_for_graph
from .test_agent_interactive import (
    MANIFEST,
    PLUGIN,
    Terminal,
    call,
    events_of,
    result_of,
    session_in,
    valid,
    wait_marker,
)

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


class RemoteKernel(E2EKernel):
    """The e2e kernel with the http plugin on an ephemeral port; `url` and `token` once it listens."""

    url = ""
    token = ""

    def start(self) -> None:
        self.process = subprocess.Popen(
            [*HOLOGRAM, "up", "--lock", str(self.lock), "--data", str(self.data), "--port", "0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env(),
            cwd=self.root,
        )
        wait_for_graph(self.process, self.data)
        info = wait_until(
            lambda: json.loads((self.data / "http.json").read_text()),
            timeout=30, what="http.json", retry_on=(OSError, ValueError),
        )  # fmt: skip
        self.url = str(info["url"])
        self.token = (self.data / "http-token").read_text().strip()

    def remote(self, *args: str, token: str | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        environment = env() | {"HOLOGRAM_TOKEN": self.token if token is None else token}
        return subprocess.run(
            [*HOLOGRAM, *args], capture_output=True, text=True, env=environment, cwd=self.root, timeout=timeout,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory, mock: MockLLM) -> Iterator[RemoteKernel]:
    root = tmp_path_factory.mktemp("remote")
    k = RemoteKernel(root, [mock])
    code = root / "code"
    code.mkdir()
    (code / "agent_interactive_plugin.py").write_text(PLUGIN)
    markers = root / "markers"
    markers.mkdir()
    (root / "manifests" / "e2e-interactive.toml").write_text(MANIFEST.format(path=code, markers=markers))
    copy_shipped("http", root / "manifests")
    k.hologram("build", "--no-discover", "-m", str(root / "manifests"), "-o", str(k.lock), check=True)
    k.start()
    yield k
    k.stop()


@pytest.fixture(autouse=True)
def fresh(mock: MockLLM) -> None:
    mock.reset()


def test_ask_over_the_url_answers(kernel: RemoteKernel, mock: MockLLM) -> None:
    mock.script([{"reasoning_content": "thinking it over", "content": "hello from afar"}])
    result = kernel.remote("ask", "--url", kernel.url, "hello?")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "hello from afar"
    assert "thinking it over" in result.stderr  # reasoning on stderr: stdout is not a terminal
    session = session_in(result.stderr)
    events = events_of(kernel, session)
    assert [e["kind"] for e in events][:1] == ["input"]
    assert mock.rejections == []
    assert kernel.token not in result.stdout + result.stderr


def test_the_docs_example_client_answers(kernel: RemoteKernel, mock: MockLLM) -> None:
    import asyncio
    import importlib.util

    spec = importlib.util.spec_from_file_location("remote_client", ROOT / "docs/examples/web/remote_client.py")
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    mock.script([{"reasoning_content": "r", "content": "the example works"}])
    assert asyncio.run(example.ask(kernel.url, kernel.token, "hi")) == "the example works"


def test_chat_over_the_url_asks_for_approval_at_the_prompt(kernel: RemoteKernel, mock: MockLLM, tmp_path: Path) -> None:
    mock.script(
        [
            {"reasoning_content": "needs approval", "tool_calls": [call("rg1", "guarded", x=5)]},
            {"reasoning_content": "report", "content": "all done"},
            {"reasoning_content": "again", "content": "second answer"},
        ]
    )
    token_file = tmp_path / "token"
    token_file.write_text(kernel.token + "\n")
    terminal = Terminal([*HOLOGRAM, "chat", "--url", kernel.url, "--token-file", str(token_file)], kernel.root)
    try:
        terminal.expect("you> ")
        terminal.type("run the guarded tool\n")
        screen = terminal.expect("N = no]")
        assert 'e2e-interactive asks to run: guarded: {"x":5}' in screen
        terminal.type("y\n")
        terminal.expect("all done")
        terminal.expect("you> ")
        terminal.type("and again\n")
        terminal.expect("second answer")
        terminal.expect("you> ")
        terminal.type("\x04")  # Ctrl-D leaves
        assert terminal.wait() == 0, terminal.buffer
    finally:
        terminal.close()
    sessions = httpx.get(f"{kernel.url}/api/sessions", headers={"Authorization": f"Bearer {kernel.token}"})
    assert sessions.status_code == 200
    stored = (events_of(kernel, s["id"]) for s in sessions.json()["sessions"])
    events = next(ev for ev in stored if any(e.get("call_id") == "rg1" for e in ev))
    assert valid(events) == []
    assert result_of(events, "rg1")["content"] == "guarded ran with 5"
    assert [e["kind"] for e in events].count("input") == 2  # both lines in one session
    assert mock.rejections == []


def test_an_approval_answered_elsewhere_ends_the_prompt(kernel: RemoteKernel, mock: MockLLM, tmp_path: Path) -> None:
    """The page (here: another API client) approves while the terminal asks: the prompt gives way, says who
    decided, and the turn goes on — the terminal is not left asking a question already answered.
    Mutation check (done): ask_cmd awaiting the prompt alone (as before) → red ("approved by" never shows)."""
    import asyncio

    from hologram.api import turn as api
    from hologram.clients.http_client import HttpTurnClient

    mock.script(
        [
            {"reasoning_content": "needs approval", "tool_calls": [call("rg3", "guarded", x=7)]},
            {"reasoning_content": "report", "content": "done after the page said yes"},
        ]
    )
    token_file = tmp_path / "token"
    token_file.write_text(kernel.token)
    terminal = Terminal([*HOLOGRAM, "chat", "--url", kernel.url, "--token-file", str(token_file)], kernel.root)

    async def approve_from_elsewhere() -> None:
        async with await HttpTurnClient.connect(kernel.url, kernel.token, client="page") as other:
            newest = max(await other.sessions(), key=lambda s: s.get("updated") or "")
            async for event in await other.watch(newest["id"], after=0):
                if isinstance(event, api.ApprovalRequested) and event.call_id == "rg3":
                    assert await other.approve(event, True, "approved in the page")
                    return

    try:
        terminal.expect("you> ")
        terminal.type("run the guarded tool\n")
        terminal.expect("N = no]")
        asyncio.run(asyncio.wait_for(approve_from_elsewhere(), 30))
        terminal.expect("(approved by")
        terminal.expect(": approved in the page)")  # who decided, and why
        terminal.expect("done after the page said yes")
        terminal.expect("you> ")
        terminal.type("\x04")
        assert terminal.wait() == 0, terminal.buffer
    finally:
        terminal.close()


def test_ask_over_the_url_not_on_a_terminal_refuses_approvals_at_once(kernel: RemoteKernel, mock: MockLLM) -> None:
    mock.script(
        [
            {"reasoning_content": "needs approval", "tool_calls": [call("rg2", "guarded", x=1)]},
            {"reasoning_content": "report", "content": "refused, ok"},
        ]
    )
    result = kernel.remote("ask", "--url", kernel.url, "run the guarded tool")
    assert result.returncode == 0, result.stderr
    assert "allow?" not in result.stderr
    events = events_of(kernel, session_in(result.stderr))
    assert "nobody to ask" in result_of(events, "rg2")["content"]


def test_ctrl_c_of_ask_over_the_url_cancels_the_turn_at_the_server(kernel: RemoteKernel, mock: MockLLM) -> None:
    """Over HTTP a turn outlives its connection, so Ctrl-C must cancel it explicitly (POST …/cancel)."""
    mock.script([{"reasoning_content": "wait", "tool_calls": [call("rs1", "slow", seconds=30)]}])
    token_file = kernel.root / "token"
    token_file.write_text(kernel.token)
    terminal = Terminal(
        [*HOLOGRAM, "ask", "--url", kernel.url, "--token-file", str(token_file), "take your time"], kernel.root
    )
    try:
        wait_marker(kernel, "rs1")
        terminal.type("\x03")
        assert terminal.wait() == 130, terminal.buffer
    finally:
        terminal.close()
    events = events_of(kernel, session_in(terminal.buffer))
    assert valid(events) == []
    assert "cancelled" in result_of(events, "rs1")["content"]


class CuttingRelay:
    """A TCP relay to the server that, once, cuts a connection in the middle of the SSE event that carries
    the ``cut_at``-th content delta (the bytes before the cut reach the client, the rest never do)."""

    def __init__(self, upstream: str, cut_at: int) -> None:
        host, port = upstream.removeprefix("http://").split(":")
        self.upstream = (host, int(port))
        self.cut_at = cut_at
        self.cut = False
        self.connections = 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.netloc = self.url.removeprefix("http://").encode()
        self.upstream_netloc = upstream.removeprefix("http://").encode()
        self.threads: list[threading.Thread] = []
        self.sockets: list[socket.socket] = []
        self.closing = False
        self.gate = threading.Event()  # new connections wait for it; `hold_after_cut`: closed at the cut
        self.gate.set()
        self.hold_after_cut = False
        accept = threading.Thread(target=self._accept, daemon=True)
        accept.start()
        self.threads.append(accept)

    def _accept(self) -> None:
        while not self.closing:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            self.gate.wait()
            server = socket.create_connection(self.upstream)
            self.sockets += [client, server]
            thread = threading.Thread(target=self._pipe, args=(client, server), daemon=True)
            thread.start()
            self.threads.append(thread)

    def _pipe(self, client: socket.socket, server: socket.socket) -> None:
        try:
            self._relay(client, server)
        except (OSError, ValueError):  # ValueError: stop() closed a socket while select() held it (fd -1)
            pass
        finally:  # both ends closed: after a cut the client sees its stream break mid-event
            for sock in (client, server):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                    sock.close()

    def _relay(self, client: socket.socket, server: socket.socket) -> None:
        deltas = 0
        while True:
            ready, _, _ = select.select([client, server], [], [], 1.0)
            if self.closing:
                return
            for sock in ready:
                data = sock.recv(65536)
                if not data:
                    return
                if sock is client:  # the server checks Host (DNS rebinding): name the server, not the relay
                    server.sendall(data.replace(self.netloc, self.upstream_netloc))
                    continue
                if not self.cut and b'"content.delta"' in data:
                    at = self._cut_point(data, deltas)
                    deltas += data.count(b'"content.delta"')
                    if at is not None:
                        if self.hold_after_cut:
                            self.gate.clear()
                        self.cut = True
                        client.sendall(data[:at])
                        return
                client.sendall(data)

    def _cut_point(self, data: bytes, seen: int) -> int | None:
        """The offset in the middle of the ``cut_at``-th delta's event, when it is in ``data``."""
        start = 0
        for _ in range(self.cut_at - seen):
            found = data.find(b'"content.delta"', start)
            if found < 0:
                return None
            start = found + 1
        return start + 5

    def close(self) -> None:
        self.closing = True
        self.gate.set()
        self.listener.close()
        for sock in self.sockets:
            with contextlib.suppress(OSError):
                sock.close()


def test_a_dropped_connection_mid_turn_resumes_without_a_lost_or_repeated_delta(
    kernel: RemoteKernel, mock: MockLLM
) -> None:
    answer = "".join(f"word{i:02d} " for i in range(40)).strip()  # 4-character chunks: many deltas
    mock.script([{"reasoning_content": "long answer", "content": answer}])
    relay = CuttingRelay(kernel.url, cut_at=3)
    try:
        result = kernel.remote("ask", "--url", relay.url, "say it all")
    finally:
        relay.close()
    assert result.returncode == 0, result.stderr
    assert relay.cut, "the relay never cut the stream: the test did not reach the resume path"
    assert relay.connections >= 2  # the first one (info, turns, events; kept alive) and the resumed stream
    assert result.stdout.strip() == answer


def test_the_client_resumes_after_the_last_seq_it_saw(kernel: RemoteKernel, mock: MockLLM) -> None:
    """The same cut, with the client in-process, and the relay holding the reconnection until the turn has
    ended at the server: only ``Last-Event-ID`` gets the rest then (without it the server replays nothing of a
    finished turn). One reconnect, every seq once, in order, the deltas whole."""
    import asyncio

    from hologram.api import turn as api
    from hologram.clients.http_client import HttpTurnClient
    from tests.kit.wait import wait_until_async

    answer = "".join(f"part{i:02d} " for i in range(30)).strip()
    mock.script([{"reasoning_content": "long answer", "content": answer}])
    relay = CuttingRelay(kernel.url, cut_at=4)
    relay.hold_after_cut = True

    def ended(session: str) -> bool:
        return any(e["kind"] == "output" for e in events_of(kernel, session))

    async def main() -> tuple[list[Any], int]:
        async with await HttpTurnClient.connect(relay.url, kernel.token, resume_within_s=5) as client:
            turn = await client.start("say it all")
            assert turn.session is not None
            await wait_until_async(lambda: relay.cut, timeout=30, what="the relay to cut the stream")
            await wait_until_async(lambda: ended(str(turn.session)), timeout=30, what="the turn to end")
            relay.gate.set()
            await asyncio.wait_for(turn.result(), 60)  # a failure bound: a lost tail would wait forever
            return turn.events, client.reconnects

    try:
        events, reconnects = asyncio.run(main())
    finally:
        relay.close()
    assert relay.cut and reconnects == 1
    seqs = [e.seq for e in events]
    assert seqs == sorted(set(seqs)), seqs
    assert "".join(e.text for e in events if isinstance(e, api.ContentDelta)) == answer
    assert isinstance(events[0], api.TurnStarted) and isinstance(events[-1], api.TurnEnded)


def test_a_wrong_token_is_a_clear_error(kernel: RemoteKernel) -> None:
    for command in ("ask", "chat"):
        args = [command, "--url", kernel.url] + (["hello"] if command == "ask" else [])
        result = kernel.remote(*args, token="not-the-token")
        assert result.returncode == 1, result.stderr
        assert TOKEN_REFUSED in result.stderr
        assert "Traceback" not in result.stderr and "not-the-token" not in result.stderr


def test_an_unreachable_url_is_named(kernel: RemoteKernel) -> None:
    with socket.create_server(("127.0.0.1", 0)) as reserved:
        port = reserved.getsockname()[1]
    result = kernel.remote("ask", "--url", f"http://127.0.0.1:{port}", "hello")
    assert result.returncode == 1
    assert f"cannot reach http://127.0.0.1:{port}" in result.stderr and "Traceback" not in result.stderr


def test_open_print_gives_a_link_that_works(kernel: RemoteKernel) -> None:
    result = kernel.hologram("open", "--print", "--data", str(kernel.data))
    assert result.returncode == 0, result.stderr
    link = result.stdout.strip()
    assert link == f"{kernel.url}/?token={kernel.token}"
    with httpx.Client() as browser:
        first = browser.get(link)
        assert first.status_code == 303
        assert "hologram_token" in first.headers.get("set-cookie", "")
        assert browser.cookies.get("hologram_token") == kernel.token
        info = browser.get(kernel.url + "/api/info")  # the cookie alone lets it in
        assert info.status_code == 200 and info.json()["turn_api"] == TURN_API_VERSION
        assert browser.get(kernel.url + "/").status_code != 401  # the page (200 once the static files land)
    assert httpx.get(kernel.url + "/api/info").status_code == 401  # and without the cookie: refused


def test_open_without_a_browser_prints_the_link_and_how_to_forward(kernel: RemoteKernel) -> None:
    environment = {k: v for k, v in env().items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    result = subprocess.run(
        [*HOLOGRAM, "open", "--data", str(kernel.data)], capture_output=True, text=True, env=environment,
        cwd=kernel.root, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"web UI: {kernel.url}/?token={kernel.token}"
    assert "ssh -L" in result.stderr


@pytest.fixture(scope="module")
def tls_kernel(tmp_path_factory: pytest.TempPathFactory, mock: MockLLM) -> Iterator[RemoteKernel]:
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command")
    root = tmp_path_factory.mktemp("remote-tls")
    k = RemoteKernel(root, [mock])
    copy_shipped("http", root / "manifests")
    k.hologram("build", "--no-discover", "-m", str(root / "manifests"), "-o", str(k.lock), check=True)
    cert, key = self_signed(root)
    settings = k.data / "settings.toml"
    settings.write_text(settings.read_text() + f'\n[plugins.http]\ntls_certfile = "{cert}"\ntls_keyfile = "{key}"\n')
    k.start()
    yield k
    k.stop()


def test_ask_over_https_trusts_the_certificate_named_by_ssl_cert_file(tls_kernel: RemoteKernel, mock: MockLLM) -> None:
    """The documented way to a kernel with a certificate of its own: SSL_CERT_FILE; without it the error says
    so (not a bare SSL traceback)."""
    assert tls_kernel.url.startswith("https://")
    refused = tls_kernel.remote("ask", "--url", tls_kernel.url, "hello")
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert "is not trusted here" in refused.stderr and "SSL_CERT_FILE" in refused.stderr
    mock.script([{"reasoning_content": "r", "content": "over tls"}])
    cert = str(tls_kernel.root / "cert.pem")
    environment = env() | {"HOLOGRAM_TOKEN": tls_kernel.token, "SSL_CERT_FILE": cert}
    result = subprocess.run(
        [*HOLOGRAM, "ask", "--url", tls_kernel.url, "hello"], capture_output=True, text=True, env=environment,
        cwd=tls_kernel.root, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "over tls"
