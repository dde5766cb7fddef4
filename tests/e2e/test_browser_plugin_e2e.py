"""The browser end to end: `hologram up` with the shipped browser plugin, the strict DeepSeek mock as the model.

The scripted model opens a form served on loopback (`[plugins.browser] allow_private = true` in settings),
types a name into its field and submits it with Enter, and answers from the page the form led to; the tool
results the model received are checked in the mock's last request. Stopping the kernel stops every Chromium
process the plugin started (found by the profile path in their command line, which all 8 of them carry).

Skipped without Chromium unless HOLOGRAM_REQUIRE_BROWSER=1.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from hologram.clients import TurnClient
from mock_llm import MockLLM
from tests.kit.manifests import copy_shipped
from tests.kit.providers import provider_toml, write_settings
from tests.kit.wait import wait_until
from tests.proctree import pids_with

from .kernel import E2EKernel

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("chromium") is None and os.environ.get("HOLOGRAM_REQUIRE_BROWSER") != "1",
        reason="no chromium on PATH",
    ),
]
PAGES = {
    "/form": "<title>Greeter</title><form action='/hello'><input name='name' placeholder='Your name'></form>",
    "/hello?name=Ada+%E5%B0%8F%E6%98%8E": "<title>Greeting</title><p>Hello, Ada 小明! You are visitor 7.</p>",
}


class BrowserKernel(E2EKernel):
    def __init__(self, root: Path, mock: MockLLM) -> None:  # no super(): its own graph
        self.root, self.mocks, self.process = root, [mock], None
        self.data, self.lock = root / "data", root / "hologram.lock"
        manifests = root / "manifests"
        copy_shipped("browser", manifests)
        self.hologram("build", "--no-discover", "-m", str(manifests), "-o", str(self.lock), check=True)
        self.data.mkdir()
        settings = "[agent]\nmax_steps = 6\ntool_timeout_s = 60\n\n[plugins.browser]\nallow_private = true\n\n"
        write_settings(self.data / "settings.toml", settings + provider_toml(mock))


@pytest.fixture
def site() -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = PAGES.get(self.path, "not found").encode()
            self.send_response(200 if self.path in PAGES else 404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def kernel(tmp_path: Path, mock: MockLLM) -> Iterator[BrowserKernel]:
    mock.reset()
    k = BrowserKernel(tmp_path, mock)
    k.start()
    yield k
    k.stop()


def call(call_id: str, tool: str, **arguments: Any) -> dict[str, Any]:
    return {"reasoning_content": "r", "tool_calls": [{"id": call_id, "name": tool, "arguments": json.dumps(arguments)}]}


def test_a_form_filled_through_the_kernel_and_chromium_stopped_with_it(
    kernel: BrowserKernel, mock: MockLLM, site: str
) -> None:
    mock.script(
        [
            call("c1", "browser_open", url=f"{site}/form"),
            call("c2", "browser_type", n=1, text="Ada 小明", submit=True),
            {"reasoning_content": "r", "content": "The site says you are visitor 7."},
        ]
    )

    async def go() -> str:
        async with await TurnClient.connect(kernel.data, client="e2e") as client:
            turn = await client.start("greet me on that site")
            async for _event in turn:
                pass
            assert turn.ended is not None
            return turn.ended.output

    assert asyncio.run(asyncio.wait_for(go(), 120)) == "The site says you are visitor 7."
    results = {m["tool_call_id"]: m["content"] for m in mock.requests[-1].body["messages"] if m["role"] == "tool"}
    assert results["c1"].startswith(f"Greeter\nURL: {site}/form") and '[1] input[text] "Your name"' in results["c1"]
    assert "Hello, Ada 小明! You are visitor 7." in results["c2"], results["c2"]
    assert mock.rejections == []

    profile = f"--user-data-dir={kernel.data / 'plugins' / 'browser' / 'browser-profile'}"
    assert pids_with(profile), "Chromium runs while the kernel does"
    kernel.stop()
    wait_until(lambda: not pids_with(profile), timeout=30, what="every Chromium process gone with the kernel")
