"""`hologram up` holds its start-up loads (the segmenter, the embedding model) until the first answer
(hologram/kernel/preload.py, `start(hold=True)`): an English first turn is answered with nothing loading beside it,
the loads begin once it ended; a Chinese first turn still gets jieba's words (the segmenter loads on demand),
never character bigrams.

Real objects: `Kernel` (not run), `attach_agent`, the turn loop with an instant LLM, the real preload thread
and the real segmenter (from its cache); only the embedding model is replaced by a marker (no ONNX build in a
unit test). The LLM records, at the moment the request is made, what had been loaded.

Mutation checks (done): `tokenize_tagged` calling ``warm_up()`` instead of loading on demand while held, with
`Agent.run_turn` not calling `ensure_segmenter`, turns ``test_a_chinese_first_turn_gets_jiebas_words`` red
(analyzer ``cjk-bigram+snowball``); `TurnService._run_turn` not releasing turns
``test_an_english_first_turn_is_answered_before_the_loads_begin`` red (the loads never begin); `start`
ignoring `hold` turns it red too (the segmenter was loading during the turn).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hologram.agent import attach_agent
from hologram.kernel import Kernel
from hologram.kernel import preload as _preload
from hologram.llm import ChatRequest, ChatResult
from hologram.memory.embed import embedder as embed
from hologram.memory.text import tfidf
from hologram.memory.text import tokenizer as tok
from hologram.plan.lock import LOCK_VERSION, Lock


class Marked:
    model_id = "marked"

    def __init__(self, *prefer: object) -> None:  # stands in for load_embedder(prefer)
        pass

    def embed(self, texts: list[str]) -> Any:  # pragma: no cover - the turns here are answered by BM25
        raise AssertionError("not used")


class Instant:
    """Answers at once; notes, when asked, whether the loads had begun."""

    def __init__(self) -> None:
        self.seen: list[dict[str, bool]] = []

    async def complete(self, request: ChatRequest, on_delta: Any = None) -> ChatResult:
        self.seen.append(
            {"released": _preload.released(), "segmenter_begun": tok._thread is not None, "jieba": tok.jieba_ready()}
        )
        return ChatResult("hello back", None, (), None, "stop")


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A process in which neither the preload nor the segmenter ran yet (the state `hologram up` begins in)."""
    for name, value in (("_thread", None), ("_segmenter", None), ("_held", False), ("_requested", False)):
        monkeypatch.setattr(tok, name, value)
    monkeypatch.setattr(tok, "_ready", threading.Event())
    for name, value in (("_thread", None), ("_result", {})):
        monkeypatch.setattr(_preload, name, value)
    monkeypatch.setattr(_preload, "_done", threading.Event())
    monkeypatch.setattr(_preload, "_released", threading.Event())
    monkeypatch.setattr(embed, "load_embedder", Marked)
    yield
    _preload.release()  # a thread still held would keep waiting for ever
    _preload._done.wait(30)
    if tok._thread is not None:
        tok._thread.join(30)


def first_turn(tmp_path: Path, text: str) -> tuple[Any, Instant, Any]:
    data = {"lock-version": LOCK_VERSION, "content-hash": "h", "plugin": [{"name": "kernel"}]}
    kernel = Kernel(Lock.from_data(tmp_path / "hologram.lock", data), tmp_path)
    _preload.start(hold=True)  # what `hologram up` does first

    async def scenario() -> Any:
        service = attach_agent(kernel)
        llm = Instant()
        service.agent.llm = llm  # type: ignore[assignment]
        try:
            result = await asyncio.wait_for(_turn(service, text), 30)
            memory = service.agent.memory
            assert memory is not None and await asyncio.to_thread(memory.embedder_ready.wait, 30)
            return result, llm, memory.embedder
        finally:
            await service.aclose()

    try:
        return asyncio.run(scenario())
    finally:
        kernel.ring.close()


async def _turn(service: Any, text: str) -> Any:
    """One turn through `TurnService`'s own runner (what the hub calls), so its release is on the path."""
    return await service._run_turn(text, "s", "t1", lambda event: None)


def test_an_english_first_turn_is_answered_before_the_loads_begin(tmp_path: Path, fresh: None) -> None:
    result, llm, embedder = first_turn(tmp_path, "hello")
    assert result.ended_by == "answer" and result.output == "hello back"
    assert llm.seen == [{"released": False, "segmenter_begun": False, "jieba": False}]
    assert _preload.released(), "the first turn's end released the loads"
    assert isinstance(embedder, Marked), "memory got the preload's model once released"
    assert tok.wait_for_jieba(30), "the segmenter loaded after the answer"


def test_a_chinese_first_turn_gets_jiebas_words(tmp_path: Path, fresh: None, monkeypatch: pytest.MonkeyPatch) -> None:
    analysed: list[tuple[str, str]] = []
    real = tfidf.tokenize_tagged

    def spy(text: str) -> tuple[list[str], str]:
        terms, analyzer = real(text)
        if any("\u4e00" <= c <= "\u9fff" for c in text):
            analysed.append((text, analyzer))
        return terms, analyzer

    monkeypatch.setattr(tfidf, "tokenize_tagged", spy)
    result, llm, _ = first_turn(tmp_path, "请记下会议改到星期四下午了")
    assert result.ended_by == "answer"
    assert llm.seen == [{"released": False, "segmenter_begun": True, "jieba": True}], "loaded on demand, held"
    assert analysed, "the turn's Chinese text was analysed (the path under test was reached)"
    assert {analyzer for _, analyzer in analysed} == {tok.ANALYZER_JIEBA}
