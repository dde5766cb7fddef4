"""A browser screenshot shown in the page's tool card (issue 40 item 4), end to end: a real `hologram up` of the
shipped manifests (the browser and http plugins among them), the strict mock scripting ``browser_open`` on a
page served on loopback and ``browser_screenshot``, and the web UI in a second real headless Chromium (Selenium)
that must draw the image: an ``<img>`` from the media route whose ``naturalWidth`` is the screenshot's, alt text
in English and Chinese, a link to it full size — live, and again from the stored history after a reload.

Mutation checks (done): chat.js's history path not passing ``d.images`` turns the reload check red; the http
route answering 404 for every id turns the live check red (the <img> never loads: no ``naturalWidth``).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from mock_llm import MockLLM
from tests.kit.providers import provider_toml, write_settings

from .browser import Page, WebKernel, page_at, require_browser

pytestmark = pytest.mark.slow
PAGE = (
    "<title>Palette</title><body style='margin:0;background:#2f6feb'>"
    "<h1 style='color:white;font:48px sans-serif'>Hologram 全息</h1></body>"
)


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = PAGE.encode()
            self.send_response(200)
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


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory, mock: MockLLM) -> Iterator[Page]:
    require_browser()
    kernel = WebKernel(tmp_path_factory.mktemp("web-images"))
    settings = "[agent]\ntool_timeout_s = 60\n\n[plugins.browser]\nallow_private = true\n\n"
    write_settings(kernel.data / "settings.toml", settings + provider_toml(mock))
    try:
        link = kernel.start()
        with page_at(link) as p:
            yield p
    finally:
        kernel.stop()


def call(call_id: str, tool: str, **arguments: Any) -> dict[str, Any]:
    return {"reasoning_content": "r", "tool_calls": [{"id": call_id, "name": tool, "arguments": json.dumps(arguments)}]}


IMAGE = "#messages .turn:last-child [data-testid=tool-image]"
LOADED = (
    "const i = document.querySelector(arguments[0]);"
    "return i && i.complete && i.naturalWidth > 0 ? [i.naturalWidth, i.naturalHeight, i.alt, i.closest('a').href,"
    " i.closest('a').title, i.getAttribute('src')] : null;"
)

STORED = (
    "const done = arguments[arguments.length - 1];"
    "fetch('/api/sessions/' + arguments[0]).then(r => r.json()).then(s => done("
    "s.events.filter(e => e.kind === 'tool_result' && e.data.images).map(e => e.data.images[0])[0]));"
)


def test_a_screenshot_is_shown_in_its_tool_card_live_and_from_history(page: Page, mock: MockLLM, site: str) -> None:
    mock.reset()
    mock.script(
        [
            call("c1", "browser_open", url=f"{site}/"),
            call("c2", "browser_screenshot"),
            {"reasoning_content": "r", "content": "Here it is."},
        ]
    )
    page.visible("#view-chat")
    page.click("#lang-en")
    page.send("show me that page")
    assert page.wait_turn_ended(timeout=120) == "answer"
    assert mock.rejections == []

    width, height, alt, href, title, src = page.wait(lambda: page.js(LOADED, IMAGE), "the screenshot drawn")
    stored = page.js(STORED, src.split("/")[3], async_script=True)  # the reference the kernel stored
    assert stored["width"] == width and stored["height"] == height and stored["mime"] == "image/png"
    assert width > 100 and height > 100
    assert alt == "Image from browser_screenshot" and title == "Open the image full size"
    assert src.startswith("/api/sessions/") and href.endswith(src)
    media_id = src.rsplit("/", 1)[1]
    assert len(media_id) == 64
    page.shot("tool-image")

    page.click("#lang-zh")
    page.wait(lambda: page.js(LOADED, IMAGE)[2] == "browser_screenshot 返回的图片", "the alt text in Chinese")
    page.wait(lambda: page.js(LOADED, IMAGE)[4] == "查看原图", "the link's title in Chinese")
    page.click("#lang-en")

    page.driver.refresh()  # drawn again from the stored history (sessions/read), the same image
    page.visible("#view-chat")
    again = page.wait(lambda: page.js(LOADED, IMAGE), "the screenshot drawn from the history")
    assert again[0] == width and again[5] == src
