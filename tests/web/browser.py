"""The parts the browser tests share: a real `hologram up --port 0` (the builtin graph, no provider yet — the
first run), the system Chromium driven by Selenium, and small helpers to wait on the page.

Why the system browser: Debian's `chromium` + `chromium-driver` (no browser downloads; `.ci/run` installs
them). Without /usr/bin/chromium the tests skip and say why — unless HOLOGRAM_REQUIRE_BROWSER=1 (set by
`.ci/run`), where a missing browser is a failure, so CI can never pass by skipping.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.kit.venv import offline_env
from tests.kit.wait import wait_until

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
SCREENSHOTS = REPO / "build" / "screenshots"
HOLOGRAM = [sys.executable, "-m", "hologram"]
READY_LINK = re.compile(r"web UI: (http://\S+/\?token=\S+)")


def require_browser() -> None:
    """Skip (or, under HOLOGRAM_REQUIRE_BROWSER=1, fail) when the system browser or Selenium is missing."""
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.exists()]
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append("the selenium package (pip install -e '.[dev]')")
    if not missing:
        return
    reason = "browser tests need " + ", ".join(missing) + ": apt-get install chromium chromium-driver"
    if os.environ.get("HOLOGRAM_REQUIRE_BROWSER") == "1":
        pytest.fail(reason + " (HOLOGRAM_REQUIRE_BROWSER=1: a missing browser is a failure)")
    pytest.skip(reason)


def chrome(user_data: Path, lang: str = "en-US") -> Any:
    """Headless Chromium with its own profile (so no test sees another's cookies or localStorage)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = str(CHROMIUM)
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                f"--user-data-dir={user_data}", "--window-size=1280,900", f"--lang={lang}"):  # fmt: skip
        options.add_argument(arg)
    options.add_experimental_option("prefs", {"intl.accept_languages": lang})
    return webdriver.Chrome(options=options, service=Service(str(CHROMEDRIVER)))


class WebKernel:
    """`hologram up --port 0` on the shipped manifests (the builtin graph, with the http plugin), an empty
    data directory (no provider: the page's first run), its output read line by line for the ready link.

    With `python` (a throwaway venv's, tests/kit/venv.py) the kernel runs from that environment, on a lock of
    the built-ins and the installed distributions — what `hologram plugin add` installs into and adds to —
    with pip offline (`offline_env`): what the page adds lands in that venv, never in the project's."""

    def __init__(self, root: Path, python: Path | None = None) -> None:
        self.root = root
        self.data = root / "data"
        self.lock = root / "hologram.lock"
        self.data.mkdir(parents=True)
        self.lines: list[str] = []
        self.process: subprocess.Popen[str] | None = None
        self.hologram = HOLOGRAM if python is None else [str(python), "-m", "hologram"]
        self.env = None if python is None else offline_env()
        sources = ["--no-discover", "-m", str(REPO / "manifests")] if python is None else []
        build = subprocess.run(
            [*self.hologram, "build", *sources, "-o", str(self.lock)],
            capture_output=True, text=True, cwd=root, timeout=120, env=self.env,
        )  # fmt: skip
        if build.returncode != 0:
            raise AssertionError(f"hologram build failed:\n{build.stdout}\n{build.stderr}")

    def start(self) -> str:
        """Starts the kernel; returns the ready link `up` prints once the http plugin listens."""
        self.process = subprocess.Popen(
            [*self.hologram, "up", "--lock", str(self.lock), "--data", str(self.data), "--port", "0"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=self.root, env=self.env,
        )  # fmt: skip
        out = self.process.stdout
        assert out is not None
        threading.Thread(target=lambda: self.lines.extend(iter(out.readline, "")), daemon=True).start()

        def link() -> str | None:
            if self.process is not None and self.process.poll() is not None:
                raise AssertionError("hologram up exited:\n" + "".join(self.lines))
            for line in list(self.lines):
                if m := READY_LINK.search(line):
                    return m.group(1)
            return None

        found: str = wait_until(link, timeout=120, what="`hologram up` to print the web UI link", interval=0.1)
        return found

    def output(self) -> str:
        return "".join(self.lines)

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process = None


class Page:
    """The browser on the page, with the waits the tests need (every wait is a failure bound, never a pause)."""

    def __init__(self, driver: Any) -> None:
        self.driver = driver

    def js(self, script: str, *args: Any, async_script: bool = False) -> Any:
        if async_script:
            return self.driver.execute_async_script(script, *args)
        return self.driver.execute_script(script, *args)

    def find(self, css: str) -> Any:
        from selenium.webdriver.common.by import By

        return self.driver.find_element(By.CSS_SELECTOR, css)

    def finds(self, css: str) -> list[Any]:
        from selenium.webdriver.common.by import By

        return list(self.driver.find_elements(By.CSS_SELECTOR, css))

    def wait(self, predicate: Callable[[], Any], what: str, timeout: float = 60) -> Any:
        from selenium.common.exceptions import StaleElementReferenceException

        return wait_until(predicate, timeout=timeout, what=what, interval=0.05,
                          retry_on=(StaleElementReferenceException,))  # fmt: skip

    def visible(self, css: str, timeout: float = 60) -> Any:
        def shown() -> Any:
            found = [e for e in self.finds(css) if e.is_displayed()]
            return found[0] if found else None

        return self.wait(shown, f"{css} to be shown", timeout)

    def click(self, css: str) -> None:
        """Click the first shown `css`; found again if the page redrew it in between (a table refreshed)."""

        def clicked() -> bool:
            found = [e for e in self.finds(css) if e.is_displayed()]
            if not found:
                return False
            found[0].click()
            return True

        self.wait(clicked, f"{css} to be shown and clicked")

    def type(self, css: str, text: str, clear: bool = True) -> None:
        box = self.visible(css)
        if clear:
            box.clear()
        box.send_keys(text)

    def text(self, css: str) -> str:
        found = self.finds(css)
        return str(found[0].text) if found else ""

    def shot(self, name: str) -> Path:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOTS / f"{name}.png"
        self.driver.save_screenshot(str(path))
        return path

    def shot_full(self, name: str) -> Path:
        """The whole page, not only what the window shows (a tall tab), in build/screenshots."""
        import base64

        width, height, y = self.js(
            "return [document.documentElement.clientWidth, document.documentElement.scrollHeight, window.scrollY]"
        )
        self.js("window.scrollTo(0, 0)")  # the sticky header at the top of the picture, not where the view was
        clip = {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}
        png = self.driver.execute_cdp_cmd("Page.captureScreenshot", {"captureBeyondViewport": True, "clip": clip})
        self.js("window.scrollTo(0, arguments[0])", y)
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOTS / f"{name}.png"
        path.write_bytes(base64.b64decode(png["data"]))
        return path

    def send(self, text: str) -> None:
        """Type ``text`` in the composer and press Enter; returns once the page drew the new turn."""
        from selenium.webdriver.common.keys import Keys

        turns = len(self.finds("#messages .turn"))
        self.type("#chat-input", text)
        self.find("#chat-input").send_keys(Keys.ENTER)
        self.wait(lambda: len(self.finds("#messages .turn")) > turns, f"the turn of {text!r} to appear")

    def viewport(self, width: int, height: int) -> None:
        """Lay the page out at ``width`` x ``height`` CSS pixels, exactly (a window cannot be made narrower than
        the browser's minimum; device metrics can, as a phone's are)."""
        self.driver.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )
        self.wait(lambda: self.js("return window.innerWidth") == width, f"the page to be {width} px wide")

    def last_turn(self) -> Any:
        turns = self.finds("#messages .turn")
        return turns[-1] if turns else None

    def answer_of_last_turn(self) -> str:
        """The raw text the page rendered for the last turn's answer (all its text segments, in order)."""
        return str(
            self.js(
                "const t = [...document.querySelectorAll('#messages .turn')].pop();"
                "return t ? [...t.querySelectorAll('.text')].map(e => e.dataset.raw || '').join('') : '';"
            )
        )

    def wait_turn_ended(self, timeout: float = 60) -> str:
        def ended() -> str | None:
            turn = self.last_turn()
            value = turn.get_attribute("data-ended") if turn is not None else None
            return str(value) if value else None

        result: str = self.wait(ended, "the last turn to end", timeout)
        return result


# every visible text node and placeholder outside `arguments[0]` (a selector): what the language checks read
VISIBLE_TEXT = """
const skip = arguments[0];
const out = [];
const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
for (let n = walker.nextNode(); n; n = walker.nextNode()) {
  const el = n.parentElement;
  if (!n.textContent.trim() || !el || el.closest(skip) || el.closest('script, style')) continue;
  if (!el.checkVisibility()) continue;
  out.push(n.textContent.trim());
}
for (const i of document.querySelectorAll('input, textarea')) if (i.checkVisibility() && i.placeholder) out.push(i.placeholder);
return out;
"""


def english_left(page: Page, data: str) -> list[tuple[str, str]]:
    """(key, text) of each English string of the i18n table still shown outside `data` (a CSS selector of what
    the page shows that is not its own wording: user and model text, names, the kernel's messages)."""
    tables = page.js("return window.i18n.STRINGS")
    texts = page.js(VISIBLE_TEXT, data)
    found = []
    for key, en in tables["en"].items():
        if en == tables["zh-CN"].get(key):
            continue  # the same in both (Hologram, L1…)
        for fragment in re.split(r"\{[a-z_]+\}", en):
            words = fragment.strip(" .,:;·—()…?!\"“”'")
            if len(re.findall(r"[A-Za-z]", words)) < 2:
                continue
            pattern = re.compile(r"(?<![A-Za-z])" + re.escape(words) + r"(?![A-Za-z])")
            found += [(key, text) for text in texts if pattern.search(text)]
    return found


def chinese_left(page: Page, data: str) -> list[str]:
    """Each Chinese text still shown outside `data`."""
    return [text for text in page.js(VISIBLE_TEXT, data) if re.search(r"[\u4e00-\u9fff]", text)]


@contextlib.contextmanager
def page_at(link: str) -> Iterator[Page]:
    """A browser of its own (a fresh profile: no cookie, no localStorage) on ``link``; closed and its profile
    removed on the way out, also when the test failed."""
    profile = temp_profile()
    driver = chrome(profile)
    try:
        driver.get(link)
        yield Page(driver)
    finally:
        driver.quit()
        remove_profile(profile)


def temp_profile() -> Path:
    return Path(tempfile.mkdtemp(prefix="hologram-chromium-"))


def remove_profile(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
