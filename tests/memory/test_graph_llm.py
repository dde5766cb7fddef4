"""The LLM extraction path against the strict mock server: schema-constrained request, the value gate, the
predicate aliases, and a failure that leaves the event in L2.

Mutation-checked (file copied to /tmp, edited, back): skipping the value gate turns
``test_openai_json_schema_request_and_the_gate`` red (the invented value is stored); not validating against the
schema turns ``test_an_answer_breaking_the_schema_is_refused`` red.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from hologram.llm import ProviderChain
from hologram.memory.cold.blocks import build_event
from hologram.memory.cold.store import ColdStore
from hologram.memory.graph import open_graph_store
from hologram.memory.graph.cooling import distill
from hologram.memory.graph.fallback import FallbackExtractor
from hologram.memory.graph.llm_extract import ExtractionError, LLMExtractor
from mock_llm import MockLLM
from tests.kit.providers import provider

NOW = 1_800_000_000.0
TEXT = "Melanie: I love pottery and I painted a sunset with my kids last week."


def _record():  # type: ignore[no-untyped-def]
    return build_event(
        timestamp=1_700_000_000, input=TEXT, response="That sounds lovely!", session="s", partner="Melanie"
    )


def _answer(*triples: dict) -> dict:  # type: ignore[type-arg]
    return {"content": json.dumps({"triples": list(triples)})}


async def _extract(mock: MockLLM, record, **kw):  # type: ignore[no-untyped-def]
    async with ProviderChain([provider(mock, max_retries=0)]) as chain:
        extractor = LLMExtractor(chain, kind=mock.state.vendor, **kw)
        return extractor, await extractor.extract(record)


def test_openai_json_schema_request_and_the_gate(mock_llm: MockLLM) -> None:
    mock_llm.script(
        [
            _answer(
                {"subject": "Melanie", "predicate": "Loves", "value": "pottery", "block": 0, "confidence": 0.9},
                {"subject": "Melanie", "predicate": "painted", "value": "a sunset", "block": 0, "confidence": 0.8},
                {"subject": "Melanie", "predicate": "lives in", "value": "Paris", "block": 0, "confidence": 0.7},
                {"subject": "Melanie", "predicate": "has", "value": "kids", "block": 7, "confidence": 0.6},
            )
        ]
    )
    record = _record()
    extractor, triples = asyncio.run(_extract(mock_llm, record))
    assert {(t.subject, t.predicate, t.value) for t in triples} == {
        ("Melanie", "likes", "pottery"),  # "Loves" through the alias table
        ("Melanie", "painted", "a sunset"),
    }
    assert extractor.dropped == 2  # Paris is not in the text; block 7 does not exist
    assert all(t.source_block == record.blocks[0].id and t.source_event == record.id for t in triples)
    (request,) = mock_llm.requests
    assert request.status == 200 and not mock_llm.rejections  # the strict mock accepted the request as sent
    fmt = request.body["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    assert fmt["json_schema"]["schema"]["required"] == ["triples"]
    user = request.body["messages"][-1]["content"]
    assert user.index("[0] input by Melanie") < user.index("[1] response by assistant")  # reading order


def test_an_answer_breaking_the_schema_is_refused(mock_llm: MockLLM) -> None:
    mock_llm.script([_answer({"subject": "Melanie", "predicate": "likes", "value": "pottery", "block": 0})])
    with pytest.raises(ExtractionError, match=r"breaks the triples schema at triples/0: 'confidence' is a required"):
        asyncio.run(_extract(mock_llm, _record()))


def test_deepseek_failure_leaves_the_event_in_l2_until_a_later_run(deepseek: MockLLM, tmp_path: Path) -> None:
    """DeepSeek gets json_object (it has no json_schema); a non-JSON answer fails the event, which stays in L2
    and is distilled by the next run once the model answers properly."""
    deepseek.script(
        [
            {"content": "Sure! Here are the facts: Melanie likes pottery."},
            _answer({"subject": "Melanie", "predicate": "喜欢", "value": "pottery", "block": 0, "confidence": 1}),
        ]
    )
    record = _record()
    cold = ColdStore(tmp_path / "cold.db")
    cold.put([record], now=NOW - 100 * 3600)

    async def run() -> tuple[object, object]:
        async with ProviderChain([provider(deepseek, max_retries=0)]) as chain:
            extractor = LLMExtractor(chain, kind="deepseek")
            with open_graph_store(tmp_path / "graph.kz") as graph:
                first = await distill(cold, graph, extractor, now=NOW)
                assert cold.ids() == [record.id] and not graph.events_held([record.id])
                second = await distill(cold, graph, extractor, now=NOW)
                assert [(t.predicate, t.value) for t in graph.triples_of_events([record.id])] == [("likes", "pottery")]
                return first, second

    first, second = asyncio.run(run())
    assert first.failed[0][0] == record.id and "not JSON" in first.failed[0][1]  # type: ignore[attr-defined]
    assert second.moved == [record.id] and cold.ids() == []  # type: ignore[attr-defined]
    assert all(r.body["response_format"] == {"type": "json_object"} for r in deepseek.requests)
    assert not deepseek.rejections
    cold.close()


def test_auto_reads_by_the_rules_what_the_model_cannot(deepseek: MockLLM, tmp_path: Path) -> None:
    """``extractor = "auto"`` (issue 39 item 5): an event whose model answer is not JSON, or breaks the schema,
    is read by the rules and moves to L3 in the same run; a good answer is the model's; the failures are
    counted by reason in the run's report (one log line, not one per event)."""
    good = _answer({"subject": "Melanie", "predicate": "喜欢", "value": "pottery", "block": 0, "confidence": 1})
    deepseek.script(
        [
            {"content": "Sure! Here are the facts: Melanie likes pottery."},
            {"content": json.dumps({"triples": [{"subject": "Melanie"}]})},
            good,
            {"content": "I cannot answer in JSON, sorry."},
        ]
    )
    records = [
        build_event(timestamp=1_700_000_000 + i, input=TEXT, response="Nice!", session="s", partner="Melanie")
        for i in range(4)
    ]
    cold = ColdStore(tmp_path / "cold.db")
    cold.put(records, now=NOW - 100 * 3600)

    async def run() -> tuple[object, list[tuple[str, str, str, float]]]:
        async with ProviderChain([provider(deepseek, max_retries=0)]) as chain:
            extractor = FallbackExtractor(LLMExtractor(chain, kind="deepseek"))
            with open_graph_store(tmp_path / "graph.kz") as graph:
                report = await distill(cold, graph, extractor, now=NOW)
                found = graph.triples_of_events([r.id for r in records])
                assert extractor.by_model == 1
                return report, sorted((t.source_event, t.predicate, t.value, t.confidence) for t in found)

    report, found = asyncio.run(run())
    assert sorted(report.moved) == sorted(r.id for r in records) and cold.ids() == []  # type: ignore[attr-defined]
    assert report.failed == [] and report.extractor == "auto"  # type: ignore[attr-defined]
    assert report.fallbacks == {"the answer is not JSON": 2, "the JSON breaks the triples schema": 1}  # type: ignore[attr-defined]
    by_event = {event: (predicate, value, confidence) for event, predicate, value, confidence in found}
    assert by_event[records[2].id] == ("likes", "pottery", 1.0), "the model's reading, where it could"
    for i in (0, 1, 3):  # the rules' reading (confidence 0.5) of "I love pottery"
        assert ("love", "pottery", 0.5) in [(p, v, c) for e, p, v, c in found if e == records[i].id], found
    cold.close()


def test_questions_are_not_shown_to_the_model(mock_llm: MockLLM) -> None:
    """Issue 39: a question states no fact — the model is shown the input without it, and an input that is only a
    question is not sent at all. Mutation check (done): `request` without `without_questions` turns this red."""
    asked = build_event(timestamp=1_700_000_000, input="我的车牌号是多少？", session="s")
    extractor, triples = asyncio.run(_extract(mock_llm, asked))
    assert triples == [] and mock_llm.requests == [], "nothing to extract: no model call"
    mixed = build_event(timestamp=1_700_000_001, input="What was it again? My plate is KX-4471.", session="s")
    request, shown = extractor.request(mixed)
    said = str(request.messages[-1].content)
    assert "KX-4471" in said and "What was it again" not in said and shown == [0]
