"""browser as a real subprocess driving the real Chromium against pages served on loopback: a link followed,
a form filled and submitted, a table read, a screenshot taken; the network guard on every request of the
page; Chromium dead with the plugin (SIGKILL included) and started again after a crash.

Skipped without Chromium unless HOLOGRAM_REQUIRE_BROWSER=1 (then its absence fails). Waits are on events (a
load, a process gone), never on time; deadlines are failure bounds.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import signal
from pathlib import Path
from typing import Any

import pytest

from hologram.rpc import ConnectionClosed
from hologram.sdk.testing import PluginHarness
from tests.kit.loop import run
from tests.kit.wait import wait_until
from tests.plugins.conftest import LocalServer, slow
from tests.plugins.helpers import err, harness, ok
from tests.proctree import alive

HAVE_CHROMIUM = shutil.which("chromium") is not None
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not HAVE_CHROMIUM and os.environ.get("HOLOGRAM_REQUIRE_BROWSER") != "1", reason="no chromium on PATH"
    ),
]
HTML = {"Content-Type": "text/html; charset=utf-8"}


def _site(server: LocalServer) -> None:
    table = (
        "<table><tr><th>城市</th><th>Population</th></tr><tr><td>Shanghai</td><td>24870895</td></tr>"
        "<tr><td>Berlin</td><td>3677472</td></tr></table>"
    )
    server.routes.update(
        {
            "/": (200, HTML, b'<title>Home</title><h1>Start here</h1><a href="/table.html">The cities table</a>'),
            "/table.html": (200, HTML, f"<title>Cities</title>{table}".encode()),
            "/form.html": (
                200,
                HTML,
                b'<title>Search</title><form action="/result"><label for="q">Query</label>'
                b'<input id="q" name="q" value="old"><select name="lang"><option>en</option>'
                b'<option value="zh">zh</option></select><button type="submit">Go</button></form>',
            ),
            "/result?q=hello+%E4%B8%96%E7%95%8C&lang=en": (200, HTML, b"<title>Result</title><p>Found 3 things</p>"),
            "/result?q=second&lang=zh": (200, HTML, b"<title>Result 2</title><p>Clicked through</p>"),
            "/popup.html": (200, HTML, b'<title>Popup</title><a href="/slow-table.html" target="_blank">new tab</a>'),
            "/slow-table.html": slow(1, (200, HTML, f"<title>Cities</title>{table}".encode())),
            "/frame.html": (
                200,
                HTML,
                b"<title>Frames</title><button onclick=\"const f = document.createElement('iframe'); "
                b"f.src = '/slow-table.html'; document.body.append(f)\">Add a frame</button>",
            ),
            "/dialog.html": (
                200,
                HTML,
                b"<title>Dialog</title><button onclick=\"alert('\xe5\xb7\xb2\xe4\xbf\x9d\xe5\xad\x98 saved'); "
                b"location.href='/table.html'\">Save</button>",
            ),
            "/private-link.html": (
                200,
                HTML,
                f'<title>Links</title><a href="http://127.0.0.2:{server.port}/secret">secret</a>'.encode(),
            ),
        }
    )


def browser(tmp_path: Path, **config: Any) -> PluginHarness:
    return harness("browser", data_dir=tmp_path, config=config)


def _item(text: str, label: str) -> int:
    """The number [n] of the element whose line contains `label`."""
    for line in text.splitlines():
        if line.startswith("[") and label in line:
            return int(line[1 : line.index("]")])
    raise AssertionError(f"no element {label!r} in:\n{text}")


def test_follow_a_link_read_a_table_fill_a_form_and_screenshot(tmp_path: Path, http_server: LocalServer) -> None:
    _site(http_server)

    async def go() -> None:
        async with browser(tmp_path, allow_private=True) as h:
            home = ok(await h.call_tool("browser_open", {"url": http_server.url("/")}))
            assert home.startswith(f"Home\nURL: {http_server.url('/')}") and "Start here" in home, home
            link = _item(home, '"The cities table"')
            assert f'a "The cities table" → {http_server.url("/table.html")}' in home

            table = ok(await h.call_tool("browser_click", {"n": link}))
            assert f"[clicked [{link}]]\nCities\nURL: {http_server.url('/table.html')}" in table, table
            assert "城市\tPopulation\nShanghai\t24870895\nBerlin\t3677472" in table, table

            form = ok(await h.call_tool("browser_open", {"url": http_server.url("/form.html")}))
            field = _item(form, 'input[text] "Query"')
            assert "value='old'" in form
            typed = ok(await h.call_tool("browser_type", {"n": field, "text": "hello 世界", "submit": True}))
            assert "and pressed Enter]\nResult\n" in typed and "Found 3 things" in typed, typed

            ok(await h.call_tool("browser_open", {"url": http_server.url("/form.html")}))
            form = ok(await h.call_tool("browser_read", {}))
            ok(await h.call_tool("browser_type", {"n": _item(form, '"Query"'), "text": "second"}))
            chose = ok(await h.call_tool("browser_type", {"n": _item(form, "select"), "text": "ZH"}))
            assert [line for line in chose.splitlines() if line.endswith("value='zh'")], chose
            assert "has no option 'fr'; its options: en, zh" in err(
                await h.call_tool("browser_type", {"n": _item(form, "select"), "text": "fr"})
            )
            after = ok(await h.call_tool("browser_click", {"n": _item(form, 'button "Go"')}))
            assert "Result 2" in after and "Clicked through" in after, after

            result = await h.call_tool("browser_screenshot", {})
            shot = ok(result)
            assert shot.startswith(f"screenshot of {http_server.url('/result?q=second&lang=zh')} saved: ")
            path = Path(shot.split("saved: ", 1)[1].split(" (", 1)[0])
            assert path.parent == tmp_path / "plugins" / "browser" / "screenshots"
            png = path.read_bytes()
            assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 1000
            assert h.read_blob(result["blob"]) == png  # the same image through the arena (or inline base64)
            assert result["mime"] == "image/png"  # an image for the clients (docs/protocol.md)

            tabs = ok(await h.call_tool("browser_tabs", {}))
            assert tabs == f"* [1] Result 2 — {http_server.url('/result?q=second&lang=zh')}", tabs
            ok(await h.call_tool("browser_open", {"url": http_server.url("/"), "new_tab": True}))
            tabs = ok(await h.call_tool("browser_tabs", {"select": 1}))
            assert tabs.splitlines()[0].startswith("* [1] Result 2") and tabs.splitlines()[1].startswith("  [2] Home")
            assert "Clicked through" in ok(await h.call_tool("browser_read", {}))
            assert "no element [99]" in err(await h.call_tool("browser_click", {"n": 99}))

            page = ok(await h.call_tool("browser_open", {"url": http_server.url("/dialog.html")}))
            saved = ok(await h.call_tool("browser_click", {"n": _item(page, '"Save"')}))
            assert "Shanghai" in saved and "[dialogs the page showed, answered OK:\n- alert: 已保存 saved]" in saved, (
                saved
            )

    run(go())
    paths = [path for path, _host in http_server.requests]
    assert "/result?q=hello+%E4%B8%96%E7%95%8C&lang=en" in paths and "/result?q=second&lang=zh" in paths
    assert (tmp_path / "plugins" / "browser" / "browser-profile" / "Default").is_dir()


def test_private_addresses_refused_on_open_and_inside_the_page(tmp_path: Path, http_server: LocalServer) -> None:
    """browser_open checks the URL; the guard proxy checks every request a page makes (a link here).

    Mutation-checked: dropping `--proxy-bypass-list=<-loopback>` (Chromium then goes to loopback directly)
    or making GuardProxy skip the policy check lets the in-page request through and fails this test."""
    _site(http_server)

    async def go() -> None:
        async with browser(tmp_path / "default") as h:
            message = err(await h.call_tool("browser_open", {"url": http_server.url("/")}))
            assert "non-public address" in message and "allow_private in the browser plugin's config" in message
            assert "only http and https" in err(await h.call_tool("browser_open", {"url": "file:///etc/passwd"}))
        async with browser(tmp_path / "cidr", allow_private=["127.0.0.1/32"]) as h:
            page = ok(await h.call_tool("browser_open", {"url": http_server.url("/private-link.html")}))
            clicked = ok(await h.call_tool("browser_click", {"n": _item(page, '"secret"')}))
            assert "requests refused by the network guard" in clicked, clicked
            assert "127.0.0.2 is a private, loopback, link-local" in clicked, clicked

    run(go())
    paths = [path for path, _host in http_server.requests if path != "/favicon.ico"]
    assert paths == ["/private-link.html"], paths  # the default config's refusal sent nothing


def test_a_tab_belongs_to_its_session_and_a_popup_to_the_session_whose_page_opened_it(
    tmp_path: Path, http_server: LocalServer
) -> None:
    """Mutation-checked: `pages()` returning every tab (the session filter removed) turns this red."""
    _site(http_server)

    async def go() -> None:
        async with browser(tmp_path, allow_private=True) as h:

            async def call(session: str, tool: str, **arguments: Any) -> str:
                return ok(await h.call_tool(tool, arguments, session_id=session))

            assert "Shanghai" in await call("a", "browser_open", url=http_server.url("/table.html"))
            assert await call("b", "browser_tabs") == "* [1] about:blank — about:blank"
            assert "Shanghai" not in await call("b", "browser_read")
            page = await call("b", "browser_open", url=http_server.url("/popup.html"))
            popped = await call("b", "browser_click", n=_item(page, '"new tab"'))
            # the new tab became current, and was read once loaded (its page answers after 1 s)
            assert "it opened a new tab, now the current one]\nCities\nURL: " in popped, popped
            assert "Shanghai" in popped, popped
            tabs = (await call("b", "browser_tabs")).splitlines()
            assert len(tabs) == 2 and tabs[0].startswith("  [1] Popup") and tabs[1].startswith("* [2] Cities"), tabs
            assert await call("a", "browser_tabs") == f"* [1] Cities — {http_server.url('/table.html')}"
            assert "no tab 2; this session has 1" in err(await h.call_tool("browser_close", {"tab": 2}, session_id="a"))
            assert (await call("b", "browser_close", tab=2)).startswith("closed tab 2; open tabs:\n* [1] Popup")

    run(go())


def _descendants(pid: int) -> set[int]:
    found: set[int] = set()
    todo = [pid]
    while todo:
        parent = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                children = Path(f"/proc/{parent}/task/{task}/children").read_text().split()
            except OSError:
                continue
            for child in map(int, children):
                if child not in found:
                    found.add(child)
                    todo.append(child)
    return found


def _chromium_pids(plugin_pid: int) -> set[int]:
    """The plugin's descendants that are Chromium (its guardian, a python process, is not counted)."""
    pids = set()
    for pid in _descendants(plugin_pid):
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() == "chromium":
                pids.add(pid)
        except OSError:
            continue
    return pids


def _parent(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat[stat.rfind(")") + 2 :].split()[1])


def test_kill_9_of_the_plugin_kills_every_chromium_process(tmp_path: Path, http_server: LocalServer) -> None:
    _site(http_server)

    async def go() -> None:
        async with browser(tmp_path, allow_private=True) as h:
            ok(await h.call_tool("browser_open", {"url": http_server.url("/")}))
            plugin_pid = h.plugin.pid
            assert plugin_pid is not None
            pids = _chromium_pids(plugin_pid)
            assert len(pids) >= 2, pids  # the browser and at least a renderer
            os.kill(plugin_pid, signal.SIGKILL)
            with pytest.raises(ConnectionClosed):
                await h.call_tool("browser_tabs", {})
            await asyncio.to_thread(wait_until, lambda: not any(alive(p) for p in pids), timeout=30, what="gone")

    run(go())


def test_close_and_stop_kill_chromium_and_a_crash_is_restarted(tmp_path: Path, http_server: LocalServer) -> None:
    _site(http_server)

    async def go() -> None:
        async with browser(tmp_path, allow_private=True) as h:
            assert ok(await h.call_tool("browser_close", {})) == "the browser is not running"
            ok(await h.call_tool("browser_open", {"url": http_server.url("/")}))
            plugin_pid = h.plugin.pid
            assert plugin_pid is not None
            first = _chromium_pids(plugin_pid)
            [main] = [p for p in first if _parent(p) not in first]  # the browser process, the guardian's child
            os.kill(main, signal.SIGKILL)
            await asyncio.to_thread(wait_until, lambda: not alive(main), timeout=30, what="chromium killed")
            again = ok(await h.call_tool("browser_open", {"url": http_server.url("/table.html")}))
            assert again.startswith("[the browser had stopped (crashed or killed); a new one was started"), again
            assert "Shanghai" in again
            second = _chromium_pids(plugin_pid)
            assert second and not second & first
            closed = ok(await h.call_tool("browser_close", {}))
            assert closed.startswith("closed the browser: stopped Chromium"), closed
            await asyncio.to_thread(wait_until, lambda: not any(alive(p) for p in second), timeout=30, what="gone")
            ok(await h.call_tool("browser_open", {"url": http_server.url("/")}))
            third = _chromium_pids(plugin_pid)
        await asyncio.to_thread(wait_until, lambda: not any(alive(p) for p in third), timeout=30, what="gone")

    run(go())


def test_an_idle_browser_is_stopped_and_the_next_call_starts_it(tmp_path: Path, http_server: LocalServer) -> None:
    """Mutation-checked: the reaper not started (on_start hook removed) turns this red (the pids stay)."""
    _site(http_server)

    async def go() -> None:
        async with browser(tmp_path, allow_private=True, idle_timeout_s=1) as h:
            ok(await h.call_tool("browser_open", {"url": http_server.url("/")}))
            plugin_pid = h.plugin.pid
            assert plugin_pid is not None
            pids = _chromium_pids(plugin_pid)
            assert pids
            await asyncio.to_thread(wait_until, lambda: not any(alive(p) for p in pids), timeout=30, what="reaped")
            again = ok(await h.call_tool("browser_open", {"url": http_server.url("/table.html")}))
            assert again.startswith("Cities\n") and "Shanghai" in again, again  # no crash note: it was stopped

    run(go())


def test_a_click_that_loads_an_iframe_is_not_taken_for_a_navigation(tmp_path: Path, http_server: LocalServer) -> None:
    """Mutation-checked: waiting for any frame to start loading (not only the main one) makes this click wait
    for a page load that never comes, and the result says the page did not finish loading."""
    _site(http_server)

    async def go() -> None:
        async with browser(tmp_path, allow_private=True) as h:
            page = ok(await h.call_tool("browser_open", {"url": http_server.url("/frame.html")}))
            clicked = ok(await h.call_tool("browser_click", {"n": _item(page, '"Add a frame"')}))
            assert clicked.startswith("[clicked [1]]\nFrames\n"), clicked

    run(go())


def test_https_goes_through_the_guard_as_a_tunnel(tmp_path: Path) -> None:
    """https is CONNECT through the guard proxy: an allowed host is tunnelled (the page is read), a link to a
    refused one is listed as refused. The certificate is self-signed, so this test tells Chromium to accept
    it (`args`)."""
    import ssl
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from tests.kit.tls import self_signed

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            port = self.server.server_address[1]
            body = f"<title>Secure</title><p>over TLS</p><a href='https://127.0.0.2:{port}/x'>elsewhere</a>".encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    cert, key = self_signed(tmp_path)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"https://127.0.0.1:{server.server_address[1]}/"

    async def go() -> None:
        config = {"allow_private": ["127.0.0.1/32"], "args": ["--ignore-certificate-errors"]}
        async with browser(tmp_path / "data", **config) as h:
            page = ok(await h.call_tool("browser_open", {"url": url}))
            assert page.startswith(f"Secure\nURL: {url}") and "over TLS" in page, page
            clicked = ok(await h.call_tool("browser_click", {"n": _item(page, '"elsewhere"')}))
            assert "requests refused by the network guard" in clicked and "127.0.0.2 is a private" in clicked

    try:
        run(go())
    finally:
        server.shutdown()
        server.server_close()


def test_no_chromium_is_a_clear_error_and_the_plugin_keeps_serving(tmp_path: Path, http_server: LocalServer) -> None:
    _site(http_server)

    async def go() -> None:
        async with browser(tmp_path, allow_private=True, executable="/nonexistent/chromium") as h:
            for _ in range(2):
                message = err(await h.call_tool("browser_open", {"url": http_server.url("/")}))
                assert message == (
                    "error: no browser executable found (/nonexistent/chromium); install Debian's `chromium` "
                    "package or set `executable` in [plugins.browser]"
                ), message
            assert ok(await h.call_tool("browser_close", {})) == "the browser is not running"

    run(go())


def test_a_page_of_thousands_of_links_is_listed_within_bounds() -> None:
    from hologram_plugins.browser.page import render

    items = [{"n": n, "kind": "a", "label": f"link {n}", "href": f"https://example.com/{n}"} for n in range(1, 3001)]
    text = render({"title": "Many", "url": "https://example.com/", "text": "x" * 50_000, "items": items}, 2000)
    assert "[text cut at 2000 of 50000 characters]" in text and "--- 3000 interactive elements" in text
    assert len(text) < 2000 + 2000 + 300, len(text)
    last = text.splitlines()[-1]
    match = re.fullmatch(r"\[(\d+) more elements not listed: \[(\d+)\] to \[3000\]\]", last)
    assert match is not None and int(match[1]) + int(match[2]) - 1 == 3000, last
    assert text.splitlines()[-2].startswith(f"[{int(match[2]) - 1}] a "), text.splitlines()[-2]


def test_the_conformance_kit_passes() -> None:
    from hologram.testing.conformance import check_conformance
    from tests.plugins.helpers import MANIFESTS

    report = check_conformance(MANIFESTS / "browser.toml")
    assert report.ok, report.render()
