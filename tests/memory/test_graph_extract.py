"""The deterministic extractor on English and Chinese samples: what it reads, and that every value is in the
source text (the gate both extractors share).

Mutation-checked (file copied to /tmp, edited, back): resolving "I" to a fixed "user" instead of the turn's
speaker turns ``test_english_first_person_is_the_speaker`` red; dropping the 他/她 ambiguity guard turns
``test_chinese_pronoun_resolved_only_when_one_person_was_named`` red.
"""

from __future__ import annotations

from hologram.memory.cold.blocks import build_event
from hologram.memory.graph.extract import DeterministicExtractor, extract_chinese, extract_english, gate


def _spo(spans: object) -> set[tuple[str, str, str]]:
    return {(s.subject, s.predicate, s.value) for s in spans}  # type: ignore[attr-defined]


def test_english_first_person_is_the_speaker() -> None:
    record = build_event(
        timestamp=1_700_000_000,
        input="Melanie: My favorite book is Charlotte's Web. I went to a pottery class yesterday with my daughter Emma.",
        partner="Melanie",
    )
    triples = DeterministicExtractor().extract(record)
    got = {(t.subject, t.predicate, t.value) for t in triples}
    assert got == {
        ("Melanie", "favorite book", "Charlotte's Web"),
        ("Melanie", "went to", "pottery class"),
        ("Melanie", "has daughter", "Emma"),
    }
    assert all(t.source_event == record.id and t.source_block == record.blocks[0].id for t in triples)
    assert all(t.valid_at == record.ts_ms for t in triples)


def test_english_a_named_relative_at_the_start_of_a_sentence_and_where_they_live() -> None:
    """Seen as a newcomer: "My sister Alice lives in Lisbon and works as a marine biologist." gave nothing —
    the family rule wanted a lower-case "my", and no rule read a named person's home. Mutation check (done):
    the family rule without ``[Mm]`` or the new third-person rule removed fails this test."""
    got = _spo(extract_english("My sister Alice lives in Lisbon and works as a marine biologist.", "user"))
    assert got == {("user", "has sister", "Alice"), ("Alice", "live in", "Lisbon")}
    assert _spo(extract_english("I live in Porto. Bob worked at Siemens.", "Eve")) == {
        ("Eve", "live in", "Porto"),
        ("Bob", "worked at", "Siemens"),
    }


def test_english_drops_pronouns_time_phrases_and_non_names() -> None:
    assert (
        _spo(extract_english("I adopted her two years ago. It is a great way to relax. Sounds like a blast!", "Jo"))
        == set()
    )
    assert _spo(extract_english("Yoga is a great way to relax. Melanie loves pottery.", "x")) == {
        ("Melanie", "loves", "pottery"),
    }
    assert _spo(extract_english("I got back from a trip. I love how it shows the light.", "Evan")) == set()


def test_chinese_patterns() -> None:
    assert _spo(extract_chinese("我喜欢爬山，上周末去了莫干山。", "小林")) == {
        ("小林", "喜欢", "爬山"),
        ("小林", "去", "莫干山"),
    }
    assert _spo(extract_chinese("我上个月搬到杭州了，在阿里巴巴工作。", "阿梅")) == {
        ("阿梅", "搬到", "杭州"),
        ("阿梅", "工作于", "阿里巴巴"),
    }
    assert ("小林", "在读", "三体") in _spo(extract_chinese("我在读《三体》。", "小林"))


def test_chinese_pronoun_resolved_only_when_one_person_was_named() -> None:
    assert ("张伟", "去", "北京") in _spo(extract_chinese("张伟是一名医生，他昨天去了北京。", "x"))
    assert _spo(extract_chinese("李娜和王芳都喜欢跑步，她周末去公园。", "x")) == set()


def test_every_value_occurs_in_its_block() -> None:
    texts = [
        "Caroline: I'm keen on counseling or working in mental health.",
        "阿梅: 我也喜欢科幻小说，最喜欢刘慈欣。",
        "John: I bought a lot of new books, and now my bookcase is almost full!",
    ]
    extractor = DeterministicExtractor()
    n = 0
    for k, text in enumerate(texts):
        record = build_event(timestamp=1_700_000_000 + k, input=text)
        for t in extractor.extract(record):
            n += 1
            assert gate(t.value, record.blocks[0].text), t
    assert n >= 3
    assert not gate("Paris", "I went to Rome") and gate("new  BOOKS", "a lot of new books")


def test_a_question_is_not_a_fact() -> None:
    """Issue 39: "我的车牌号是多少？" was stored as ``user | 车牌号 | 多少``; the statement next to it still counts.
    Mutation check (done): the extractor reading the text with its questions turns this red."""
    extractor = DeterministicExtractor()
    asked = build_event(timestamp=1_700_000_000, input="我的车牌号是多少？")
    assert extractor.extract(asked) == []
    asked_en = build_event(timestamp=1_700_000_001, input="Is my favorite book Charlotte's Web?")
    assert extractor.extract(asked_en) == []
    both = build_event(timestamp=1_700_000_002, input="What was it again? My favorite book is Charlotte's Web.")
    assert {(t.predicate, t.value) for t in extractor.extract(both)} == {("favorite book", "Charlotte's Web")}
