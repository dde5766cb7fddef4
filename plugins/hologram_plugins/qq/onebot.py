"""OneBot v11 as NapCat sends it: a message event's segments (the array format, or the CQ-code string format) read
into what the agent is told, and what it says about the bot (mentioned? a reply to which message?).

Segments: ``text``; ``at`` (``qq`` a user id, or ``all``); ``reply`` (``id`` of the quoted message); ``face`` (a QQ
emoji, ``id``); ``image`` (``url``: kept as a placeholder ``[image: URL]``, never downloaded — the model reads
that there was one, and a person can open it); ``forward`` (a forwarded chat record: its ``content``, when NapCat
includes it, rendered as text, one line per message; else a placeholder); anything else as ``[type]``. The CQ
string format carries the same segments as ``[CQ:type,key=value,…]`` with ``&amp; &#91; &#93; &#44;`` escapes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

_CQ = re.compile(r"\[CQ:([A-Za-z0-9_.-]+)((?:,[^\]]*)?)\]")
MAX_FORWARD_DEPTH = 3
MAX_FORWARD_LINES = 50


def unescape(text: str) -> str:
    return text.replace("&#44;", ",").replace("&#91;", "[").replace("&#93;", "]").replace("&amp;", "&")


def segments_of(message: Any) -> list[dict[str, Any]]:
    """A message in either format as a list of ``{"type", "data"}`` segments."""
    if isinstance(message, list):
        return [s for s in message if isinstance(s, dict) and isinstance(s.get("type"), str)]
    if not isinstance(message, str):
        return []
    out: list[dict[str, Any]] = []
    at = 0
    for match in _CQ.finditer(message):
        if match.start() > at:
            out.append({"type": "text", "data": {"text": unescape(message[at : match.start()])}})
        data: dict[str, str] = {}
        for pair in match.group(2)[1:].split(",") if match.group(2) else []:
            key, _, value = pair.partition("=")
            if key:
                data[key] = unescape(value)
        out.append({"type": match.group(1), "data": data})
        at = match.end()
    if at < len(message):
        out.append({"type": "text", "data": {"text": unescape(message[at:])}})
    return out


@dataclass
class Incoming:
    """A message event, read: what the agent is told (``text``), who said it, and how it addresses the bot."""

    kind: str  # "group" | "private"
    message_id: str
    user_id: int
    name: str
    group_id: int | None
    text: str
    mentioned: bool = False  # @ the bot
    reply_to: str | None = None  # the quoted message's id
    at_all: bool = False

    @property
    def key(self) -> str:
        """Unique across groups and chats: what `SeenIds` remembers."""
        where = self.group_id if self.kind == "group" else self.user_id
        return f"{self.kind}:{where}:{self.message_id}"


def _name(sender: Any, user_id: int) -> str:
    if isinstance(sender, dict):
        for key in ("card", "nickname"):
            value = sender.get(key)
            if isinstance(value, str) and value.strip():
                return " ".join(value.split())[:64]
    return str(user_id)


def render(segments: list[dict[str, Any]], self_id: int | None, depth: int = 0) -> tuple[str, bool, str | None, bool]:
    """(text, mentions the bot, quoted message id, @all) of a message's segments."""
    parts: list[str] = []
    mentioned, reply_to, at_all = False, None, False
    for segment in segments:
        kind = segment.get("type")
        data = segment.get("data") if isinstance(segment.get("data"), dict) else {}
        assert isinstance(data, dict)
        if kind == "text":
            parts.append(str(data.get("text", "")))
        elif kind == "at":
            target = str(data.get("qq", ""))
            if target == "all":
                at_all = True
                parts.append("@all")
            elif self_id is not None and target == str(self_id):
                mentioned = True  # the mention itself is not part of what was said to the agent
            else:
                name = data.get("name")
                parts.append(f"@{name or target}")
        elif kind == "reply":
            reply_to = str(data.get("id", "")) or None
        elif kind == "face":
            parts.append(f"[face {data.get('id', '')}]")
        elif kind == "image":
            url = str(data.get("url") or data.get("file") or "")
            parts.append(f"[image: {url}]" if url else "[image]")
        elif kind == "forward":
            parts.append(_forward(data, self_id, depth))
        elif kind in ("record", "video", "file"):
            parts.append(
                f"[{kind}: {data.get('url') or data.get('file') or data.get('name') or ''}]".replace(": ]", "]")
            )
        elif kind:
            parts.append(f"[{kind}]")
    text = "".join(parts)
    return text.strip(), mentioned, reply_to, at_all


def _forward(data: dict[str, Any], self_id: int | None, depth: int) -> str:
    content = data.get("content")
    if not isinstance(content, list) or depth >= MAX_FORWARD_DEPTH:
        return "[forwarded chat record]"
    lines = ["[forwarded chat record:"]
    for node in content[:MAX_FORWARD_LINES]:
        if not isinstance(node, dict):
            continue
        sender = node.get("sender") if isinstance(node.get("sender"), dict) else {}
        who = _name(sender, int(sender.get("user_id") or 0) if isinstance(sender, dict) else 0)
        text, _, _, _ = render(segments_of(node.get("message", node.get("content"))), self_id, depth + 1)
        lines.append(f"  {who}: {text}")
    if len(content) > MAX_FORWARD_LINES:
        lines.append(f"  … {len(content) - MAX_FORWARD_LINES} more")
    return "\n".join(lines) + "]"


def read_message(event: dict[str, Any], self_id: int | None) -> Incoming | None:
    """A ``message`` event as `Incoming`, or None when it is not one this channel reads (no id, no sender)."""
    kind = event.get("message_type")
    if kind not in ("group", "private"):
        return None
    try:
        user_id = int(event["user_id"])
        message_id = str(event["message_id"])
        group_id = int(event["group_id"]) if kind == "group" else None
    except (KeyError, TypeError, ValueError):
        return None
    text, mentioned, reply_to, at_all = render(segments_of(event.get("message")), self_id)
    return Incoming(
        kind=str(kind),
        message_id=message_id,
        user_id=user_id,
        name=_name(event.get("sender"), user_id),
        group_id=group_id,
        text=text,
        mentioned=mentioned,
        reply_to=reply_to,
        at_all=at_all,
    )
