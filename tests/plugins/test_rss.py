"""rss: RSS 2.0 and Atom from a local server, only new items, memory across restarts, guarded fetching."""

from __future__ import annotations

from pathlib import Path

from tests.kit.loop import run
from tests.plugins.conftest import LocalServer
from tests.plugins.helpers import err, harness, ok

RSS_ITEM = """<item><title>{title}</title><link>https://example.org/{n}</link><guid>urn:item:{n}</guid>
<pubDate>Sun, 30 Mar 2025 09:00:00 +0200</pubDate>
<description><![CDATA[<p>Body of <b>{title}</b> &amp; more</p>]]></description></item>"""


def rss(*items: tuple[int, str]) -> bytes:
    body = "".join(RSS_ITEM.format(n=n, title=t) for n, t in items)
    return f"""<?xml version="1.0" encoding="utf-8"?>
<rss version="2.0" xmlns:content="http://purl.org/rss/1.0/modules/content/"><channel>
<title>新闻 Feed</title><link>https://example.org/</link><description>d</description>{body}</channel></rss>""".encode()


ATOM = b"""<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom"><title>Atom Blog</title><link href="https://blog.example/"/>
<id>urn:blog</id><updated>2025-03-30T10:00:00Z</updated>
<entry><title>Post one</title><link rel="alternate" href="https://blog.example/1"/><id>urn:post:1</id>
<updated>2025-03-30T10:00:00Z</updated><summary>Plain summary</summary></entry>
<entry><title type="html">Post two</title><link href="https://blog.example/2"/><id>urn:post:2</id>
<published>2025-03-29T08:00:00+01:00</published><content type="html">&lt;p&gt;HTML &lt;i&gt;content&lt;/i&gt;&lt;/p&gt;</content></entry>
</feed>"""

BOMB = b"""<?xml version="1.0"?><!DOCTYPE rss [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">]>
<rss version="2.0"><channel><title>&b;</title></channel></rss>"""


def _feeds(server: LocalServer) -> None:
    xml = {"Content-Type": "application/rss+xml"}
    server.routes.update(
        {
            "/rss.xml": (200, xml, rss((2, "第二条"), (1, "First"))),
            "/atom.xml": (200, {"Content-Type": "application/atom+xml"}, ATOM),
            "/bomb.xml": (200, xml, BOMB),
            "/broken.xml": (200, xml, b"<rss><channel><title>cut off"),
            "/page.html": (200, {"Content-Type": "text/html"}, b"<html><body>not a feed</body></html>"),
        }
    )


def test_subscribe_fetch_only_new_and_remember(tmp_path: Path, http_server: LocalServer) -> None:
    _feeds(http_server)
    rss_url, atom_url = http_server.url("/rss.xml"), http_server.url("/atom.xml")

    async def first_session() -> None:
        async with harness("rss", data_dir=tmp_path, config={"allow_private": True}) as h:
            assert "subscribed to '新闻 Feed'" in ok(await h.call_tool("rss_subscribe", {"url": rss_url}))
            assert "subscribed to 'Atom Blog'" in ok(await h.call_tool("rss_subscribe", {"url": atom_url}))
            assert "already subscribed" in ok(await h.call_tool("rss_subscribe", {"url": rss_url}))
            listing = ok(await h.call_tool("rss_list"))
            assert f"- 新闻 Feed <{rss_url}> (0 seen; last fetched never)" in listing and "Atom Blog" in listing

            fetched = ok(await h.call_tool("rss_fetch", {"limit": 1}))
            assert fetched.startswith("2 new item(s)")
            assert (
                "  - 第二条 (2025-03-30T07:00:00+00:00)\n    https://example.org/2\n    Body of 第二条 & more"
                in fetched
            )
            assert "First" not in fetched, "limit leaves the rest new for next time"
            assert "  - Post one (2025-03-30T10:00:00+00:00)\n    https://blog.example/1\n    Plain summary" in fetched

            rest = ok(await h.call_tool("rss_fetch", {}))
            assert "First" in rest and "Post two (2025-03-29T07:00:00+00:00)" in rest and "HTML content" in rest
            assert "第二条" not in rest and "Post one" not in rest
            assert ok(await h.call_tool("rss_fetch", {})).startswith("0 new item(s)")

    async def second_session() -> None:
        http_server.routes["/rss.xml"] = (
            200,
            {"Content-Type": "text/xml"},
            rss((3, "Third"), (2, "第二条"), (1, "First")),
        )
        async with harness("rss", data_dir=tmp_path, config={"allow_private": True}) as h:
            only = ok(await h.call_tool("rss_fetch", {"feed": "新闻 feed"}))
            assert only.startswith("1 new item(s)") and "Third" in only and "Atom" not in only
            assert ok(await h.call_tool("rss_fetch", {"feed": atom_url})).startswith("0 new item(s)")
            assert "not subscribed" in err(await h.call_tool("rss_fetch", {"feed": "nope"}))

    run(first_session())
    run(second_session())


def test_bad_feeds_are_refused(tmp_path: Path, http_server: LocalServer) -> None:
    _feeds(http_server)

    async def go() -> None:
        async with harness("rss", data_dir=tmp_path, config={"allow_private": True}) as h:
            assert "declares XML entities" in err(
                await h.call_tool("rss_subscribe", {"url": http_server.url("/bomb.xml")})
            )
            assert "<html>, not an RSS or Atom feed" in err(
                await h.call_tool("rss_subscribe", {"url": http_server.url("/page.html")})
            )
            assert "not well-formed XML" in err(
                await h.call_tool("rss_subscribe", {"url": http_server.url("/broken.xml")})
            )
            assert "HTTP 404" in err(await h.call_tool("rss_subscribe", {"url": http_server.url("/missing")}))
            assert ok(await h.call_tool("rss_list")).startswith("no subscriptions")

    run(go())


def test_feed_urls_get_the_ssrf_guard(tmp_path: Path, http_server: LocalServer) -> None:
    """Without allow_private, a feed on loopback or the metadata address is refused before any request."""
    _feeds(http_server)

    async def go() -> None:
        async with harness("rss", data_dir=tmp_path) as h:
            for url in (http_server.url("/rss.xml"), "http://169.254.169.254/latest/meta-data/"):
                assert "non-public address" in err(await h.call_tool("rss_subscribe", {"url": url}))

    run(go())
    assert http_server.requests == []
