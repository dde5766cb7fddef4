"""The model-based extractor: the configured LLM reads an event and answers triples as JSON (issue 15, item 2).

**Constrained, then gated.** The request asks for JSON matching :data:`TRIPLES_SCHEMA` — OpenAI-style providers
get ``response_format: json_schema`` (strict), DeepSeek (which offers only ``json_object``) gets
``json_object`` and the schema in the prompt — and the answer is validated against the schema here whatever the
provider promised. Then every triple passes the same gate as the deterministic extractor: its ``value`` must
occur in the text of the block it names (``extract.gate``). A model paraphrasing, inventing or answering from
world knowledge produces values the text does not contain; those are dropped (counted in :attr:`dropped`), never
stored. Predicates are normalised through :data:`PREDICATE_ALIASES` ("loves", "enjoys", "喜欢" → "likes"), so
one relation is not spread over ten spellings; entities merge only by ``entity_key`` (the store's rule).

**Failure.** A provider error, an answer that is not JSON or not the schema raises :class:`ExtractionError`
(naming the event, the provider's answer and the rule it broke): the cooling job leaves that event in L2 and a
later run retries it (``cooling.distill``). Nothing half-read is stored.

The blocks are shown to the model in reading order — input → reasoning → response → tool results — numbered, so
each triple names the block it came from (its source).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Protocol

import jsonschema

from hologram.llm import ChatRequest, ChatResult, Message
from hologram.memory.cold.blocks import EventRecord
from hologram.memory.graph.extract import gate, speaker_of
from hologram.memory.graph.store import Triple
from hologram.memory.text.bounds import indexed
from hologram.memory.text.utterance import without_questions

__all__ = ["PREDICATE_ALIASES", "TRIPLES_SCHEMA", "Completer", "ExtractionError", "LLMExtractor", "predicate_of"]

TRIPLES_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "triples": {
            "type": "array",
            "maxItems": 32,
            "items": {
                "type": "object",
                "properties": {
                    "subject": {"type": "string", "minLength": 1, "maxLength": 120},
                    "predicate": {"type": "string", "minLength": 1, "maxLength": 60},
                    "value": {"type": "string", "minLength": 1, "maxLength": 200},
                    "block": {"type": "integer", "minimum": 0},
                    "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                },
                "required": ["subject", "predicate", "value", "block", "confidence"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["triples"],
    "additionalProperties": False,
}

#: spelling → canonical predicate (keys case-folded, whitespace collapsed). Unknown predicates pass as they are.
PREDICATE_ALIASES: dict[str, str] = {
    **dict.fromkeys(
        ["likes", "like", "loves", "love", "enjoys", "enjoy", "is fond of", "adores", "喜欢", "爱"], "likes"
    ),
    **dict.fromkeys(["dislikes", "hates", "hate", "讨厌"], "dislikes"),
    **dict.fromkeys(["lives in", "live in", "resides in", "lives at", "住在", "住"], "lives in"),
    **dict.fromkeys(["works at", "works for", "is employed at", "employed by", "工作于", "在…工作"], "works at"),
    **dict.fromkeys(["is a", "is an", "works as", "is", "是"], "is a"),
    **dict.fromkeys(["went to", "visited", "travelled to", "traveled to", "去", "去过", "去了"], "went to"),
    **dict.fromkeys(["has", "owns", "have", "有", "养"], "has"),
    **dict.fromkeys(["is named", "is called", "name", "叫"], "is named"),
    **dict.fromkeys(["moved to", "relocated to", "搬到"], "moved to"),
}

_READ_KINDS = ("input", "reasoning", "response", "tool_result", "media")

_INSTRUCTIONS = (
    "You extract facts from one conversation event for a long-term memory. Answer with JSON only, an object "
    '{"triples": [{"subject", "predicate", "value", "block", "confidence"}]} matching this JSON schema:\n'
    f"{json.dumps(TRIPLES_SCHEMA, ensure_ascii=False)}\n"
    "Rules: a triple states one durable fact (who likes, has, did, is what). `block` is the number of the block "
    "the fact is read from. `value` must be copied exactly from that block's text. Resolve 'I'/'我' to the "
    'speaker named before the block. No facts: {"triples": []}.'
)


class Completer(Protocol):
    """What the extractor needs from the LLM layer (``hologram.llm.ProviderChain`` is one)."""

    async def complete(self, request: ChatRequest) -> ChatResult: ...


class ExtractionError(RuntimeError):
    """The model's answer could not be used; the event stays in L2 (module docstring), or, with ``extractor =
    "auto"``, is read by the rules (``fallback.py``). `reason` is the short kind of failure reports group by."""

    def __init__(self, message: str, *, reason: str = "the model's answer is unusable") -> None:
        super().__init__(message)
        self.reason = reason


def predicate_of(text: str) -> str:
    key = " ".join(text.casefold().split())
    return PREDICATE_ALIASES.get(key, key)


class LLMExtractor:
    """Model-based extraction with the schema and the value gate (module docstring)."""

    name = "llm"

    def __init__(self, llm: Completer, *, kind: str = "openai", max_tokens: int = 800) -> None:
        self.llm = llm
        self.kind = kind
        self.max_tokens = max_tokens
        self.dropped = 0
        """Triples the gate refused so far (value not in the named block's text, or no such block)."""

    def response_format(self) -> Mapping[str, Any]:
        if self.kind == "deepseek":
            return {"type": "json_object"}
        return {"type": "json_schema", "json_schema": {"name": "triples", "strict": True, "schema": TRIPLES_SCHEMA}}

    def request(self, record: EventRecord) -> tuple[ChatRequest, list[int]]:
        """The request for `record`, and the record's block ordinal behind each number shown to the model."""
        shown: list[int] = []
        lines: list[str] = []
        for i, block in enumerate(record.blocks):
            if block.kind not in _READ_KINDS or not block.text.strip():
                continue
            default = (record.partner or "user") if block.kind == "input" else "assistant"
            speaker, text = speaker_of(indexed(block.text), default)  # the model reads what memory indexes
            text = without_questions(text).strip()  # a question states no fact (memory/text/utterance.py)
            if not text:
                continue
            lines.append(f"[{len(shown)}] {block.kind} by {speaker}:\n{text}")
            shown.append(i)
        request = ChatRequest(
            messages=[Message.system(_INSTRUCTIONS), Message.user("\n\n".join(lines))],
            temperature=0.0,
            max_tokens=self.max_tokens,
            stream=False,
            extra={"response_format": dict(self.response_format())},
        )
        return request, shown

    async def extract(self, record: EventRecord) -> list[Triple]:
        request, shown = self.request(record)
        if not shown:
            return []
        try:
            result = await self.llm.complete(request)
        except Exception as exc:
            raise ExtractionError(
                f"event {record.id}: the model call failed: {exc}", reason="the model call failed"
            ) from exc
        try:
            data = json.loads(result.content)
        except json.JSONDecodeError as exc:
            raise ExtractionError(
                f"event {record.id}: the model's answer is not JSON ({exc.msg} at {exc.pos}): {result.content[:200]!r}",
                reason="the answer is not JSON",
            ) from None
        try:
            jsonschema.validate(data, TRIPLES_SCHEMA)
        except jsonschema.ValidationError as exc:
            where = "/".join(str(p) for p in exc.absolute_path) or "(top level)"
            raise ExtractionError(
                f"event {record.id}: the model's JSON breaks the triples schema at {where}: {exc.message}",
                reason="the JSON breaks the triples schema",
            ) from None
        out: list[Triple] = []
        for item in data["triples"]:
            n = item["block"]
            block = record.blocks[shown[n]] if n < len(shown) else None
            if block is None or not gate(item["value"], block.text) or not item["subject"].strip():
                self.dropped += 1
                continue
            out.append(
                Triple(
                    item["subject"].strip(),
                    predicate_of(item["predicate"]),
                    item["value"].strip(),
                    record.id,
                    block.id,
                    confidence=float(item["confidence"]),
                    valid_at=record.ts_ms or None,
                )
            )
        return list({t.id: t for t in out}.values())
