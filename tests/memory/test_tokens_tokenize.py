"""Token estimates and index terms, for English, Chinese and mixed text."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hologram.memory.text import tokenizer as tok
from hologram.memory.text.tokens import estimate_tokens


@pytest.fixture(autouse=True)
def not_held(monkeypatch: pytest.MonkeyPatch) -> None:
    """No hold from an earlier test of this process (`hologram up`'s hold is per process: `_preload`)."""
    monkeypatch.setattr(tok, "_held", False)
    monkeypatch.setattr(tok, "_requested", False)


def test_estimate_english_is_chars_over_four() -> None:
    assert estimate_tokens("a" * 40) == 10
    assert estimate_tokens("a" * 41) == 11
    assert estimate_tokens("") == 0
    assert estimate_tokens("a") == 1


def test_estimate_counts_each_chinese_character_as_a_token() -> None:
    text = "如何重置我的密码"  # 8 Han characters
    assert estimate_tokens(text) == 8
    # chars/4 would say 2 and overflow the window by 4x on Chinese history
    assert estimate_tokens(text) > len(text) // 4


def test_estimate_mixed_text_adds_both_parts() -> None:
    assert estimate_tokens("密码 password") == 2 + 3  # 2 Han + ceil(9 / 4)


@given(st.text(st.characters(categories=["Nd"]), min_size=1, max_size=12))
def test_a_number_is_its_own_stem(number: str) -> None:
    """Why numbers may skip the stemmer: Snowball returns a word of digits (any script's) unchanged."""
    assert tok._ENGLISH.stemWord(number) == number
    assert tok._words(number) == [number.lower()]


def test_numbers_stay_out_of_the_stem_cache() -> None:
    """A long session's new numbers (one a turn in the soak) would fill the bounded stem cache long after
    start-up, as memory growth; words still go through it. Mutation check (done): stemming numbers through
    the cache again turns this red."""
    terms = tok.tokenize("invoice 20261203 paid 4417 twice (9031)")
    assert {"20261203", "4417", "9031"} <= set(terms)
    cached = {**tok._stem.old, **tok._stem.young}
    assert not {"20261203", "4417", "9031"} & set(cached)
    assert "invoic" in terms and "invoice" in cached, "words still go through the cache"


def test_english_terms_drop_stopwords_and_are_stemmed() -> None:
    assert tok.tokenize("What are the Paintings of Caroline's friends?") == ["paint", "carolin", "friend"]
    assert tok.tokenize("she painted") == tok.tokenize("painting") == tok.tokenize("paints"), "Snowball stems"


def test_chinese_terms_use_jieba_words_once_loaded() -> None:
    assert tok.wait_for_jieba(timeout=60)
    terms, analyzer = tok.tokenize_tagged("如何重置我的密码")
    assert analyzer == tok.ANALYZER_JIEBA
    assert "密码" in terms and "重置" in terms
    assert "的" not in terms  # stop word


def test_mixed_text_keeps_both_scripts() -> None:
    assert tok.wait_for_jieba(timeout=60)
    terms = tok.tokenize("我买了 iPhones 在北京")
    assert tok.tokenize("iPhone")[0] in terms and "北京" in terms


def test_han_text_never_waits_for_jieba(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before the dictionary is loaded, Han text is analysed by bigrams at once and the load starts in the
    background: the first reply never pays for jieba."""
    release = threading.Event()
    started = threading.Event()

    def slow_load() -> None:
        started.set()
        release.wait(10)
        tok._ready.set()

    monkeypatch.setattr(tok, "_ready", threading.Event())
    monkeypatch.setattr(tok, "_thread", None)
    monkeypatch.setattr(tok, "_segmenter", None)
    monkeypatch.setattr(tok, "_load", slow_load)
    try:
        terms, analyzer = tok.tokenize_tagged("重置密码")
        assert analyzer == tok.ANALYZER_BIGRAM
        assert "密码" in terms and "重置" in terms and "置密" in terms
        assert started.wait(5), "the background load was not started"
        assert not tok.jieba_ready()
    finally:
        release.set()
        if tok._thread is not None:
            tok._thread.join(5)


def test_warm_up_starts_one_thread_only(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    monkeypatch.setattr(tok, "_thread", None)
    monkeypatch.setattr(tok, "_ready", threading.Event())
    monkeypatch.setattr(tok, "_load", lambda: calls.append(1))
    tok.warm_up()
    tok.warm_up()
    assert tok._thread is not None
    tok._thread.join(5)
    assert calls == [1]


def test_a_held_warm_up_starts_nothing_until_released(monkeypatch: pytest.MonkeyPatch) -> None:
    """`hologram up` holds the warm-up for its first answer (hologram/kernel/preload.py): asked for meanwhile (memory's
    open, `word_tag`), it starts at the release, once."""
    calls: list[int] = []
    for name, value in (("_thread", None), ("_held", False), ("_requested", False)):
        monkeypatch.setattr(tok, name, value)
    monkeypatch.setattr(tok, "_ready", threading.Event())
    monkeypatch.setattr(tok, "_load", lambda: calls.append(1))
    tok.hold_warm_up()
    tok.warm_up()
    assert tok.word_tag("北京") is None
    assert tok._thread is None, "held: nothing started"
    tok.release_warm_up()
    assert tok._thread is not None
    tok._thread.join(5)
    tok.release_warm_up()
    assert calls == [1]


def test_han_text_loads_the_segmenter_on_demand_while_held(monkeypatch: pytest.MonkeyPatch) -> None:
    """While held, Chinese text does not fall back to bigrams: it loads the segmenter (from its cache) and
    gets jieba's words — a Chinese first turn is segmented as every later one."""
    for name, value in (("_thread", None), ("_segmenter", None), ("_held", False), ("_requested", False)):
        monkeypatch.setattr(tok, name, value)
    monkeypatch.setattr(tok, "_ready", threading.Event())
    tok.hold_warm_up()
    assert tok.needs_segmenter("重置密码") and not tok.needs_segmenter("reset my password")
    terms, analyzer = tok.tokenize_tagged("重置密码")
    assert tok._thread is not None, "the load ran (the path under test)"
    assert analyzer == tok.ANALYZER_JIEBA
    assert "密码" in terms and "重置" in terms and "置密" not in terms
    assert not tok.needs_segmenter("重置密码")


def test_chinese_terms_are_jiebas_search_words_minus_stop_words() -> None:
    """The compact segmenter's tokens are jieba's own (tests/memory/test_segment.py), so stored "jieba" term
    vectors stay valid; here, end to end through tokenize against the real jieba."""
    import jieba

    jieba.setLogLevel(60)
    assert tok.wait_for_jieba(timeout=120)
    terms, analyzer = tok.tokenize_tagged("小明硕士毕业于中国科学院计算所，后在日本京都大学深造")
    assert analyzer == tok.ANALYZER_JIEBA
    expected = [
        w
        for run in ("小明硕士毕业于中国科学院计算所", "后在日本京都大学深造")
        for w in jieba.lcut_for_search(run)
        if w not in tok._CJK_STOP
    ]
    assert terms == expected


def test_word_tag_tells_names_places_times_and_numerals() -> None:
    assert tok.wait_for_jieba(timeout=120)
    assert [tok.word_tag(w) for w in ("鲁迅", "上海", "下午", "三点", "中国科学院")] == ["nr", "ns", "t", "m", "nt"]
    assert tok.word_tag("hologram") is None


def test_word_tag_never_waits_for_the_load(monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[int] = []
    monkeypatch.setattr(tok, "_ready", threading.Event())
    monkeypatch.setattr(tok, "_segmenter", None)
    monkeypatch.setattr(tok, "_thread", None)
    monkeypatch.setattr(tok, "_load", lambda: started.append(1))
    assert tok.word_tag("上海") is None
    assert tok._thread is not None
    tok._thread.join(5)
    assert started == [1]
