"""The request's older history in fewer messages: consecutive inputs joined into one user message, consecutive
plain responses into one assistant message (issue 39 item 1).

Why: a request pays a per-message overhead (role, separators: :data:`~hologram.memory.session_records.
MESSAGE_OVERHEAD` tokens) for every message it carries, and a long session's request carries a hundred or
more short ones that ranking picked from all over the session — LoCoMo's turns are ~33 tokens, so the
overhead was 12 % of the history budget. The events the ranking picked from before the recent window are
sent joined; the budget (memory/rank/fit.py's `fit_messages`) charges the overhead per message sent, and
what it saves buys more events.

What is joined, and what never is:

- only events older than the recent window (`recent_from`, a session-log seq: the pinned newest events):
  the conversation as it happens stays one message per event;
- an input (a user message with text) joins the user message right before it in the request when that one
  is an older input too; a response joins the assistant message right before it when both are plain text
  (no tool calls, no reasoning — DeepSeek replays reasoning per turn, so a turn that has it stays whole);
- a tool call and its results are never joined or split: an assistant message with tool calls and the tool
  messages answering it are sent as they are, and any of them ends a run.

Each event's text stays a paragraph of its own (``\\n\\n`` between them), with what the history's reading gives
it (memory/across/dated.py: the date in front of the first input of a day when the session spans days, the
mark of a superseded statement); a speaker label the text carries ("Caroline: …") stays with it.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from hologram.llm import Message
from hologram.sessions import Event

__all__ = ["SEPARATOR", "SEPARATOR_TOKENS", "join_older"]

#: Between two events' texts in a joined message.
SEPARATOR = "\n\n"
#: What the budget charges for it (one token in the usual BPE vocabularies).
SEPARATOR_TOKENS = 1


def _joinable(event: Event, message: Message) -> bool:
    if not isinstance(message.content, str) or message.name is not None or message.images:
        return False
    if message.role == "user":
        return event.kind == "input"
    return (
        message.role == "assistant"
        and event.kind == "response"
        and not message.tool_calls
        and not (message.reasoning_content)
    )


def join_older(
    history: Sequence[tuple[Event, Message]], recent_from: int, roles: Collection[str] = ("user", "assistant")
) -> tuple[list[Message], int]:
    """The messages of `history` (each event with its message, in log order), the joinable ones of events
    with a seq below `recent_from` and a role among `roles` joined into runs (module docstring). Returns the
    messages and how many events joined the message before them (each saved one message's overhead)."""
    out: list[Message] = []
    run: list[str] = []  # the texts of the open run, whose message is out[-1] (built when the run closes)
    joined = 0
    for event, message in history:
        if event.seq < recent_from and message.role in roles and _joinable(event, message):
            if run and out[-1].role == message.role:
                run.append(str(message.content))
                joined += 1
                continue
            _close(out, run)
            out.append(message)
            run = [str(message.content)]
            continue
        _close(out, run)
        run = []
        out.append(message)
    _close(out, run)
    return out, joined


def _close(out: list[Message], run: list[str]) -> None:
    """The run's message (out[-1]) with all its texts, when more than one joined it."""
    if len(run) > 1:
        out[-1] = Message(out[-1].role, SEPARATOR.join(run))
