"""HTML → readable text for a model: headings, paragraphs, lists and links kept; scripts, styles and
navigation dropped; the page's `<main>`/`<article>` preferred when it has one.

Built on the standard library's tolerant `html.parser` (no dependency, no network, no JavaScript): good
enough for articles and documentation, which is what an agent reads; it is not a browser.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from urllib.parse import urljoin

SKIP = frozenset({"script", "style", "noscript", "template", "svg", "canvas", "iframe", "object", "nav", "aside"})
BLOCK = frozenset(
    {"p", "div", "section", "article", "main", "header", "footer", "table", "tr", "ul", "ol", "dl", "dt", "dd",
     "blockquote", "figure", "figcaption", "form", "fieldset", "details", "summary", "address", "hr"}
)  # fmt: skip
HEADINGS = {"h1": "# ", "h2": "## ", "h3": "### ", "h4": "#### ", "h5": "##### ", "h6": "###### "}
VOID = frozenset({"br", "hr", "img", "input", "meta", "link", "area", "base", "col", "embed", "source", "wbr"})
MIN_MAIN_CHARS = 200  # a <main> shorter than this is probably a stub; use the whole body then


class _Extractor(HTMLParser):
    def __init__(self, base_url: str) -> None:
        super().__init__(convert_charrefs=True)
        self.base_url = base_url
        self.title = ""
        self.parts: list[str] = []  # whole page
        self.main_parts: list[str] = []  # inside the first <main> or <article>
        self._skip = 0
        self._pre = 0
        self._in_title = False
        self._main_depth = 0
        self._main_done = False
        self._links: list[str | None] = []

    def _emit(self, text: str) -> None:
        self.parts.append(text)
        if self._main_depth and not self._main_done:
            self.main_parts.append(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in SKIP:
            self._skip += tag not in VOID
            return
        if tag == "title":
            self._in_title = True
        if self._skip:
            return
        if tag in ("main", "article") and not self._main_done:
            self._main_depth += 1
        if tag == "pre":
            self._pre += 1
            self._emit("\n\n")
        elif tag in HEADINGS:
            self._emit("\n\n" + HEADINGS[tag])
        elif tag == "li":
            self._emit("\n- ")
        elif tag == "br":
            self._emit("\n")
        elif tag in BLOCK:
            self._emit("\n\n")
        elif tag in ("td", "th"):
            self._emit(" | ")
        elif tag == "a":
            href = dict(attrs).get("href") or ""
            absolute = urljoin(self.base_url, href) if href and not href.startswith(("#", "javascript:")) else None
            self._links.append(absolute if absolute and absolute.startswith(("http://", "https://")) else None)
            self._emit("[" if self._links[-1] else "")
        elif tag == "img":
            alt = (dict(attrs).get("alt") or "").strip()
            if alt:
                self._emit(f"[image: {alt}]")

    def handle_endtag(self, tag: str) -> None:
        if tag in SKIP:
            self._skip = max(0, self._skip - 1)
            return
        if tag == "title":
            self._in_title = False
        if self._skip:
            return
        if tag == "a" and self._links:
            link = self._links.pop()
            if link:
                self._emit(f"]({link})")
        elif tag == "pre":
            self._pre = max(0, self._pre - 1)
            self._emit("\n\n")
        elif tag in HEADINGS or tag in BLOCK:
            self._emit("\n\n")
        if tag in ("main", "article") and self._main_depth:
            self._main_depth -= 1
            self._main_done = self._main_depth == 0

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
            return
        if self._skip:
            return
        if self._pre:
            self._emit(data)
            return
        text = re.sub(r"\s+", " ", data)
        if not self.parts or self.parts[-1].endswith((" ", "\n", "[")):
            text = text.lstrip(" ")
        if text:
            self._emit(text)


def _tidy(parts: list[str]) -> str:
    text = "".join(parts)
    text = re.sub(r"\[\s*\]\([^)]*\)", "", text)  # links without visible text
    text = re.sub(r"[ \t]+\n", "\n", text)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip()


def html_to_text(html: str, base_url: str = "") -> tuple[str, str]:
    """(title, readable text) of an HTML document."""
    extractor = _Extractor(base_url)
    extractor.feed(html)
    extractor.close()
    main = _tidy(extractor.main_parts)
    body = main if len(main) >= MIN_MAIN_CHARS else _tidy(extractor.parts)
    return " ".join(extractor.title.split()), body
