"""tools/bench/memory_paraphrase.py's sets and baselines: the figures in docs/memory.md are only as good as the
sets' construction (facts in the first half, corrections 100+ turns later and counted as the evidence, the
later value must win) and the baselines' accounting (truncation keeps exactly the newest turns that fit)."""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

# memory.py runs with tools/bench on the path and imports its helpers as top-level modules; so do these tests
sys.path.append(str(Path(__file__).resolve().parents[2] / "tools" / "bench"))
bench = importlib.import_module("memory_paraphrase")
EN_FACTS, ZH_FACTS, _baselines, _BM25 = bench.EN_FACTS, bench.ZH_FACTS, bench._baselines, bench._BM25
build_set, sets = bench.build_set, bench.sets


def test_the_sets_plant_correct_and_ask_as_documented() -> None:
    built = sets()
    assert [s.name for s in built] == ["Chinese", "English"]
    assert [t.text for t in sets()[0].turns] == [t.text for t in built[0].turns]  # seeded: the same every run
    for s, facts in zip(built, (ZH_FACTS, EN_FACTS), strict=True):
        assert len(s.turns) == 320 and len(s.questions) == len(facts) == 18
        assert len(s.stale) == sum(1 for f in facts if f.corrected) == 6
        text = {t.dia_id: t.text for t in s.turns}
        for fact, (question, evidence) in zip(facts, s.questions, strict=True):
            assert question == fact.asked
            [where] = evidence
            assert (fact.corrected or fact.said) in text[where]  # a correction is the evidence, not the first value
            if fact.corrected:
                said = int(s.stale[question][1:])
                assert fact.said in text[s.stale[question]] and int(where[1:]) - said >= 100
            else:
                assert int(where[1:]) < 160  # said in the first half, asked after the whole conversation


def test_truncation_keeps_the_newest_turns_and_bm25_reads_han_as_bigrams() -> None:
    s = build_set("Chinese", ZH_FACTS[:3], (("天气", ("很好",), ("不错",)),), zh=True, turns=200)
    whole = _baselines(s, budget=1_000_000, pinned=10)
    assert whole["truncation"] == [1.0, 1.0, 1.0] and whole["bm25"] == [1.0, 1.0, 1.0]
    tiny = _baselines(s, budget=200, pinned=10)
    assert tiny["truncation"] == [0.0, 0.0, 0.0]  # the facts are 40+ turns back: none of the newest 10
    assert _BM25.tok("我的车牌号 KLM-4471") == ["我的", "的车", "车牌", "牌号", "klm", "4471"]
    assert all(re.fullmatch(r"\w+", t) for t in _BM25.tok("Which plane, UA 1618?"))
