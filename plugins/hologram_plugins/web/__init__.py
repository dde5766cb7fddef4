"""web: fetch a URL and return its readable text, within size and time limits, never into private networks.

The network rules (deny-list, SSRF guard, redirect re-checks) are in guard.py and fetch.py and are shared
with the rss plugin, so a feed URL cannot be used to reach what web_fetch may not.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from hologram.sdk import Plugin, StartContext, tool_error
from hologram_plugins.web.fetch import guarded_get
from hologram_plugins.web.guard import FetchError, NetConfig, NetPolicy
from hologram_plugins.web.html_text import html_to_text

TEXT_TYPES = ("application/json", "application/xml", "application/javascript", "application/x-yaml", "+xml", "+json")


class WebConfig(NetConfig):
    """settings.toml's ``[plugins.web]``, checked at start (its JSON Schema: manifests/web.config.schema.json)."""

    max_bytes: int = Field(2 * 1024 * 1024, gt=0, description="Download at most this much of a response.")
    timeout_s: float = Field(20, gt=0, description="Seconds for the whole request, redirects included.")
    max_chars: int = Field(20_000, gt=0, description="Default length of the text returned.")


@dataclass(frozen=True)
class WebState:
    """The limits of this start, from `[config]`."""

    policy: NetPolicy
    max_bytes: int
    timeout_s: float
    max_chars: int

    @classmethod
    def start(cls, ctx: StartContext[WebConfig]) -> WebState:
        config = ctx.config
        return cls(config.policy(), config.max_bytes, config.timeout_s, config.max_chars)


plugin = Plugin("web", state=WebState.start, config=WebConfig)


@plugin.tool("web_fetch")
async def web_fetch(url: str, max_chars: int | None = None, raw: bool = False) -> dict[str, Any] | str:
    state = plugin.state
    limit = min(int(max_chars or state.max_chars), state.max_chars * 5)
    try:
        page = await guarded_get(url, state.policy, max_bytes=state.max_bytes, timeout_s=state.timeout_s)
    except FetchError as exc:
        return tool_error(str(exc))
    kind = page.content_type
    if not (kind.startswith("text/") or kind.endswith(TEXT_TYPES) or kind in TEXT_TYPES or not kind):
        return tool_error(f"{page.url} is {kind} ({len(page.body)} bytes), not text; web_fetch returns text only")
    text = page.text()
    title = ""
    if kind in ("text/html", "application/xhtml+xml") and not raw:
        title, text = html_to_text(text, page.url)
    elif kind.endswith("json") and not raw:
        with contextlib.suppress(ValueError):
            text = json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    header = f"{title}\n" if title else ""
    header += f"URL: {page.url}\nStatus: {page.status}\n"
    notes = []
    if page.truncated:
        notes.append(f"the page is larger than {state.max_bytes} bytes; only the beginning was downloaded")
    if len(text) > limit:
        notes.append(f"text cut at {limit} of {len(text)} characters")
        text = text[:limit]
    footer = f"\n\n[{'; '.join(notes)}]" if notes else ""
    result = f"{header}\n{text}{footer}"
    return tool_error(result) if page.status >= 400 else result
