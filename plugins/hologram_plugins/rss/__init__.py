"""rss: subscribe to RSS/Atom feeds and fetch the items not seen before.

Subscriptions and the ids of seen items live in `<data_dir>/feeds.json` (written atomically), so "new"
survives restarts. Feeds are downloaded through the web plugin's guarded fetch: the same SSRF guard,
deny-list and size/time limits apply (`allow_private`, `deny`, `max_bytes`, `timeout_s` in this config).
"""

from __future__ import annotations

import asyncio
import json
import threading
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import Field

from hologram.sdk import Plugin, StartContext, tool_error
from hologram_plugins.files.workspace import atomic_write
from hologram_plugins.rss.parse import Feed, FeedError, Item, parse_feed
from hologram_plugins.web.fetch import guarded_get
from hologram_plugins.web.guard import FetchError, NetConfig, NetPolicy

ACCEPT = "application/rss+xml, application/atom+xml, application/xml;q=0.9, text/xml;q=0.9, */*;q=0.5"
MAX_SEEN = 2000  # ids remembered per feed; older ones have long left any real feed


class RssConfig(NetConfig):
    """settings.toml's ``[plugins.rss]``, checked at start (its JSON Schema: manifests/rss.config.schema.json)."""

    max_bytes: int = Field(5 * 1024 * 1024, gt=0, description="Download at most this much of a feed.")
    timeout_s: float = Field(20, gt=0, description="Seconds for the whole request, redirects included.")


@dataclass(frozen=True)
class RssState:
    path: Path  # feeds.json: the subscriptions and the ids seen
    policy: NetPolicy
    max_bytes: int
    timeout_s: float
    lock: threading.Lock = field(default_factory=threading.Lock)  # one writer of feeds.json at a time

    @classmethod
    def start(cls, ctx: StartContext[RssConfig]) -> RssState:
        config = ctx.config
        return cls(Path(ctx.data_dir) / "feeds.json", config.policy(), config.max_bytes, config.timeout_s)


plugin = Plugin("rss", state=RssState.start, config=RssConfig)


def _load() -> dict[str, dict[str, Any]]:
    path = plugin.state.path
    if not path.exists():
        return {}
    feeds = json.loads(path.read_text(encoding="utf-8")).get("feeds", {})
    return feeds if isinstance(feeds, dict) else {}


def _save(feeds: dict[str, dict[str, Any]]) -> None:
    path = plugin.state.path
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, json.dumps({"version": 1, "feeds": feeds}, ensure_ascii=False, indent=1).encode())


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


async def _download(url: str) -> Feed:
    """The parsed feed at `url`; raises FeedError with a readable message for every failure."""
    state = plugin.state
    try:
        fetched = await guarded_get(
            url, state.policy, max_bytes=state.max_bytes, timeout_s=state.timeout_s, accept=ACCEPT
        )
    except FetchError as exc:
        raise FeedError(str(exc)) from None
    if fetched.status >= 400:
        raise FeedError(f"{url} answered HTTP {fetched.status}")
    if fetched.truncated:
        raise FeedError(f"{url} is larger than {state.max_bytes} bytes; not read")
    return parse_feed(fetched.body)


def _find(feeds: dict[str, dict[str, Any]], key: str) -> str | None:
    """A subscription by its URL or (case-insensitively) its title."""
    if key in feeds:
        return key
    folded = key.casefold().strip()
    return next((url for url, feed in feeds.items() if str(feed.get("title", "")).casefold() == folded), None)


@plugin.tool("rss_subscribe")
async def rss_subscribe(url: str) -> dict[str, Any] | str:
    try:
        feed = await _download(url)
    except FeedError as exc:
        return tool_error(f"cannot subscribe to {url}: {exc}")
    with plugin.state.lock:
        feeds = _load()
        if url in feeds:
            return f"already subscribed to {feeds[url]['title']!r} ({url})"
        feeds[url] = {"title": feed.title, "link": feed.link, "added": _now(), "last_fetch": "", "seen": []}
        _save(feeds)
    return f"subscribed to {feed.title!r} ({url}); {len(feed.items)} item(s) in it now, rss_fetch returns the new ones"


@plugin.tool("rss_list")
def rss_list() -> str:
    feeds = _load()
    if not feeds:
        return "no subscriptions; add one with rss_subscribe"
    return "\n".join(
        f"- {f['title']} <{url}> ({len(f.get('seen', []))} seen; last fetched {f.get('last_fetch') or 'never'})"
        for url, f in feeds.items()
    )


def _show(item: Item) -> str:
    lines = [f"  - {item.title}" + (f" ({item.published})" if item.published else "")]
    if item.link:
        lines.append(f"    {item.link}")
    if item.summary:
        lines.append(f"    {item.summary}")
    return "\n".join(lines)


@plugin.tool("rss_fetch")
async def rss_fetch(feed: str | None = None, limit: int = 20) -> dict[str, Any] | str:
    feeds = _load()
    if feed:
        url = _find(feeds, feed)
        if url is None:
            return tool_error(f"not subscribed to {feed!r}; rss_list shows the subscriptions")
        urls = [url]
    else:
        urls = list(feeds)
    if not urls:
        return "no subscriptions; add one with rss_subscribe"
    results = await asyncio.gather(*(_download(u) for u in urls), return_exceptions=True)
    sections: list[str] = []
    total = 0
    with plugin.state.lock:
        feeds = _load()  # re-read: another call may have changed it while we downloaded
        for url, result in zip(urls, results, strict=True):
            entry = feeds.get(url)
            if entry is None:
                continue
            if isinstance(result, BaseException):
                sections.append(f"{entry['title']}: error: {result}")
                continue
            seen = set(entry.get("seen", []))
            fresh = [item for item in result.items if item.id not in seen][:limit]
            entry["seen"] = (list(entry.get("seen", [])) + [item.id for item in fresh])[-MAX_SEEN:]
            entry["last_fetch"] = _now()
            entry["title"] = result.title or entry["title"]
            total += len(fresh)
            body = "\n".join(_show(item) for item in fresh) if fresh else "  (nothing new)"
            sections.append(f"{entry['title']} — {len(fresh)} new:\n{body}")
        _save(feeds)
    return f"{total} new item(s)\n" + "\n".join(sections)
