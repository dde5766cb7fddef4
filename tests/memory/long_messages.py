"""Long, many-topic messages and one that says a fact in passing: the case passage scoring is for (issue 11
§2). Shared by the memory tests and the end-to-end test through `hologram up`."""

from __future__ import annotations

__all__ = ["FACT", "FACT_QUESTION", "many_topics", "with_fact"]

FACT = "the spare key is hidden under the blue ceramic frog beside the back door"
FACT_QUESTION = "Where did I say the spare key for the back door is?"
# Every other long message uses the question's words as often or more — in different sentences, far apart —
# so by whole text each matches the question at least as well as the one holding the fact; only the passage
# that says the fact holds them together.
SUBJECTS = [
    "About the garden ({i}): the tomatoes need compost and a spare bag of soil, the roses want pruning soon.",
    "About the car ({i}): it is due for its service, the left tyre loses pressure and the wipers squeak.",
    "About work ({i}): the key point of the quarterly report is the budget, it goes to finance on Friday.",
    "About music ({i}): the violin needs new strings and one piano key sticks, the choir sings Handel.",
    "About travel ({i}): the hostel by the coast has a green back door and it wants a deposit for the room.",
]
NEUTRAL = [
    "About the weather ({i}): it rained all week and the forecast says sun on Sunday with a cold wind.",
    "About books ({i}): the library has the novels again and the new biography arrives next month.",
    "About food ({i}): the bakery sells rye bread on Mondays and the market has cheap plums this week.",
]


def many_topics(i: int) -> str:
    return " ".join(s.format(i=i) for s in SUBJECTS)


def with_fact(i: int) -> str:
    """As long as `many_topics`, the question's words only in the sentence that says the fact."""
    parts = [NEUTRAL[0], SUBJECTS[1], f"Oh, and before I forget, {FACT}.", NEUTRAL[1], NEUTRAL[2]]
    return " ".join(s.format(i=i) for s in parts)
