"""RSS 2.0, RSS 1.0 (RDF) and Atom 1.0 into one small shape, with the standard library's XML parser.

Elements are matched by local name, so namespaced extensions (`content:encoded`, `dc:date`) work without a
namespace table. Documents that declare entities are refused before parsing: entity expansion ("billion
laughs") is the classic XML attack, and no real feed needs its own entities.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from hologram_plugins.web.html_text import html_to_text

if TYPE_CHECKING:
    import xml.etree.ElementTree as ET

# The XML parser and email.utils load with the first feed parsed, not with the plugin: ~2 MB of the idle
# plugin process (tools/bench/footprint.py --turns).

SUMMARY_CHARS = 400
_HTML_HINT = re.compile(r"<[a-zA-Z/][^>]*>")


class FeedError(ValueError):
    """Not a feed we can read; the message says why."""


@dataclass
class Item:
    id: str
    title: str
    link: str
    published: str  # ISO 8601 in UTC, or "" when the feed gives no readable date
    summary: str


@dataclass
class Feed:
    title: str
    link: str
    items: list[Item] = field(default_factory=list)


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def _child(element: ET.Element, *names: str) -> ET.Element | None:
    for name in names:
        for child in element:
            if _local(child.tag) == name:
                return child
    return None


def _text(element: ET.Element, *names: str) -> str:
    child = _child(element, *names)
    return "".join(child.itertext()).strip() if child is not None else ""


def _date(text: str) -> str:
    if not text:
        return ""
    from email.utils import parsedate_to_datetime

    try:
        parsed = parsedate_to_datetime(text)  # RSS: RFC 822
    except (TypeError, ValueError, IndexError):
        try:
            value = text.strip()
            parsed = datetime.fromisoformat(value[:-1] + "+00:00" if value.endswith("Z") else value)  # Atom
        except ValueError:
            return ""
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return parsed.astimezone(timezone.utc).isoformat(timespec="seconds")


def _summary(raw: str) -> str:
    text = html_to_text(raw)[1] if _HTML_HINT.search(raw) else raw
    text = " ".join(text.split())
    return text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1] + "…"


def _item(guid: str, title: str, link: str, raw: str, published: str) -> Item:
    """One entry of either format; without a guid or link its id is a hash of its content."""
    return Item(
        id=guid or link or hashlib.sha256(f"{title}\n{link}\n{raw}".encode()).hexdigest()[:16],
        title=title or "(untitled)",
        link=link,
        published=_date(published),
        summary=_summary(raw),
    )


def _rss_item(element: ET.Element) -> Item:
    raw = _text(element, "encoded") or _text(element, "description")
    link = _text(element, "link")
    return _item(_text(element, "guid"), _text(element, "title"), link, raw, _text(element, "pubDate", "date"))


def _atom_link(element: ET.Element) -> str:
    links = [c for c in element if _local(c.tag) == "link"]
    for link in links:
        if link.get("rel", "alternate") == "alternate" and link.get("href"):
            return str(link.get("href"))
    return str(links[0].get("href", "")) if links else ""


def _atom_entry(element: ET.Element) -> Item:
    raw = _text(element, "summary", "content")
    link = _atom_link(element)
    return _item(_text(element, "id"), _text(element, "title"), link, raw, _text(element, "published", "updated"))


def parse_feed(data: bytes) -> Feed:
    import xml.etree.ElementTree as ET

    if b"<!ENTITY" in data[:65536]:
        raise FeedError("the document declares XML entities; refused (entity expansion is a known attack)")
    try:
        root = ET.fromstring(data)
    except ET.ParseError as exc:
        raise FeedError(f"not well-formed XML ({exc}); is this URL really a feed?") from None
    kind = _local(root.tag)
    if kind == "feed":
        entries = [_atom_entry(e) for e in root if _local(e.tag) == "entry"]
        return Feed(_text(root, "title") or "(untitled feed)", _atom_link(root), entries)
    if kind in ("rss", "RDF"):
        channel = _child(root, "channel")
        if channel is None:
            raise FeedError("an RSS document without a <channel>")
        # RSS 2.0 nests items in the channel; RSS 1.0 (RDF) puts them beside it.
        items = [_rss_item(e) for e in (*channel, *root) if _local(e.tag) == "item"]
        return Feed(_text(channel, "title") or "(untitled feed)", _text(channel, "link"), items)
    raise FeedError(f"the document is <{kind}>, not an RSS or Atom feed")
