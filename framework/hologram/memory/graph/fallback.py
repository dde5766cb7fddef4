"""``[memory.cooling] extractor = "auto"`` with a model configured: the model reads each event, and an event
whose model extraction fails is read by the rules instead (issue 39 item 5).

Why: small local models often do not answer the extraction prompt in JSON. Before, every such event failed,
stayed in L2 and was retried at the next run, failing again — L3 stayed empty with the default settings
(`hologram memory distill` printed 19 ``ExtractionError`` lines and moved nothing, where ``extractor =
"rules"`` moved the same 19 events with 22 triples). Now the event moves with what the rules read, and the
failures are counted by reason (:attr:`FallbackExtractor.fallbacks`, the run's ``DistillReport.fallbacks``),
reported once per run, grouped — not one line per event. ``extractor = "llm"`` keeps the strict behaviour
(a failed event stays in L2 to be retried by the model).
"""

from __future__ import annotations

import asyncio
from collections import Counter

from hologram.memory.cold.blocks import EventRecord
from hologram.memory.graph.extract import DeterministicExtractor
from hologram.memory.graph.llm_extract import ExtractionError, LLMExtractor
from hologram.memory.graph.store import Triple

__all__ = ["FallbackExtractor"]


class FallbackExtractor:
    """The model first, the rules for an event the model could not read (module docstring)."""

    name = "auto"

    def __init__(self, model: LLMExtractor, rules: DeterministicExtractor | None = None) -> None:
        self.model = model
        self.rules = rules or DeterministicExtractor()
        self.fallbacks: Counter[str] = Counter()
        """Reason (``ExtractionError.reason``) → events the rules read because the model failed that way."""
        self.by_model = 0
        """Events the model read."""

    async def extract(self, record: EventRecord) -> list[Triple]:
        try:
            found = await self.model.extract(record)
        except ExtractionError as exc:
            self.fallbacks[exc.reason] += 1
            return await asyncio.to_thread(self.rules.extract, record)
        self.by_model += 1
        return found
