"""The Memory page in a real headless Chromium against a real `hologram up --port 0` (the builtin graph with
the http plugin) whose data directory was seeded before start with the real stores: sessions, an L2 event,
a learnt scene and an L3 graph written through `GraphStore.move` (three triples read from one block). A
provider (the strict mock) is configured so the page opens on its tabs, not the first-run screen.

Proven through the page only: the L3 and scene counts; the entity box shows an entity's neighbourhood as
triples, each with its source (time, session, the source text); clicking an entity in a triple shows that
entity's neighbourhood; a search shows an L3 triple hit with its layer and source, and marks the name a hit
matched in its passage; 2 hops; the strings in 中文; Distill now answers with what it moved.

Mutation checks (done, panels.js copied aside and back): dropping the source text from `sourceCell` turns
test_an_entity_neighbourhood_with_sources red; making the entity links do nothing (no `showGraph` in their
onclick) turns test_clicking_an_entity_shows_its_neighbourhood red.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

import pytest

from mock_llm import MockLLM
from tests.cli.memory_seed import SOURCE_TEXT, SOURCE_TS_MS, seed, seed_graph
from tests.kit.providers import provider_toml, write_settings

from .browser import Page, WebKernel, page_at, require_browser

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory, mock: MockLLM) -> Iterator[tuple[WebKernel, str, dict[str, str]]]:
    require_browser()
    k = WebKernel(tmp_path_factory.mktemp("webmem"))
    ids = seed(k.data)
    seed_graph(k.data, ids["en"])
    write_settings(k.data / "settings.toml", provider_toml(mock, "p1"))
    try:
        link = k.start()
        yield k, link, ids
    finally:
        k.stop()


@pytest.fixture(scope="module")
def page(seeded: tuple[WebKernel, str, dict[str, str]]) -> Iterator[Page]:
    with page_at(seeded[1]) as p:
        yield p


def rows(page: Page) -> list[tuple[str, str, str]]:
    return [
        (r.find_element("css selector", ".subject").text, r.find_element("css selector", ".predicate").text,
         r.find_element("css selector", ".value").text)
        for r in page.finds("#memory-triples-body tr.triple")
    ]  # fmt: skip


def show_entity(page: Page, name: str, hops: str = "1") -> None:
    from selenium.webdriver.support.ui import Select

    page.type("#memory-entity", name)
    Select(page.find("#memory-hops")).select_by_value(hops)
    page.click("#memory-graph")


def test_counts_include_l3_and_scenes(page: Page) -> None:
    page.click("#tab-memory")
    page.wait(lambda: page.text("#memory-stats dd[data-layer=l3_triples]") == "3", "3 L3 triples counted")
    assert page.text("#memory-stats dd[data-layer=scenes]") == "1"
    assert page.text("#memory-stats dd[data-layer=l2]") == "1"
    assert page.text("#memory-stats dd[data-layer=l3_entities]") == "4"


def test_an_entity_neighbourhood_with_sources(page: Page, seeded: tuple[WebKernel, str, dict[str, str]]) -> None:
    page.click("#tab-memory")
    show_entity(page, "Caroline")
    got = page.wait(lambda: rows(page) if len(rows(page)) == 2 else None, "Caroline's two triples")
    assert set(got) == {("Caroline", "likes", "pottery"), ("Caroline", 'has "best" friend', "Mel")}
    for row in page.finds("#memory-triples-body tr.triple"):
        assert row.find_element("css selector", ".source-text").text == SOURCE_TEXT
        assert row.find_element("css selector", ".source .session").text == seeded[2]["en"]
        when = row.find_element("css selector", ".source .when").text
        assert str(datetime.fromtimestamp(SOURCE_TS_MS / 1000).year) in when, when
    assert "Caroline" in page.text("#memory-graph-title")
    page.shot("memory-graph")


def test_clicking_an_entity_shows_its_neighbourhood(page: Page) -> None:
    page.click("#tab-memory")
    show_entity(page, "Caroline")
    page.wait(lambda: len(rows(page)) == 2, "Caroline's triples")
    page.click("#memory-triples-body td.value a.entity[data-entity='Mel']")
    page.wait(lambda: ("Mel", "lives in", "北京") in rows(page), "Mel's neighbourhood after the click")
    assert page.find("#memory-entity").get_attribute("value") == "Mel"
    assert "Mel" in page.text("#memory-graph-title")


def test_two_hops_and_an_unknown_entity(page: Page) -> None:
    page.click("#tab-memory")
    show_entity(page, "Caroline", hops="2")
    page.wait(lambda: len(rows(page)) == 3, "three triples at two hops")
    show_entity(page, "Nobody Known", hops="1")
    page.wait(lambda: page.find("#memory-no-triples").is_displayed(), "the nothing-known line")
    assert not page.find("#memory-triples").is_displayed()
    assert "Nobody Known" in page.text("#memory-no-triples")


def test_search_shows_an_l3_hit_with_its_source(page: Page) -> None:
    page.click("#tab-memory")
    page.type("#memory-q", "Caroline pottery")
    page.find("#memory-q").submit()
    hit = page.wait(
        lambda: next(iter(page.finds("#memory-hits-body tr.hit[data-layer='L3'][data-kind='triple']")), None),
        "an L3 triple hit",
    )
    assert hit.find_element("css selector", ".layer").text == "L3"
    assert "pottery" in hit.find_element("css selector", ".text").text
    assert SOURCE_TEXT in hit.find_element("css selector", ".source").text


def test_search_marks_why_a_hit_matched(page: Page) -> None:
    """Issue 39 item 6: the passage a hit matched in, the rare token (a name) marked, the layer spelled L2."""
    page.click("#tab-memory")
    page.type("#memory-q", "Bartholomew")
    page.find("#memory-q").submit()
    hit = page.wait(
        lambda: next(iter(page.finds("#memory-hits-body tr.hit[data-layer='L2'] .passage mark")), None),
        "an L2 hit with its match marked",
    )
    assert hit.text == "Bartholomew"
    row = page.find("#memory-hits-body tr.hit[data-layer='L2']")
    assert row.find_element("css selector", ".layer").text == "L2"
    assert "saffron pancakes" in row.find_element("css selector", ".passage").text


def test_in_chinese(page: Page) -> None:
    page.click("#tab-memory")
    page.click("#lang-zh")
    try:
        page.wait(lambda: page.text("#memory-graph") == "显示", "Chinese labels")
        show_entity(page, "Mel")
        page.wait(lambda: "记忆中关于“Mel”的知识" in page.text("#memory-graph-title"), "the Chinese title")
        assert page.text("#memory-triples th") == "主语"
        assert page.text("#memory-distill") == "立即提炼"
        page.shot("memory-graph-zh")
    finally:
        page.click("#lang-en")
        page.wait(lambda: page.text("#tab-memory") == "Memory", "English again")


def test_distill_now(page: Page) -> None:
    """With the default thresholds (72 h idle) the seeded L2 event is too fresh: nothing moves, and the page
    says so in numbers."""
    page.click("#tab-memory")
    page.click("#memory-distill")
    status = page.wait(lambda: page.text("#memory-distill-status") if "L3" in page.text("#memory-distill-status") else None,
                       "the distillation's outcome")  # fmt: skip
    assert status.startswith("0 event(s) moved to L3"), status
