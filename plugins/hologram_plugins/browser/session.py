"""The browser the tools drive: Chromium (chromium.py), its guard proxy (proxy.py) and its tabs over CDP (cdp.py).

Started on the first tool call, not with the plugin (a kernel that never browses never pays for Chromium).
Every call first checks that Chromium and its DevTools connection are alive; if Chromium crashed or was
killed, the next call starts a new one on the same profile and its result says so. One call at a time
(`lock`): the tabs are one person's browser.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hologram_plugins.browser.cdp import CDPConnection, CDPError
from hologram_plugins.browser.chromium import Chromium, find_executable
from hologram_plugins.browser.page import CHOOSE_JS, FOCUS_JS, LOCATE_JS, READ_JS
from hologram_plugins.browser.proxy import GuardProxy
from hologram_plugins.web.guard import NetPolicy

NAVIGATION_START_S = 0.5  # after a click or Enter: a navigation that has not begun by then is not coming


class BrowserError(RuntimeError):
    """A tool call that cannot be done; the message is for the model."""


@dataclass
class Tab:
    target_id: str
    conn: CDPConnection
    session: str
    dialogs: list[str] = field(default_factory=list)  # alerts, confirms and prompts answered since the last call
    tasks: set[asyncio.Task[Any]] = field(default_factory=set)

    def on_dialog(self, params: dict[str, Any]) -> None:
        """A dialog blocks the page's scripts until answered: accept it at once (a person would click OK) and
        tell the model what it said; `beforeunload` too, so a navigation the model asked for happens."""
        kind, message = params.get("type", "alert"), str(params.get("message", ""))
        self.dialogs.append(f"{kind}: {message}" if message else kind)
        task = asyncio.ensure_future(
            self.conn.send(
                "Page.handleJavaScriptDialog", {"accept": True, "promptText": params.get("defaultPrompt", "")}
            )
        )
        self.tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[Any]) -> None:
        self.tasks.discard(task)
        if not task.cancelled():
            task.exception()  # retrieved: a page closed meanwhile is not an error worth a log line


@dataclass
class Settings:
    executable: str
    headless: bool
    args: list[str]
    timeout_s: float
    profile: Path


@dataclass
class Browser:
    settings: Settings
    policy: NetPolicy
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    chromium: Chromium | None = None
    proxy: GuardProxy | None = None
    root: CDPConnection | None = None
    tabs: dict[str, Tab] = field(default_factory=dict)
    current: dict[str, str] = field(default_factory=dict)  # session id → its current tab's target id
    spare: str = ""  # the blank page Chromium starts with: nobody's tab
    closing: set[str] = field(default_factory=set)  # closed by us, maybe still listed for a moment
    restarts: int = 0
    used_at: float = 0.0  # monotonic time of the last call's start and end (the idle reaper's clock)
    order: list[str] = field(default_factory=list)  # target ids as first seen: tab numbers stay put

    # -- life --------------------------------------------------------------------------------------------

    async def ensure(self) -> str:
        """Start Chromium if it is not running; returns a note when it was restarted after a crash."""
        if self.chromium is not None and self.chromium.alive and self.root is not None and not self.root.closed:
            try:  # a Chromium killed a moment ago may not have closed its socket yet: ask it
                await self.root.send("Browser.getVersion", timeout_s=10)
                return ""
            except CDPError:
                pass
        crashed = self.chromium is not None
        await self.shutdown()
        executable = find_executable(self.settings.executable)
        try:
            self.proxy = GuardProxy(self.policy)
            await self.proxy.start()
            self.chromium = Chromium(self.settings.profile)
            await self.chromium.start(
                executable, proxy_port=self.proxy.port, headless=self.settings.headless, args=self.settings.args
            )
            self.root = await CDPConnection.connect(self.chromium.websocket_url)
            # a click on a download link saves nothing: files come in through the files tools, not a page
            await self.root.send("Browser.setDownloadBehavior", {"behavior": "deny"})
            pages = await self._all_pages()
            self.spare = pages[0]["targetId"] if pages else ""
        except BaseException:  # a half-started browser is stopped whole: the next call starts afresh, no crash note
            await self.shutdown()
            raise
        if crashed:
            self.restarts += 1
            return "[the browser had stopped (crashed or killed); a new one was started, its tabs are gone]\n"
        return ""

    async def shutdown(self) -> str:
        """Close every connection, stop Chromium (its whole process tree) and the proxy."""
        for tab in self.tabs.values():
            await tab.conn.close()
        self.tabs, self.current, self.order, self.spare = {}, {}, [], ""
        if self.root is not None:
            await self.root.close()
            self.root = None
        note = ""
        if self.chromium is not None:
            report = await self.chromium.stop()
            note = f"stopped Chromium ({report.killed_count} processes)"
            self.chromium = None
        if self.proxy is not None:
            await self.proxy.stop()
            self.proxy = None
        return note

    # -- tabs --------------------------------------------------------------------------------------------
    # A tab belongs to the session that opened it (or whose page opened it): another session — another chat,
    # a QQ group — neither lists it nor reads it, though all share one Chromium and its profile. The blank
    # page Chromium starts with (`spare`) is nobody's: it keeps the browser open when every tab is closed.

    async def _all_pages(self) -> list[dict[str, Any]]:
        assert self.root is not None
        targets = (await self.root.send("Target.getTargets"))["targetInfos"]
        listed = {t["targetId"] for t in targets}
        self.closing &= listed  # Target.closeTarget answers before the target is gone from the list
        pages = [t for t in targets if t.get("type") == "page" and t["targetId"] not in self.closing]
        alive = {p["targetId"] for p in pages}
        self.order = [t for t in self.order if t in alive]
        self.order += sorted(alive - set(self.order))  # Chromium lists the newest first; ours keep their place
        return sorted(pages, key=lambda p: self.order.index(p["targetId"]))

    async def pages(self, session: str) -> list[dict[str, Any]]:
        """The session's tabs in order; a tab nobody owns yet (a page opened it during this session's call:
        one call runs at a time) becomes the session's and its current tab."""
        pages = await self._all_pages()
        alive = {p["targetId"] for p in pages}
        for target_id in [t for t in self.tabs if t not in alive]:
            await self.tabs.pop(target_id).conn.close()
        for page in pages:
            if page["targetId"] not in self.tabs and page["targetId"] != self.spare:
                await self._attach(page["targetId"], session)
        return [p for p in pages if p["targetId"] in self.tabs and self.tabs[p["targetId"]].session == session]

    async def _attach(self, target_id: str, session: str) -> Tab:
        tab = self.tabs.get(target_id)
        if tab is None or tab.conn.closed:
            assert self.chromium is not None
            port = self.chromium.websocket_url.split(":")[2].split("/")[0]
            conn = await CDPConnection.connect(f"ws://127.0.0.1:{port}/devtools/page/{target_id}")
            tab = Tab(target_id, conn, session)
            conn.listeners["Page.javascriptDialogOpening"] = tab.on_dialog
            await conn.send("Page.enable")
            await conn.send("Runtime.enable")
            self.tabs[target_id] = tab
        self.current[session] = target_id
        return tab

    async def new_tab(self, session: str) -> Tab:
        assert self.root is not None
        created = await self.root.send("Target.createTarget", {"url": "about:blank"})
        self.order.append(created["targetId"])
        return await self._attach(created["targetId"], session)

    async def tab(self, session: str) -> Tab:
        """The session's current tab (made when it has none); one its page opened becomes current."""
        pages = await self.pages(session)
        current = self.tabs.get(self.current.get(session, ""))
        if current is not None and current.session == session:
            return current
        if pages:
            return await self._attach(pages[-1]["targetId"], session)
        return await self.new_tab(session)

    async def list_tabs(self, session: str) -> list[dict[str, Any]]:
        await self.tab(session)
        mine = self.current.get(session)
        return [
            {"n": i, "title": p.get("title", ""), "url": p.get("url", ""), "current": p["targetId"] == mine}
            for i, p in enumerate(await self.pages(session), 1)
        ]

    async def _numbered(self, session: str, n: int) -> str:
        pages = await self.pages(session)
        if not 1 <= n <= len(pages):
            raise BrowserError(f"no tab {n}; this session has {len(pages)} (browser_tabs lists them)")
        return str(pages[n - 1]["targetId"])

    async def select(self, session: str, n: int) -> Tab:
        return await self._attach(await self._numbered(session, n), session)

    async def close_tab(self, session: str, n: int) -> None:
        target_id = await self._numbered(session, n)
        assert self.root is not None
        tab = self.tabs.pop(target_id, None)
        if tab is not None:
            await tab.conn.close()
        self.closing.add(target_id)
        await self.root.send("Target.closeTarget", {"targetId": target_id})
        if self.current.get(session) == target_id:
            del self.current[session]

    # -- page actions -----------------------------------------------------------------------------------

    async def navigate(self, tab: Tab, url: str) -> str:
        loaded = tab.conn.expect("Page.loadEventFired")
        answer = await tab.conn.send("Page.navigate", {"url": url}, timeout_s=self.settings.timeout_s)
        if answer.get("errorText"):
            loaded.cancel()
            return str(answer["errorText"])
        return await self._wait(loaded)

    async def _wait(self, loaded: asyncio.Future[dict[str, Any]]) -> str:
        try:
            await asyncio.wait_for(loaded, self.settings.timeout_s)
        except asyncio.TimeoutError:
            return f"the page did not finish loading within {self.settings.timeout_s:g} s (shown as it is)"
        except CDPError as exc:
            return str(exc)
        return ""

    async def _main_frame_starts(self, tab: Tab) -> asyncio.Future[dict[str, Any]]:
        """A future for the main frame starting to load (an iframe loading is not a navigation)."""
        tree = await tab.conn.send("Page.getFrameTree")
        main = tree.get("frameTree", {}).get("frame", {}).get("id")
        return tab.conn.expect("Page.frameStartedLoading", lambda p: p.get("frameId") == main)

    async def settled(self, tab: Tab) -> str:
        """Wait (at most timeout_s) until a tab a page just opened has left about:blank and loaded. Polled:
        the tab was attached after its navigation began, so its load event may have passed already, and a
        promise awaited in the page dies with the blank document when the navigation commits."""
        deadline = time.monotonic() + self.settings.timeout_s
        while time.monotonic() < deadline:
            with contextlib.suppress(CDPError, BrowserError):
                state = await self.evaluate(tab, "[location.href, document.readyState]")
                if isinstance(state, list) and state[0] != "about:blank" and state[1] == "complete":
                    return ""
            await asyncio.sleep(0.05)
        return f"the new tab did not finish loading within {self.settings.timeout_s:g} s (shown as it is)"

    async def _after_input(self, tab: Tab, started: asyncio.Future[dict[str, Any]], act: Any) -> str:
        """Run `act` (a click or a key); if it starts a navigation, wait for the new page's load."""
        loaded = tab.conn.expect("Page.loadEventFired")
        await act()
        try:
            await asyncio.wait_for(asyncio.shield(started), NAVIGATION_START_S)
        except (asyncio.TimeoutError, CDPError):
            started.cancel()
            loaded.cancel()
            return ""
        return await self._wait(loaded)

    async def evaluate(self, tab: Tab, expression: str) -> Any:
        answer = await tab.conn.send(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True}
        )
        if "exceptionDetails" in answer:
            raise BrowserError(f"the page's script failed: {answer['exceptionDetails'].get('text', '')}")
        return answer.get("result", {}).get("value")

    async def read(self, tab: Tab) -> dict[str, Any]:
        page = await self.evaluate(tab, READ_JS)
        return page if isinstance(page, dict) else {"title": "", "url": "", "text": "", "items": []}

    async def click(self, tab: Tab, n: int) -> str:
        spot = await self.evaluate(tab, f"({LOCATE_JS})({int(n)})")
        if not spot:
            raise BrowserError(f"no element [{n}] on this page; browser_read numbers them again")
        x, y = float(spot["x"]), float(spot["y"])

        async def act() -> None:
            base = {"x": x, "y": y, "button": "left", "clickCount": 1}
            await tab.conn.send("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})
            await tab.conn.send("Input.dispatchMouseEvent", {"type": "mousePressed", **base})
            await tab.conn.send("Input.dispatchMouseEvent", {"type": "mouseReleased", **base})

        return await self._after_input(tab, await self._main_frame_starts(tab), act)

    async def type(self, tab: Tab, n: int, text: str, submit: bool) -> str:
        focused = await self.evaluate(tab, f"({FOCUS_JS})({int(n)})")
        if not focused:
            raise BrowserError(f"no element [{n}] on this page; browser_read numbers them again")
        if focused.get("tag") == "select":
            chosen = await self.evaluate(tab, f"({CHOOSE_JS})({int(n)}, {json.dumps(text)})")
            if chosen is None:
                raise BrowserError(f"[{n}] has no option {text!r}; its options: {', '.join(focused['options'])}")
        elif text:
            await tab.conn.send("Input.insertText", {"text": text})
        else:
            await tab.conn.send("Input.dispatchKeyEvent", {"type": "keyDown", "key": "Delete", "code": "Delete"})
        if not submit:
            return ""

        async def act() -> None:
            enter = {"key": "Enter", "code": "Enter", "windowsVirtualKeyCode": 13, "nativeVirtualKeyCode": 13}
            await tab.conn.send("Input.dispatchKeyEvent", {"type": "keyDown", "text": "\r", **enter})
            await tab.conn.send("Input.dispatchKeyEvent", {"type": "keyUp", **enter})

        return await self._after_input(tab, await self._main_frame_starts(tab), act)

    async def screenshot(self, tab: Tab, full_page: bool) -> bytes:
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            metrics = await tab.conn.send("Page.getLayoutMetrics")
            size = metrics.get("cssContentSize") or metrics.get("contentSize") or {}
            width, height = min(float(size.get("width", 1280)), 4000), min(float(size.get("height", 900)), 16000)
            params.update(
                captureBeyondViewport=True, clip={"x": 0, "y": 0, "width": width, "height": height, "scale": 1}
            )
        answer = await tab.conn.send("Page.captureScreenshot", params, timeout_s=max(30.0, self.settings.timeout_s))
        return base64.b64decode(answer["data"])

    def refused(self) -> list[str]:
        return self.proxy.take_refused() if self.proxy is not None else []


def screenshot_path(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for i in range(1, 10_000):
        path = folder / f"{stamp}-{i}.png"
        if not path.exists():
            return path
    raise BrowserError(f"too many screenshots in {folder}")


def describe_tabs(tabs: list[dict[str, Any]]) -> str:
    lines = [f"{'*' if t['current'] else ' '} [{t['n']}] {t['title'] or '(untitled)'} — {t['url']}" for t in tabs]
    return "\n".join(lines) if lines else "no tabs open"
