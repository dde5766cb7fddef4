"""Overflow recovery: before every LLM request, is the prompt too big for the window? If so, prune now.

The check is the ratio of accumulated prompt tokens (estimated) to the provider's context window. Above
:data:`OVERFLOW_THRESHOLD` (1.25, DESIGN.md) the turn prunes L1 synchronously to the history budget, moves the
pruned events to cold context (durably, before L1 forgets them), and adds **one short system note** telling the
model what moved and that ``coldcontext_query`` brings it back. The threshold is above 1.0 on purpose: token
counts are chars/4 estimates, and the regular prune between turns keeps L1 near 80 % of the window; recovery is
for the turn that outgrew it (a large tool result, a pasted file), not for estimation noise.

A provider's context-length error goes through the same path (:meth:`OverflowGuard.on_context_error`) before
any fallback provider is tried. At most :data:`MAX_RECOVERIES` recoveries per turn; the next one ends the
turn with :class:`PromptTooLargeError`, whose message says what to do. Each further recovery in a turn aims
lower (×0.75): if the first one was not enough, our estimate undercounts this content.

This module decides *when* and *how far*; the ranking and the move are
:meth:`~hologram.memory.session_memory.SessionMemory.recover`'s, the same path as every request's.
"""

from __future__ import annotations

from collections.abc import Sequence

from hologram.memory.cold.blocks import EventRecord

__all__ = [
    "MAX_RECOVERIES",
    "NOTE_ITEMS",
    "OVERFLOW_THRESHOLD",
    "TARGET_FILL",
    "OverflowGuard",
    "PromptTooLargeError",
    "history_budget",
    "overflow_note",
    "overflow_ratio",
]

OVERFLOW_THRESHOLD = 1.25
MAX_RECOVERIES = 2
#: Share of the window the prompt aims to fill after a prune (the rest is the reply's room).
TARGET_FILL = 0.8
_SHRINK_PER_RETRY = 0.75
#: Events a memory note quotes (the rest are counted).
NOTE_ITEMS = 5
_SNIPPET = 60


class PromptTooLargeError(RuntimeError):
    """The prompt still does not fit after the allowed recoveries; the turn ends with this message.

    Not the provider's `hologram.llm.ContextOverflowError` (a 400 saying the request was too long, which
    this guard answers by pruning and trying again): this is the guard giving up, so it has its own name."""


def overflow_ratio(accumulated_tokens: int, window: int) -> float:
    """Prompt tokens / context window (inf for a window of 0: anything overflows it)."""
    if window <= 0:
        return float("inf") if accumulated_tokens > 0 else 0.0
    return accumulated_tokens / window


def history_budget(window: int, fixed_tokens: int, *, fill: float = TARGET_FILL) -> int:
    """Tokens left for L1 history: `fill` of the window minus what every request carries anyway (system
    prompt, tool schemas, injected memory, the current input)."""
    return max(0, int(window * fill) - fixed_tokens)


class OverflowGuard:
    """One per turn: decides when to recover and counts recoveries (at most :data:`MAX_RECOVERIES`)."""

    def __init__(
        self, window: int, *, threshold: float = OVERFLOW_THRESHOLD, max_recoveries: int = MAX_RECOVERIES
    ) -> None:
        self.window = window
        self.threshold = threshold
        self.max_recoveries = max_recoveries
        self.recoveries = 0

    def needs_recovery(self, accumulated_tokens: int) -> bool:
        """Call before every LLM request with the estimated prompt size."""
        return overflow_ratio(accumulated_tokens, self.window) > self.threshold

    def begin_recovery(self, reason: str) -> float:
        """Account for one recovery and return the fill to prune to; raises after `max_recoveries`."""
        if self.recoveries >= self.max_recoveries:
            raise PromptTooLargeError(
                f"the conversation does not fit the model's context window ({self.window} tokens) even after "
                f"{self.recoveries} recoveries this turn ({reason}); start a new session, shorten the input, "
                "or choose a model with a larger window"
            )
        self.recoveries += 1
        return TARGET_FILL * _SHRINK_PER_RETRY ** (self.recoveries - 1)

    def on_context_error(self) -> float:
        """The provider rejected the request as too long: same path, counted the same way."""
        return self.begin_recovery("the provider reported a context-length error")


def describe_moved(
    moved: Sequence[EventRecord], *, count: int | None = None, tokens: int | None = None
) -> tuple[str, str]:
    """("N earlier event(s) (~T tokens)", '"snippet", … and K more'): the parts every memory note shares.
    `count` and `tokens`: of the whole set when `moved` holds only its first :data:`NOTE_ITEMS` records (the
    quoted ones: a caller need not rebuild the record of every event it only counts)."""
    count = len(moved) if count is None else count
    tokens = sum(r.tokens for r in moved) if tokens is None else tokens
    snippets = []
    for r in moved[:NOTE_ITEMS]:
        first = " ".join(r.text.split())
        snippets.append(f'"{first[:_SNIPPET]}{"…" if len(first) > _SNIPPET else ""}"')
    more = f" and {count - NOTE_ITEMS} more" if count > NOTE_ITEMS else ""
    return f"{count} earlier event(s) (~{tokens} tokens)", f"{', '.join(snippets)}{more}"


def overflow_note(moved: Sequence[EventRecord]) -> str:
    """One short system note: how much moved to cold context, a few snippets, and how to get it back."""
    if not moved:
        return ""
    amount, snippets = describe_moved(moved)
    return (
        f"[memory] The conversation outgrew the context window, so {amount} were moved to cold context: "
        f"{snippets}. Call coldcontext_query to bring any of them back."
    )
