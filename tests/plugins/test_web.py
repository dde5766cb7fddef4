"""web: readable text, limits, deny-list, and the SSRF guard (mutation-checked, see each docstring)."""

from __future__ import annotations

import time
from pathlib import Path

from tests.kit.loop import run
from tests.plugins.conftest import LocalServer, slow
from tests.plugins.helpers import err, harness, ok

PAGE = (
    """<!doctype html><html><head><meta charset="utf-8"><title>Test page</title>
<style>body { color: red }</style><script>var secret = "js";</script></head>
<body><nav><a href="/">Home</a> <a href="/about">About</a></nav>
<main><h1>Hello 世界</h1><p>First paragraph with a <a href="/next.html">link</a> &amp; an entity.</p>
<ul><li>one</li><li>two</li></ul><pre>def f():
    return 1</pre>
<p>"""
    + "Filler text. " * 20
    + """</p></main><footer>footer</footer></body></html>"""
)


def _serve_site(server: LocalServer) -> None:
    html = {"Content-Type": "text/html; charset=utf-8"}
    server.routes.update(
        {
            "/page.html": (200, html, PAGE.encode()),
            "/moved": (302, {"Location": "/page.html"}, b""),
            "/to-metadata": (302, {"Location": "http://169.254.169.254/latest/meta-data/"}, b""),
            "/to-denied": (301, {"Location": "http://blocked.example/"}, b""),
            "/big.txt": (200, {"Content-Type": "text/plain"}, b"0123456789" * 500_000),
            "/image.png": (200, {"Content-Type": "image/png"}, b"\x89PNG\r\n\x1a\n" + bytes(100)),
            "/data.json": (200, {"Content-Type": "application/json"}, b'{"a":[1,2],"b":"\xe4\xbd\xa0"}'),
            "/gbk.html": (200, {"Content-Type": "text/html"}, '<meta charset="gbk"><p>中文页面</p>'.encode("gbk")),
            "/slow": slow(60, (200, {"Content-Type": "text/plain"}, b"late")),
            "/missing": (404, {"Content-Type": "text/plain"}, b"no such page"),
        }
    )


def test_readable_text_with_allow_private(tmp_path: Path, http_server: LocalServer) -> None:
    _serve_site(http_server)

    async def go() -> None:
        async with harness("web", data_dir=tmp_path, config={"allow_private": True}) as h:
            text = ok(await h.call_tool("web_fetch", {"url": http_server.url("/moved")}))
            assert text.startswith(f"Test page\nURL: {http_server.url('/page.html')}\nStatus: 200\n")
            assert "# Hello 世界" in text
            assert f"First paragraph with a [link]({http_server.url('/next.html')}) & an entity." in text
            assert "- one\n- two" in text and "def f():\n    return 1" in text
            assert "secret" not in text and "color: red" not in text and "Home" not in text
            raw = ok(await h.call_tool("web_fetch", {"url": http_server.url("/page.html"), "raw": True}))
            assert "<script>" in raw
            assert '"b": "你"' in ok(await h.call_tool("web_fetch", {"url": http_server.url("/data.json")}))
            assert "中文页面" in ok(await h.call_tool("web_fetch", {"url": http_server.url("/gbk.html")}))
            assert "not text" in err(await h.call_tool("web_fetch", {"url": http_server.url("/image.png")}))
            assert "Status: 404" in err(await h.call_tool("web_fetch", {"url": http_server.url("/missing")}))
            assert "only http and https" in err(await h.call_tool("web_fetch", {"url": "file:///etc/passwd"}))
            assert "cannot resolve" in err(await h.call_tool("web_fetch", {"url": "http://no-such-host.invalid/"}))

    run(go())
    assert ("/page.html", f"127.0.0.1:{http_server.port}") in http_server.requests, "Host header kept"


def test_ssrf_to_loopback_and_metadata_refused(tmp_path: Path, http_server: LocalServer) -> None:
    """By default nothing private is reachable, however the address is spelt; the server sees no request.

    Mutation-checked: making `is_public` return True (or `address_allowed` return None) fails this test.
    """
    _serve_site(http_server)
    port = http_server.port
    urls = [
        http_server.url("/page.html"),
        "http://169.254.169.254/latest/meta-data/iam/security-credentials/",
        f"http://localhost:{port}/page.html",
        f"http://2130706433:{port}/page.html",  # 127.0.0.1 as one decimal number
        f"http://0x7f.1:{port}/page.html",
        f"http://[::1]:{port}/page.html",
        f"http://[::ffff:127.0.0.1]:{port}/page.html",
        "http://10.0.0.1/",
        "http://[fe80::1]/",
        "http://0.0.0.0/",
    ]

    async def go() -> None:
        async with harness("web", data_dir=tmp_path) as h:
            for url in urls:
                message = err(await h.call_tool("web_fetch", {"url": url}))
                assert "non-public address" in message and "allow_private" in message, (url, message)
            metadata = err(await h.call_tool("web_fetch", {"url": urls[1]}))
            assert "169.254.169.254 is a private, loopback, link-local" in metadata

    run(go())
    assert http_server.requests == []


def test_redirects_are_rechecked(tmp_path: Path, http_server: LocalServer) -> None:
    """A permitted page redirecting into a forbidden one is refused at the redirect.

    Mutation-checked: checking only the first URL (moving check_url/resolve out of the redirect loop in
    fetch._get) fails this test.
    """
    _serve_site(http_server)

    async def go() -> None:
        config = {"allow_private": ["127.0.0.0/8"], "deny": ["blocked.example"]}
        async with harness("web", data_dir=tmp_path, config=config) as h:
            assert "Hello 世界" in ok(await h.call_tool("web_fetch", {"url": http_server.url("/moved")}))
            message = err(await h.call_tool("web_fetch", {"url": http_server.url("/to-metadata")}))
            assert "169.254.169.254" in message and "non-public" in message
            assert "on the deny-list (blocked.example)" in err(
                await h.call_tool("web_fetch", {"url": http_server.url("/to-denied")})
            )

    run(go())


def test_deny_list(tmp_path: Path, http_server: LocalServer) -> None:
    _serve_site(http_server)

    async def go() -> None:
        config = {"allow_private": True, "deny": ["localhost", "*.internal", "127.0.0.2/32"]}
        async with harness("web", data_dir=tmp_path, config=config) as h:
            assert "deny-list (localhost)" in err(
                await h.call_tool("web_fetch", {"url": f"http://localhost:{http_server.port}/"})
            )
            assert "deny-list (*.internal)" in err(await h.call_tool("web_fetch", {"url": "http://db.corp.internal/"}))
            assert "127.0.0.2 is on the deny-list" in err(await h.call_tool("web_fetch", {"url": "http://127.0.0.2/"}))

    run(go())
    assert http_server.requests == []


def test_size_and_time_limits(tmp_path: Path, http_server: LocalServer) -> None:
    """Oversized responses are cut at max_bytes (the rest is never read); slow ones time out."""
    _serve_site(http_server)

    async def go() -> None:
        config = {"allow_private": True, "max_bytes": 100_000, "timeout_s": 1, "max_chars": 5000}
        async with harness("web", data_dir=tmp_path, config=config) as h:
            big = ok(await h.call_tool("web_fetch", {"url": http_server.url("/big.txt")}))
            assert "larger than 100000 bytes" in big and "text cut at 5000 of 100000 characters" in big
            assert len(big) < 5300
            started = time.monotonic()
            assert "did not answer within 1 s" in err(await h.call_tool("web_fetch", {"url": http_server.url("/slow")}))
            assert time.monotonic() - started < 20  # the timeout cut it: /slow answers only after 60 s

    run(go())
