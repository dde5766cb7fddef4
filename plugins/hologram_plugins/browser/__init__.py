"""browser: a real Chromium the model drives — open a page, read it, click, type, screenshot, tabs, close.

The system Chromium (Debian's ``chromium``; headless unless ``headless = false``) is started on the first
call, over the Chrome DevTools Protocol (cdp.py), with its profile in ``<data>/browser-profile`` (one per data
directory). Every request any tab makes goes through a loopback proxy applying the web plugin's network
policy (proxy.py): private addresses are refused unless ``allow_private`` says otherwise, the ``deny`` list
holds. Chromium dies with the plugin, SIGKILL included (chromium.py: the process guardian); a crashed one is
started again on the next call.

``browser_read`` returns the page's text and its interactive elements numbered ``[n]``; ``browser_click(n)``
and ``browser_type(n, text, submit)`` act on those numbers like a person (mouse events, typed text, Enter).
``browser_screenshot`` saves a PNG under ``<data>/screenshots/`` and returns its path; the PNG also rides in the
result's ``blob`` with ``mime`` ``image/png``, which the kernel keeps in its media store and shows the clients
(the web page's tool card); the model is sent the text only.
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field

from hologram.sdk import Plugin, StartContext, ToolContext, tool_error
from hologram_plugins.web.guard import NetConfig, NetPolicy

if TYPE_CHECKING:
    from hologram_plugins.browser.session import Browser, Tab

log = logging.getLogger("hologram_plugins.browser")


class BrowserConfig(NetConfig):
    """settings.toml's ``[plugins.browser]`` (JSON Schema: manifests/browser.config.schema.json)."""

    executable: str = Field(
        "", description="Chromium's path or name; empty: the first of chromium, google-chrome on PATH."
    )
    headless: bool = Field(True, description="false shows the window (needs a display).")
    args: list[str] = Field(default_factory=list, description="Extra Chromium command-line switches.")
    timeout_s: float = Field(30, gt=0, le=100, description="Longest wait for a page to load.")
    idle_timeout_s: float = Field(
        600,
        gt=0,
        description="Chromium (hundreds of MB) is stopped after this long without a call; the next starts it.",
    )
    max_chars: int = Field(
        20_000, gt=0, description="Text browser_read returns at most (max_chars may ask for less or more, up to 5x)."
    )


class State:
    """The config of this start; the browser itself is made on the first call (`browser()`)."""

    def __init__(self, config: BrowserConfig, data_dir: str) -> None:
        self.config = config
        self.data = Path(data_dir)
        self.policy: NetPolicy = config.policy()
        self._browser: Browser | None = None
        self.reaper: asyncio.Task[None] | None = None

    def browser(self) -> Browser:
        if self._browser is None:
            from hologram_plugins.browser.session import Browser, Settings  # websockets: loaded with the first call

            settings = Settings(
                self.config.executable, self.config.headless, list(self.config.args), self.config.timeout_s,
                self.data / "browser-profile",
            )  # fmt: skip
            self._browser = Browser(settings, self.policy)
        return self._browser


def _state(ctx: StartContext[BrowserConfig]) -> State:
    return State(ctx.config, ctx.data_dir)


plugin = Plugin("browser", state=_state, config=BrowserConfig)


@plugin.on_start
async def _start_reaper(ctx: StartContext[BrowserConfig]) -> None:
    state: State = plugin.state
    state.reaper = asyncio.ensure_future(_reap_idle(state))


@plugin.on_stop
async def _stop() -> None:
    state: State = plugin.state
    if state.reaper is not None:
        state.reaper.cancel()
    if state._browser is not None:
        await state._browser.shutdown()


async def _reap_idle(state: State) -> None:
    """Stop Chromium once nobody used it for `idle_timeout_s`: its processes hold hundreds of MB."""
    idle = state.config.idle_timeout_s
    while True:
        browser = state._browser
        due = idle
        if browser is not None and browser.chromium is not None and not browser.lock.locked():
            due = browser.used_at + idle - time.monotonic()
            if due <= 0:
                async with browser.lock:
                    note = await browser.shutdown()
                log.info("browser idle for %g s: %s", idle, note)
                due = idle
        await asyncio.sleep(max(0.05, min(due, 60.0)))


async def _run(action: Any, ctx: ToolContext) -> Any:
    """Start or restart Chromium, run `action(browser, tab)` under the lock; failures become tool errors."""
    from hologram_plugins.browser.cdp import CDPError
    from hologram_plugins.browser.chromium import LaunchError
    from hologram_plugins.browser.session import BrowserError

    browser = plugin.state.browser()
    async with browser.lock:
        browser.used_at = time.monotonic()
        try:
            note = await browser.ensure()
            result = await action(browser, await browser.tab(ctx.session_id or ""))
        except (BrowserError, LaunchError, CDPError) as exc:
            return tool_error(str(exc))
        refused = browser.refused()
        mine = [tab for tab in browser.tabs.values() if tab.session == (ctx.session_id or "")]
        dialogs = [d for tab in mine for d in tab.dialogs]
        for tab in mine:
            tab.dialogs.clear()
        browser.used_at = time.monotonic()
        notes = ""
        if dialogs:
            notes += "\n\n[dialogs the page showed, answered OK:\n" + "\n".join(f"- {d}" for d in dialogs) + "]"
        if refused:
            listed = "\n".join(f"- {r}" for r in dict.fromkeys(refused))
            notes += f"\n\n[requests refused by the network guard:\n{listed}]"
        if isinstance(result, dict):  # a screenshot: its text is the content, the PNG the blob
            return {**result, "content": note + str(result["content"]) + notes}
        return note + str(result) + notes


async def _show(browser: Browser, tab: Tab, note: str = "", max_chars: int | None = None) -> str:
    from hologram_plugins.browser.page import render

    config: BrowserConfig = plugin.state.config
    limit = min(int(max_chars or config.max_chars), config.max_chars * 5)
    text = render(await browser.read(tab), limit)
    return f"[{note}]\n{text}" if note else text


async def _after(browser: Browser, before: Tab, ctx: ToolContext, problem: str, done: str) -> str:
    """The page after a click or Enter; a tab it opened (target=_blank) is current, shown once loaded."""
    after = await browser.tab(ctx.session_id or "")
    if after is not before:
        problem = problem or await browser.settled(after)
        done += "; it opened a new tab, now the current one"
    return await _show(browser, after, problem or done)


@plugin.tool("browser_open")
async def browser_open(ctx: ToolContext, url: str, new_tab: bool = False) -> Any:
    from hologram_plugins.web.guard import FetchError

    state: State = plugin.state
    try:
        target = state.policy.check_url(url)
        await state.policy.resolve(target)
    except FetchError as exc:
        return tool_error(str(exc).replace("the web plugin's config", "the browser plugin's config"))

    async def act(browser: Browser, tab: Tab) -> str:
        if new_tab:
            tab = await browser.new_tab(ctx.session_id or "")
        problem = await browser.navigate(tab, target.url)
        return await _show(browser, tab, problem)

    return await _run(act, ctx)


@plugin.tool("browser_read")
async def browser_read(ctx: ToolContext, max_chars: int | None = None) -> Any:
    async def act(browser: Browser, tab: Tab) -> str:
        return await _show(browser, tab, max_chars=max_chars)

    return await _run(act, ctx)


@plugin.tool("browser_click")
async def browser_click(ctx: ToolContext, n: int) -> Any:
    async def act(browser: Browser, tab: Tab) -> str:
        problem = await browser.click(tab, n)
        return await _after(browser, tab, ctx, problem, f"clicked [{n}]")

    return await _run(act, ctx)


@plugin.tool("browser_type")
async def browser_type(ctx: ToolContext, n: int, text: str, submit: bool = False) -> Any:
    async def act(browser: Browser, tab: Tab) -> str:
        problem = await browser.type(tab, n, text, submit)
        done = f"typed {len(text)} characters into [{n}]" + (" and pressed Enter" if submit else "")
        return await _after(browser, tab, ctx, problem, done)

    return await _run(act, ctx)


@plugin.tool("browser_screenshot")
async def browser_screenshot(ctx: ToolContext, full_page: bool = False) -> Any:
    from hologram_plugins.browser.session import screenshot_path

    async def act(browser: Browser, tab: Tab) -> dict[str, Any]:
        png = await browser.screenshot(tab, full_page)
        path = screenshot_path(plugin.state.data / "screenshots")
        path.write_bytes(png)
        page = await browser.read(tab)
        content = f"screenshot of {page.get('url')} saved: {path} ({len(png)} bytes, PNG)"
        return {"content": content, "blob": plugin.blob(png), "mime": "image/png"}

    return await _run(act, ctx)


@plugin.tool("browser_tabs")
async def browser_tabs(ctx: ToolContext, select: int | None = None) -> Any:
    from hologram_plugins.browser.session import describe_tabs

    async def act(browser: Browser, tab: Tab) -> str:
        if select is not None:
            await browser.select((ctx.session_id or ""), select)
        return describe_tabs(await browser.list_tabs(ctx.session_id or ""))

    return await _run(act, ctx)


@plugin.tool("browser_close")
async def browser_close(ctx: ToolContext, tab: int | None = None) -> Any:
    from hologram_plugins.browser.session import describe_tabs

    state: State = plugin.state
    browser = state._browser
    if browser is None or browser.chromium is None:
        return "the browser is not running"
    if tab is not None:

        async def act(browser: Browser, current: Tab) -> str:
            await browser.close_tab((ctx.session_id or ""), tab)
            return f"closed tab {tab}; open tabs:\n" + describe_tabs(await browser.list_tabs(ctx.session_id or ""))

        return await _run(act, ctx)
    async with browser.lock:
        note = await browser.shutdown()
    return f"closed the browser: {note}; browser_open starts it again (same profile: cookies and logins kept)"
