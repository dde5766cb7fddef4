"""The loop guard: a turn's model that calls the same tool with the same arguments again and again (or alternates
between two such calls) is stopped, and a turn's tool calls are counted against ``[agent] max_tool_calls``.

The step limit alone does not catch a loop: every step of a looping model may carry many calls, and a scripted
model ran 1,186 model calls in 300 s against an agent with no guard (issue 40). The guard looks at the calls of
one turn in call order. A call is a *repeat* when the calls right before it are the same call ``loop_repeats - 1``
times (``A A A``) or alternate with one other call that many times each (``A B A B A``), **and** those earlier
calls all returned the same result: a call whose answer changed (a terminal polled while a build runs) is
progress, not a loop; the step, call and time limits bound that case.

The first repeat is not run: its result tells the model why (``LOOP_RESULT``) and what to do instead. A repeat in
a later response means the model did not listen, and the turn ends there with ``stop_reason = "loop"``
(`hologram.agent.turn`). A refused repeat stays in the sequence as the call it repeats, so going on with an
alternation (``A B A B [A] B``) is a repeat too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from hologram.llm import ToolCall

LOOP_RESULT = (
    "not run: loop guard: you called {what} with the same arguments {n} times in this turn and got the same "
    "result each time, so this call would change nothing. Do not make it again: use the result you have, try something "
    "different, or answer the user. Repeating it ends the turn."
)
LOOP_ENDED = "not run: the loop guard ended the turn (the model kept calling {what} with the same arguments)"
LOOP_OUTPUT = (
    "Stopped: the model kept calling {what} with the same arguments after the loop guard told it to stop, "
    "so the turn was ended. "
    "Ask again, perhaps more precisely."
)
CALL_LIMIT_RESULT = "not run: the limit of {n} tool calls in one turn was reached"
PENDING = object()  # a call of the current batch that has not finished: matches any result


@dataclass(slots=True)
class _Ran:
    key: tuple[str, str]  # tool name, canonical arguments
    result: object = PENDING


def call_key(call: ToolCall) -> tuple[str, str]:
    """A call's identity for the guard: the tool and its arguments as canonical JSON (key order and spacing do not
    make two calls different); arguments that are not JSON are compared as sent."""
    try:
        arguments = json.dumps(json.loads(call.arguments or "{}"), sort_keys=True, ensure_ascii=False)
    except ValueError:
        arguments = call.arguments
    return call.name, arguments


class LoopGuard:
    """One turn's record of its tool calls. ``repeats`` 0 turns the repetition check off; ``max_calls`` bounds the
    calls that run (those past it get `CALL_LIMIT_RESULT`)."""

    def __init__(self, repeats: int, max_calls: int) -> None:
        self.repeats = repeats
        self.max_calls = max_calls
        self.ran: list[_Ran] = []  # the last calls in call order, a refused repeat as the call it repeats
        self.window = 2 * max(repeats - 1, 0)
        """How many of the last calls `_repeat` can look at (an alternation of ``repeats - 1`` calls each); older
        ones are let go, with their results: a long turn's 400 results and keys kept to its end only raised its
        peak of small objects (issue 41, docs/memory.md "Sixth round"). 0 with the guard off."""
        self.count = 0  # calls that ran
        self.by_id: dict[str, _Ran] = {}
        self.warned = False  # a repeat was refused in an earlier response
        self.limit_reached = False  # a call was refused for max_calls

    def screen(self, calls: tuple[ToolCall, ...]) -> tuple[dict[str, str], str | None]:
        """The calls of one response, in call order: ({call id: the result of a call not to run}, what was
        repeated (`_repeat`) if the turn must end now — a repeat after a warning). The calls that run are recorded."""
        refused: dict[str, str] = {}
        repeated: str | None = None
        for call in calls:
            key = call_key(call) if self.window else ("", "")  # the guard off: no repeat to look for
            what = self._repeat(key)
            if what is not None:
                if self.warned:
                    return refused, what
                refused[call.id] = LOOP_RESULT.format(what=what, n=self.repeats - 1)
                repeated = what
                # in the sequence as the call it repeats (its answer would have been that one's): a model that
                # goes on with the loop — the same call, or the other one of an alternation — is caught
                self._add(next(r for r in reversed(self.ran) if r.key == key))
                continue
            if self.count >= self.max_calls:
                refused[call.id] = CALL_LIMIT_RESULT.format(n=self.max_calls)
                self.limit_reached = True
                continue
            ran = _Ran(key)
            self._add(ran)
            if self.window:  # its result is compared only while it is in the window
                self.by_id[call.id] = ran
            self.count += 1
        if repeated is not None:
            self.warned = True
        return refused, None

    @property
    def exhausted(self) -> bool:
        """Every call the turn may make has been made (or one was refused for it)."""
        return self.limit_reached or self.count >= self.max_calls

    def _add(self, ran: _Ran) -> None:
        if not self.window:
            return
        self.ran.append(ran)
        if len(self.ran) > self.window:
            del self.ran[0]  # (`by_id` holds only the calls still running: `finished` takes them out)

    def finished(self, call_id: str, content: str) -> None:
        """A recorded call's result, for the next calls' comparison."""
        ran = self.by_id.pop(call_id, None)
        if ran is not None:
            ran.result = content

    def _repeat(self, key: tuple[str, str]) -> str | None:
        """What the call repeats (the tool, or the two tools), or None: the same call the last ``repeats - 1``
        times, or the two calls alternating that many times each, with an unchanged result throughout."""
        n = self.repeats - 1
        if n < 1:
            return None
        ran = self.ran
        last = ran[-n:]
        if len(last) == n and all(r.key == key for r in last) and _same(last):
            return key[0]
        window = ran[-2 * n :]
        if len(window) < 2 * n:
            return None
        mine, other = window[0::2], window[1::2]  # … A B A B, then A again
        other_key = other[0].key
        if other_key == key or any(r.key != key for r in mine) or any(r.key != other_key for r in other):
            return None
        if _same(mine) and _same(other):
            return f"{key[0]} and {other_key[0]} in turn"
        return None


def _same(runs: list[_Ran]) -> bool:
    results = [r.result for r in runs if r.result is not PENDING]
    return all(result == results[0] for result in results)
