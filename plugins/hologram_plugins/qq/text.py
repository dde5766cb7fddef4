"""An answer as QQ shows it: Markdown made plain text (QQ renders none of it), cut into messages under its length.

The Markdown is parsed by ``markdown-it-py`` (CommonMark) rather than stripped by patterns: ``*`` inside code,
nested emphasis and links in lists are where pattern strippers go wrong. Links keep their address
(``text (url)``), code keeps its text, list items get a bullet or their number, headings become their own line.
"""

from __future__ import annotations

from typing import Any

from markdown_it import MarkdownIt

_PARSER: MarkdownIt | None = None


def _parser() -> MarkdownIt:
    global _PARSER
    if _PARSER is None:
        _PARSER = MarkdownIt("commonmark").enable("strikethrough").enable("table")
    return _PARSER


def _inline(children: list[Any]) -> str:
    out: list[str] = []
    link: str | None = None
    label_at = 0
    for token in children:
        kind = token.type
        if kind in ("text", "code_inline", "html_inline"):
            out.append(token.content)
        elif kind in ("softbreak", "hardbreak"):
            out.append("\n")
        elif kind == "link_open":
            link, label_at = str(token.attrGet("href") or ""), len(out)
        elif kind == "link_close":
            label = "".join(out[label_at:])
            if link and link != label and not link.startswith("mailto:"):
                out.append(f" ({link})")
            link = None
        elif kind == "image":
            out.append(f"[image: {token.attrGet('src') or ''}]")
    return "".join(out)


def plain_text(markdown: str) -> str:
    """``markdown`` as plain text for QQ."""
    lines: list[str] = []
    lists: list[list[int]] = []  # per open list: [is ordered, next number]
    quote = 0
    pending_item = ""
    for token in _parser().parse(markdown):
        kind = token.type
        if kind in ("bullet_list_open", "ordered_list_open"):
            start = int(token.attrGet("start") or 1)
            lists.append([1 if kind == "ordered_list_open" else 0, start])
        elif kind in ("bullet_list_close", "ordered_list_close"):
            lists.pop()
            if not lists:
                lines.append("")
        elif kind == "list_item_open":
            ordered, number = lists[-1]
            pending_item = "  " * (len(lists) - 1) + (f"{number}. " if ordered else "• ")
            lists[-1][1] += 1
        elif kind == "blockquote_open":
            quote += 1
        elif kind == "blockquote_close":
            quote -= 1
        elif kind == "inline":
            text = _inline(token.children or [])
            prefix = "> " * quote + pending_item
            pending_item = ""
            lines.extend(prefix + line if i == 0 else "> " * quote + line for i, line in enumerate(text.split("\n")))
        elif kind in ("fence", "code_block"):
            lines.extend(token.content.rstrip("\n").split("\n"))
            lines.append("")
        elif kind == "hr":
            lines.extend(["——————", ""])
        elif kind in ("paragraph_close", "heading_close") and not lists:
            lines.append("")
        elif kind == "html_block":
            lines.extend([token.content.rstrip("\n"), ""])
        elif kind == "tr_close":
            lines.append("")
    text = "\n".join(lines)
    while "\n\n\n" in text:
        text = text.replace("\n\n\n", "\n\n")
    return text.strip()


def split(text: str, limit: int) -> list[str]:
    """``text`` in pieces of at most ``limit`` characters, cut at a blank line, else a line end, else a space."""
    pieces: list[str] = []
    rest = text.strip()
    while len(rest) > limit:
        window = rest[:limit]
        cut = max(window.rfind("\n\n"), -1)
        if cut < limit // 3:
            cut = window.rfind("\n")
        if cut < limit // 3:
            cut = window.rfind(" ")
        if cut < limit // 3:
            cut = limit
        pieces.append(rest[:cut].rstrip())
        rest = rest[cut:].lstrip()
    if rest:
        pieces.append(rest)
    return pieces
