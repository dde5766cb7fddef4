"""The page says why a turn stopped early, in English and in Chinese: a turn the loop guard ended (issue 40 item 8),
in a real headless Chromium against a real `hologram up` of the shipped manifests, the strict mock as the model.

Mutation check (done): "loop" left out of turn.js's STOPS turns this red (the note shows the raw reason, "Ended:
loop", not the sentence).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from mock_llm import MockLLM
from tests.kit.providers import provider_toml, write_settings

from .browser import Page, WebKernel, page_at, require_browser

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory, mock: MockLLM) -> Iterator[Page]:
    require_browser()
    kernel = WebKernel(tmp_path_factory.mktemp("web-stops"))
    write_settings(kernel.data / "settings.toml", provider_toml(mock))
    try:
        link = kernel.start()
        with page_at(link) as p:
            yield p
    finally:
        kernel.stop()  # also when start failed: no kernel outlives its test run


def test_a_turn_the_loop_guard_ended_says_so_in_both_languages(page: Page, mock: MockLLM) -> None:
    mock.reset()
    repeat = {"id": "r{n}", "name": "settings_get", "arguments": json.dumps({"section": "agent"})}
    mock.script([{"tool_calls": [repeat]} for _ in range(4)])
    page.visible("#view-chat")
    page.send("check the agent settings")
    assert page.wait_turn_ended() == "loop"
    note = "#messages .turn:last-child .turn-note"
    assert page.text(note) == "Ended: the loop guard stopped the model repeating one tool call"
    page.click("#lang-zh")
    page.wait(lambda: page.text(note) == "结束：循环保护：模型反复进行同一个工具调用，已被停止", "the note in Chinese")
    page.click("#lang-en")
    page.wait(lambda: page.text("#tab-chat") == "Chat", "English again")
