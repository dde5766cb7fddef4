"""The chat keeps your place (issue 41 item 7), in a real headless Chromium against a real `hologram up --port 0`
(the builtin graph with the http plugin, a provider configured: the strict DeepSeek mock). One kernel and one
browser for the module; the tests run in file order as one user's afternoon in one session, then a second.

Proven through the page only (its DOM, its scroll position, real wheel scrolls, clicks and reloads):
- the chat follows the newest event while you are at the bottom, whatever its height (deltas of ~1,000 px),
  and stops when you scroll up: the view stays put while the turn goes on, "Jump to latest" appears and
  brings you back, and following resumes;
- a reload lands on the pending approval — on screen and not covered, although five tall cards follow it —
  and answering it there runs the call; a card waiting for approval says so;
- a session reopened from the Sessions tab shows the approval decisions (approved, denied) from the stored
  results, and a running call's live output from the stream's replay, which goes on arriving;
- a new session is titled by the kernel from its first input, shown at the head of the chat and in the
  Sessions tab, and renamed in place;
- after the switch to 中文 no English string of the i18n table is left on any tab (old cards included), and
  after the switch back no Chinese one;
- at 360, 768 and 1280 px, in English and 中文, no tab scrolls sideways (document scrollWidth ≤ its width).

Mutation checks (done, the static file copied aside and back): in follow.js, measuring "near the bottom" after
each event as the page did (`settle` scrolling only when within 160 px of the bottom) turns
test_follows_the_newest_event_whatever_its_height red; the scroll listener never stopping to follow turns
test_scrolling_up_stops_following_and_jump_brings_you_back red (the view is pulled down); `target` ignoring a
pending approval (always the bottom) turns test_a_reload_lands_on_the_pending_approval red (the approve button
is off screen), and so does `land` leaving the view at the top (the old page's landing). In turn.js, `decided` not drawing stored decisions (history skipped) turns
test_a_reopened_session_shows_decisions_and_live_output red; the tool card's title written with `text:` instead
of `i18n:` turns test_the_language_switch_relabels_old_cards red ("Tool" left in 中文). In app.css, without the
narrow-screen block the 360 px check fails (the Sessions tab 550 px wide).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mock_llm import MockLLM
from tests.kit.providers import provider_toml, write_settings

from .browser import Page, WebKernel, chinese_left, english_left, page_at, require_browser

pytestmark = pytest.mark.slow

TABS = ("chat", "sessions", "providers", "plugins", "memory")
AT_BOTTOM = "return window.scrollY + window.innerHeight >= document.documentElement.scrollHeight - 2;"
# on screen and usable: inside the band between the sticky header and the sticky composer, and the element
# itself (not something drawn over it) is what a click at its centre reaches
IN_VIEW = """
const el = arguments[0];
const r = el.getBoundingClientRect();
const top = document.querySelector('header.top').getBoundingClientRect().bottom;
const bottom = document.getElementById('composer').getBoundingClientRect().top;
if (r.height === 0 || r.top < top || r.bottom > bottom) return false;
const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
return hit === el || el.contains(hit);
"""
# what the page shows that is not its own wording (user and model text, tool data, names, ids, and the language
# switch, each language named in itself): left out of the language check, which is about the page's strings
DATA = (
    ".lang, .msg.user, .msg .text, details.reasoning .body, .tool pre, .approval .summary, "
    ".approval .reason, #chat-title, #chat-session, #sessions-body .title, #sessions-body .channel, "
    "#plugins-body .name, #plugins-body .waiting, #plugin-log, #providers-list strong, #providers-list .meta, "
    "#approvals-rules strong, .turn-note.error"
)


def block(n: int) -> str:
    """About 1,000 px of Markdown (30 paragraphs), all blocks the same length: one streamed delta each."""
    return "".join(f"Paragraph {n:02d}.{p:02d} of a tall answer.\n\n" for p in range(30))


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory, mock: MockLLM) -> Iterator[tuple[WebKernel, str]]:
    require_browser()
    k = WebKernel(tmp_path_factory.mktemp("webplace"))
    write_settings(k.data / "settings.toml", provider_toml(mock, "mock"))
    try:
        link = k.start()
        yield k, link
    finally:
        k.stop()


@pytest.fixture(scope="module")
def page(kernel: tuple[WebKernel, str]) -> Iterator[Page]:
    with page_at(kernel[1]) as p:
        p.visible("#view-chat")
        yield p


@pytest.fixture(autouse=True)
def fresh(mock: MockLLM) -> None:
    mock.reset()


def at_bottom(page: Page) -> bool:
    return bool(page.js(AT_BOTTOM))


def scroll_y(page: Page) -> float:
    return float(page.js("return window.scrollY"))


def in_view(page: Page, css: str) -> bool:
    found = page.finds(css)
    return bool(found) and bool(page.js(IN_VIEW, found[0]))


def js_click(page: Page, css: str) -> None:
    """A click that does not move the view (Selenium's own click scrolls the element into view first)."""
    page.js("arguments[0].click()", page.visible(css))


def shell(call: str, command: str) -> dict[str, Any]:
    return {"id": call, "name": "shell_run", "arguments": json.dumps({"command": command})}


def test_follows_the_newest_event_whatever_its_height(page: Page, mock: MockLLM) -> None:
    blocks = [block(n) for n in range(6)]
    mock.script([{"content": "".join(blocks), "chunk_chars": len(blocks[0]), "chunk_delay": 0.05}])
    page.send("写一个很长的回答")
    assert page.wait_turn_ended() == "answer"
    assert page.answer_of_last_turn() == "".join(blocks)
    tall = page.js("return document.querySelector('#messages .turn .text p').offsetHeight * 30")
    assert tall > 160 * 3, f"each delta is taller than the old 160 px margin several times over ({tall} px)"
    page.wait(lambda: at_bottom(page), "the view to follow the answer to its end")
    assert not page.find("#chat-jump").is_displayed()
    # the kernel titled the new session from its first input; the head of the chat shows it
    page.wait(lambda: page.text("#chat-title") == "写一个很长的回答", "the session's title from its first input")


def test_scrolling_up_stops_following_and_jump_brings_you_back(page: Page, mock: MockLLM) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    blocks = [block(n) for n in range(10, 14)]
    mock.script([
        {"content": "先运行一个命令。", "tool_calls": [shell("call_f1", "seq 1 150")]},
        {"content": "".join(blocks), "chunk_chars": len(blocks[0]), "chunk_delay": 0.02},
    ])  # fmt: skip
    page.send("运行 seq")
    page.visible("[data-testid=approve-call_f1]")
    assert page.text(".tool[data-call-id=call_f1] .state") == "waiting for approval", "not 'running…'"
    page.wait(lambda: at_bottom(page), "the view at the newest event (the approval)")
    ActionChains(page.driver).scroll_by_amount(0, -900).perform()  # the wheel, as a person scrolls
    page.wait(lambda: page.find("#chat-jump").is_displayed(), "the jump-to-latest button once scrolled up")
    left_at = scroll_y(page)
    assert not at_bottom(page)
    js_click(page, "[data-testid=approve-call_f1]")  # the turn goes on: a 150-line output, then ~4,000 px of text
    assert page.wait_turn_ended() == "answer"
    assert page.answer_of_last_turn() == "先运行一个命令。" + "".join(blocks)
    assert "150" in page.text(".tool[data-call-id=call_f1] .result")
    assert abs(scroll_y(page) - left_at) <= 1, "the view stayed where it was scrolled to"
    assert page.find("#chat-jump").is_displayed() and not at_bottom(page)
    page.shot("chat-jump-to-latest")

    page.click("#chat-jump")
    page.wait(lambda: at_bottom(page) and not page.find("#chat-jump").is_displayed(), "the view at the newest")
    # following again: the next tall answer is followed to its end
    mock.script([{"content": block(20) + block(21), "chunk_chars": len(block(20)), "chunk_delay": 0.05}])
    page.send("再来一次")
    assert page.wait_turn_ended() == "answer"
    page.wait(lambda: at_bottom(page), "the view to follow the next answer")


def test_a_reload_lands_on_the_pending_approval(page: Page, mock: MockLLM) -> None:
    """The approval card is followed by five tall cards of the same step: the bottom of the page is not where
    it is, and the page must land on the card itself, with its buttons on screen and clickable there."""
    tall = [
        {"id": f"call_n{i}", "name": "notes_search", "arguments": json.dumps({"query": f"第{i}条 " + "长查询 " * 400})}
        for i in range(5)
    ]
    mock.script([
        {"content": "这一步有六个调用。", "tool_calls": [shell("call_r1", "echo landed-here"), *tall]},
        {"content": "都完成了。"},
    ])  # fmt: skip
    page.send("运行并搜索")
    page.visible("[data-testid=approve-call_r1]")
    page.driver.refresh()
    page.visible("#view-chat")
    page.wait(lambda: page.finds(".tool[data-call-id=call_n4]"), "the replay drew the whole step again")
    page.wait(lambda: in_view(page, "[data-testid=approve-call_r1]"), "the approve button on screen after the reload")
    assert page.text(".tool[data-call-id=call_r1] .state") == "waiting for approval"
    assert not at_bottom(page), "the cards after it make the bottom another place: the card itself was landed on"
    page.shot("chat-reload-lands-on-approval")
    page.find("[data-testid=approve-call_r1]").click()
    assert page.wait_turn_ended() == "answer"
    card = ".tool[data-call-id=call_r1]"
    assert "landed-here" in page.text(f"{card} .result") and page.text(f"{card} .state") == "ok"
    assert page.text(f"{card} .approval .decision") == "Approved by the web page."


def test_a_reopened_session_shows_decisions_and_live_output(page: Page, mock: MockLLM, tmp_path: Path) -> None:
    go = tmp_path / "go"
    waiting = f"echo live-one; while [ ! -e {go} ]; do sleep 0.05; done; echo live-two"
    mock.script([
        {"content": "先运行。", "tool_calls": [shell("call_d1", "echo approved-out")]},
        {"content": "运行了。"},
        {"content": "再试一个。", "tool_calls": [shell("call_d2", "echo never-run")]},  # denied: the turn ends
        {"content": "这个会慢慢输出。", "tool_calls": [shell("call_d3", waiting)]},
        {"content": "输出完了。"},
    ])  # fmt: skip
    page.send("批准这个")
    js_click(page, "[data-testid=approve-call_d1]")
    assert page.wait_turn_ended() == "answer"
    page.send("拒绝这个")
    js_click(page, "[data-testid=deny-call_d2]")
    assert page.wait_turn_ended() == "denied"
    page.send("慢慢输出")
    js_click(page, "[data-testid=approve-session-call_d3]")
    page.wait(lambda: "live-one" in page.text(".tool[data-call-id=call_d3] .output"), "the live output")
    sid = page.js("return localStorage.getItem('hologram.session')")

    page.js("window.scrollTo(0, 0)")  # up to the head of the chat, under the sticky header
    page.click("#chat-new")
    page.wait(lambda: not page.finds("#messages .turn"), "an empty new conversation")
    page.click("#tab-sessions")
    page.click(f"#sessions-body tr[data-session='{sid}'] .open")
    page.visible("#view-chat")
    live = ".tool[data-call-id=call_d3]"
    page.wait(lambda: "live-one" in page.text(f"{live} .output"), "the running call's output so far, replayed")
    assert page.text(f"{live} .state") == "running…"
    assert page.text(f"{live} .approval .decision") == "Approved by the web page for this session."
    for call, decision, state, result in (
        ("call_d1", "Approved by the web page.", "ok", "approved-out"),
        ("call_d2", "Denied by the web page.", "denied", "not approved"),
    ):
        card = f".tool[data-call-id={call}]"
        assert page.text(f"{card} .approval .decision") == decision
        assert page.text(f"{card} .state") == state and result in page.text(f"{card} .result")
    assert page.text(".tool[data-call-id=call_d1] .approval") == "Approved by the web page.", "and nothing more"
    page.shot("chat-reopened-decisions")
    go.touch()  # the call finishes: its output goes on arriving in the reopened page
    assert page.wait_turn_ended() == "answer"
    page.wait(lambda: "live-two" in page.text(f"{live} .output"), "the rest of the live output")
    assert "live-one\nlive-two" in page.text(f"{live} .result") and page.text(f"{live} .state") == "ok"

    page.driver.refresh()  # all of it stored now: drawn from the history alone
    page.wait(lambda: page.text(f"{live} .state") == "ok", "the stored session drawn")
    assert page.text(f"{live} .approval .decision") == "Approved by the web page for this session."
    assert page.text(".tool[data-call-id=call_d2] .approval .decision") == "Denied by the web page."
    assert "live-one\nlive-two" in page.text(f"{live} .result")


def test_the_title_is_shown_and_renamed_in_place(page: Page) -> None:
    from selenium.webdriver.common.keys import Keys

    sid = page.js("return localStorage.getItem('hologram.session')")
    page.click("#tab-sessions")
    row = f"#sessions-body tr[data-session='{sid}'] .title"
    page.wait(lambda: page.text(row) == "写一个很长的回答", "the kernel's title in the Sessions tab")
    page.click("#tab-chat")
    assert page.text("#chat-title") == "写一个很长的回答"
    page.js("window.scrollTo(0, 0)")  # up to the head of the chat
    page.click("#chat-rename")
    box = page.visible("#chat-title-input")
    assert box.get_attribute("value") == "写一个很长的回答"
    box.send_keys(Keys.CONTROL, "a")
    box.send_keys("审批与输出", Keys.ENTER)
    page.wait(lambda: page.text("#chat-title") == "审批与输出", "the new title at the head of the chat")
    page.click("#tab-sessions")
    page.wait(lambda: page.text(row) == "审批与输出", "the new title in the Sessions tab")
    page.click("#tab-chat")
    page.js("window.scrollTo(0, 0)")
    page.click("#chat-rename")
    page.visible("#chat-title-input").send_keys("不要这个", Keys.ESCAPE)
    page.wait(lambda: page.find("#chat-title").is_displayed(), "the title again")
    assert page.text("#chat-title") == "审批与输出", "Escape keeps the title"


def test_a_failed_turn_keeps_saying_why(page: Page, mock: MockLLM) -> None:
    """The provider refuses the request (a 401): the turn's note says the kernel's message, and the turn's end
    ("an error") does not write over it. Mutation check (done): `Turn.ended` labelling every non-answer end —
    the note read "Ended: an error" and the provider's words were gone."""
    mock.script([{"error": {"status": 401, "message": "Authentication Fails (no such API key)"}}])
    page.send("this will fail")
    assert page.wait_turn_ended() == "error"
    note = page.last_turn().find_element("css selector", ".turn-note")
    assert "error" in (note.get_attribute("class") or "")
    assert "Authentication Fails" in note.text, note.text


def show_tab(page: Page, tab: str) -> None:
    page.click(f"#tab-{tab}")
    ready = {
        "chat": "#messages .turn",
        "sessions": "#sessions-body tr",
        "providers": "#providers-list li",
        "plugins": "#plugins-body tr[data-plugin=shell] .restart",
        "memory": "#memory-stats dd",
    }[tab]
    page.wait(lambda: page.finds(ready), f"the {tab} tab drawn")


def left_on_any_tab(page: Page, left: Callable[[Page], list[Any]]) -> dict[str, list[Any]]:
    """What ``left`` finds of the other language on each tab, by tab (shown in turn)."""
    found = {}
    for tab in TABS:
        show_tab(page, tab)
        if what := left(page):
            found[tab] = what
    return found


def test_the_language_switch_relabels_old_cards(page: Page, mock: MockLLM) -> None:
    """Old cards (ok, denied, a decision, a stopped turn's note) drawn in English, then 中文: nothing of the
    table's English is left on any tab; back to English: no Chinese left of the page's own strings."""
    mock.script([{"content": "慢慢地回答。" * 200, "chunk_delay": 0.05}])
    page.send("说很久")
    page.wait(lambda: len(page.answer_of_last_turn()) >= 8, "the answer to start streaming")
    page.click("#chat-stop")
    assert page.wait_turn_ended() == "cancelled"
    assert page.text("#messages .turn:last-child .turn-note") == "Stopped."
    assert page.text(".tool[data-call-id=call_d2] .state") == "denied"

    page.click("#lang-zh")
    page.wait(lambda: page.text("#tab-chat") == "对话", "the page in Chinese")
    assert left_on_any_tab(page, lambda p: english_left(p, DATA)) == {}
    page.click("#tab-chat")
    assert page.text(".tool[data-call-id=call_d1] .head .title") == "工具 shell_run"
    assert page.text(".tool[data-call-id=call_d1] .state") == "完成"
    assert page.text(".tool[data-call-id=call_d2] .state") == "已拒绝"
    assert page.text(".tool[data-call-id=call_d2] .approval .decision") == "已由 网页 拒绝。"
    assert page.text("#messages .turn:last-child .turn-note") == "已停止。"
    page.shot("chat-old-cards-zh")

    page.click("#lang-en")
    page.wait(lambda: page.text("#tab-chat") == "Chat", "the page in English again")
    assert left_on_any_tab(page, lambda p: chinese_left(p, DATA)) == {}
    page.click("#tab-chat")
    assert page.text(".tool[data-call-id=call_d2] .approval .decision") == "Denied by the web page."


@pytest.mark.parametrize("width", [360, 768, 1280])
def test_no_tab_scrolls_sideways(page: Page, width: int) -> None:
    """Every tab, in English and 中文: the document is no wider than the viewport (the header wraps, forms
    stack, wide tables scroll inside themselves). Screenshots of each in build/screenshots."""
    page.viewport(width, 900)
    try:
        for lang in ("en", "zh"):
            page.click(f"#lang-{lang}")
            for tab in TABS:
                show_tab(page, tab)
                wide = page.js("return [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
                assert wide[0] <= wide[1], f"{tab} at {width} px ({lang}): {wide[0]} px wide in a {wide[1]} px page"
                page.shot(f"layout-{width}-{lang}-{tab}")
    finally:
        page.click("#lang-en")
        page.driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
