"""The agent turn: on_input → pre_action → [LLM → post_action → tools] … → before_output → send → after_output.

The loop ends when the model answers without tool calls, when every call of a response was denied, when a
hook responds, or at a limit of ``[agent]``: ``max_steps`` LLM calls, ``max_tool_calls`` tool calls, or
``max_turn_s`` of wall time make the next LLM call the last (a system note, and ``tool_choice = "none"``;
calls it makes anyway get a "not run" result). The loop guard (agent/loop_guard.py) refuses a call the model
keeps repeating, and ends the turn (``loop``) when the model repeats one after it was told.

Everything the loop learns is persisted the moment it is known: the input, each response (with *its own*
reasoning and usage), each tool result in call order, the delivered output. The results of one batch are
group-committed (`SessionStore.deferred`: at the batch's end, or within ``commit_delay_s``); a result lost
to a crash in that window is an unanswered call, which `SessionStore.repair` closes when the session is
next loaded. If the turn is cancelled (the
user pressed Ctrl-C, the client went away) or fails, the calls still open get a synthetic error result
before the exception leaves, so the stored session is always a valid history.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from hologram.agent.executor import Executor, Outcome, PluginInvoke
from hologram.agent.failure import FailureKind, failure_of
from hologram.agent.identity import TurnIdentity
from hologram.agent.loop_guard import CALL_LIMIT_RESULT, LOOP_ENDED, LOOP_OUTPUT, LoopGuard
from hologram.agent.scope import TurnScope
from hologram.agent.tools import Restriction, ToolRegistry
from hologram.agent.turn_scene import TurnScene
from hologram.api import turn as api
from hologram.base._textbuf import TextBuffer
from hologram.config.settings import AgentSettings
from hologram.llm import ChatRequest, ChatResult, Delta, Message, StreamInterruptedError, ToolCall
from hologram.llm import ContextOverflowError as LLMContextOverflowError
from hologram.llm.content import image_urls
from hologram.memory import OverflowGuard, PromptTooLargeError, estimate_tokens
from hologram.memory.text.tokenizer import ensure_segmenter, needs_segmenter
from hologram.sessions import HistoryCache, SessionLog, SessionStore
from hologram.stages import StageContext, StageDispatcher

if TYPE_CHECKING:
    from hologram.agent.approvals import Approver
    from hologram.agent.tool_policy import ChannelPolicies
    from hologram.memory import SessionMemory
    from hologram.sessions.media import MediaStore

log = logging.getLogger("hologram.agent")

OnEvent = Callable[[Any], None]  # receives `hologram.api.turn` events, in order; must not block
CANCELLED = "error: the turn was cancelled before this call finished"
FAILED = "error: the turn failed before this call finished"
DEFAULT_CONTEXT_WINDOW = 64_000  # tokens, when the provider's settings do not say
COLD_CONTEXT_NOTE = (
    "{n} earlier events of this conversation were moved to cold context to fit the window; "
    "coldcontext_query searches them and brings the ones you need back."
)
STEP_LIMIT_NOTE = (
    "Step limit reached: this is LLM call {n} of at most {n} in this turn. Tools are disabled now; "
    "answer the user with what you have and say what is left undone."
)
CALL_LIMIT_NOTE = (
    "Tool call limit reached: this turn made its {n} tool calls. Tools are disabled now; "
    "answer the user with what you have and say what is left undone."
)
TIME_LIMIT_NOTE = (
    "Time limit reached: this turn has run for more than {n:g} s. Tools are disabled now; "
    "answer the user with what you have and say what is left undone."
)


@dataclass(frozen=True, slots=True)
class Limit:
    """Why a step is the turn's last: its ``stop_reason``, the note the model is sent, the result of the calls it
    makes anyway."""

    reason: str  # max_steps | max_tool_calls | max_time
    note: str
    not_run: str


class Completer(Protocol):
    async def complete(self, request: ChatRequest, on_delta: Any = None) -> ChatResult: ...


class TurnError(Exception):
    """The turn could not produce an answer (every provider failed, a request was rejected, …); ``kind`` and
    ``status`` say what for a client (`hologram.agent.failure`), the message says it for a person."""

    def __init__(self, message: str, *, kind: FailureKind = "internal", status: int | None = None) -> None:
        super().__init__(message)
        self.kind: FailureKind = kind
        self.status = status

    @classmethod
    def of(cls, exc: BaseException) -> TurnError:
        kind, status = failure_of(exc)
        return cls(str(exc), kind=kind, status=status)


@dataclass
class TurnResult:
    session_id: str
    turn_id: str
    output: str
    steps: int
    ended_by: str  # answer | denied | respond | loop | max_steps | max_tool_calls | max_time
    errors: list[dict[str, Any]] = field(default_factory=list)
    usage: list[dict[str, Any]] = field(default_factory=list)


class Agent:
    """Runs turns. One instance serves every session of a kernel; concurrent turns are independent."""

    def __init__(
        self,
        *,
        llm: Completer | None,
        store: SessionStore,
        tools: ToolRegistry,
        stages: StageDispatcher,
        settings: AgentSettings | None = None,
        invoke_plugin: PluginInvoke | None = None,
        approver: Approver | None = None,
        no_llm_message: str = "no LLM provider is configured",
        memory: SessionMemory | None = None,
        context_window: int = DEFAULT_CONTEXT_WINDOW,
    ) -> None:
        self.memory = memory  # None: the whole session history goes to the model (tests, memory off)
        self.context_window = context_window
        self.llm = llm
        self.store = store
        self.tools = tools
        self.stages = stages
        self.settings = settings or AgentSettings()
        self.executor = Executor(stages, invoke_plugin, timeout_s=self.settings.tool_timeout_s, approver=approver)
        # Without memory the model gets each session's whole history, mapped incrementally from the log; with
        # memory SessionMemory.prepare reads the same SessionLog instead: one read of the log per request.
        self.history = HistoryCache(memory.log if memory is not None else SessionLog(store))
        self.no_llm_message = no_llm_message
        self.chains_in_use: dict[int, int] = {}
        """Running turns per chain (by id): a chain replaced by `providers_save` is closed once none uses it."""
        self.policies: ChannelPolicies | None = None
        """Which tools a turn may use, by its channel and peer (agent/tool_policy.py); None: every tool."""
        self.clock: Callable[[], float] = time.monotonic
        """A turn's wall time for ``[agent] max_turn_s`` (a test's seam)."""
        self.running: dict[str, Restriction | None] = {}
        """The tool policy of each session's running turn: a turn started for it (agent/scope.py) stays within it."""
        self.media: MediaStore | None = None
        """Where images of tool results are kept (sessions/media.py); None: they are dropped, the text stays."""

    def restriction(self, channel: str, *, scene: str | None = None, partner: str | None = None) -> Restriction | None:
        """The tool policy of a turn (or a direct call) from ``channel``, or None when it may use every tool."""
        policies = self.policies
        policy = policies.for_turn(channel, scene=scene, partner=partner) if policies is not None else None
        if policies is None or policy is None:
            return None
        return Restriction(policy, channel, policies.effect)

    async def run_turn(
        self,
        text: str,
        *,
        session_id: str | None = None,
        channel: str | None = None,
        on_event: OnEvent | None = None,
        turn_id: str | None = None,
        scene: str | None = None,
        partner: str | None = None,
        parts: list[dict[str, Any]] | None = None,
        identity: TurnIdentity | None = None,
        scope: TurnScope | None = None,
        at: float | None = None,
    ) -> TurnResult:
        """Run one turn. `scene`: a declared scene key (``chan:qq/peer:group_1``, docs/scenes.md), `partner`:
        who the turn is with; both only steer which memory recall prefers. `parts`: the input parts of a turn
        started with ``input`` (`hologram.api.input_parts`), `text` being what the model reads of them.
        `identity`: who the turn is from, as the kernel's turn API established it (`hologram.agent.identity`);
        it wins over `channel` and `partner`, which remain for callers inside the kernel (tests, benchmarks)
        and default to ``[agent] channel``. `scope`: the tools, steps and parent turn of a turn started for
        another (a sub-agent: agent/scope.py). `at`: when the input was said (epoch seconds; an imported
        message), stored as its event's time — memory reads the turn's time from it; default now."""
        if identity is None:
            identity = TurnIdentity(channel or self.settings.channel, partner=partner)
        channel, partner = identity.channel, identity.partner
        sid = session_id or self.store.create_session(channel)
        if session_id is not None and not self.store.exists(session_id):
            self.store.create_session(channel, session_id)
        self.store.repair(sid)  # calls left open by a turn the kernel did not live to finish
        if self.memory is not None and needs_segmenter(text):  # Chinese input: jieba's words, never bigrams
            await asyncio.to_thread(ensure_segmenter)  # (loads on demand while `up` holds its warm-up)
        turn = _Turn(self, sid, turn_id or uuid.uuid4().hex[:12], identity, on_event)
        turn.parts = parts
        turn.at = at
        turn.restriction = self.restriction(channel, scene=scene, partner=partner)
        if scope is not None:
            turn.restriction = self._scoped(turn.restriction, channel, scope)
            turn.ctx.parent = scope.parent  # sent with each plugin tool call of the turn (`StageContext.parent`)
            if scope.max_steps is not None:
                turn.max_steps = min(scope.max_steps, self.settings.max_steps)
        scenes = self.memory.scenes if self.memory is not None else None
        if scenes is not None:
            turn.scene = TurnScene(scenes, sid, turn.turn_id, channel, declared=scene, partner=partner)
        self.running[sid] = turn.restriction
        if self.memory is not None:
            self.memory.turn_started(sid)  # what memory holds of the session is released once it stays idle
        try:
            return await turn.run(text)
        finally:
            self.running.pop(sid, None)
            if self.memory is not None:
                self.memory.turn_ended(sid)

    def _scoped(self, own: Restriction | None, channel: str, scope: TurnScope) -> Restriction | None:
        """The restriction of a turn started for another: its own policy, its tool subset, and the parent's."""
        if not scope.narrows:
            return own
        parent: Restriction | None = None
        if scope.parent is not None:
            if scope.parent not in self.running:
                raise TurnError(f"the turn this one works for (session {scope.parent}) is no longer running")
            parent = self.running[scope.parent]
        effect = self.policies.effect if self.policies is not None else _no_effect
        policy = own.policy if own is not None else None
        return Restriction(policy, channel, own.effect if own is not None else effect, scope.tools, parent)


def _no_effect(plugin: str, tool: str) -> str | None:
    return None


def with_images(messages: list[Message], images: tuple[str, ...]) -> list[Message]:
    """The request's messages with this turn's images on its input (the last user message: nothing the turn
    adds after it is one). Only the turn's own images are sent: the stored parts keep them, the history and
    memory read the text (`hologram.sessions.message_of`), so a later turn does not resend megabytes."""
    if not images:
        return messages
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].role == "user":
            messages[i] = dataclasses.replace(messages[i], images=images)
            break
    return messages


class _Turn:
    def __init__(self, agent: Agent, sid: str, turn_id: str, identity: TurnIdentity, on_event: OnEvent | None) -> None:
        self.agent = agent
        self.store = agent.store
        self.sid = sid
        self.turn_id = turn_id
        self.identity = identity
        self.channel = channel = identity.channel
        self.on_event = on_event
        self.llm = agent.llm  # this turn's chain: one saved meanwhile (admin_providers.py) serves the next turn
        self.ctx = StageContext(
            sid, turn_id, channel, client=identity.client, partner=identity.partner, system=agent.settings.system_prompt
        )
        self.history: list[Message] | None = None
        """The requests' history when memory is off (`Agent.history`, then this turn's messages); None with memory,
        whose `prepare` builds each request's from the log: a second copy of the turn's ~440 messages alive through
        a long turn only raised its peak of small objects (issue 41, docs/memory.md "Sixth round")."""
        self.at: float | None = None
        """When the input was said, if not now (turn/start's ``at``: an imported message)."""
        self.usage: list[dict[str, Any]] = []
        self.scene: TurnScene | None = None  # set by `Agent.run_turn` when memory keeps scenes
        # the request in flight's content, reasoning so far (one buffer each, not the deltas: base/_textbuf.py)
        self.streamed: tuple[TextBuffer, TextBuffer] = (TextBuffer(), TextBuffer())
        self.parts: list[dict[str, Any]] | None = None  # the input parts (None: a text-only turn)
        self.restriction: Restriction | None = None  # the turn's tool policy (None: every tool)
        self.max_steps = agent.settings.max_steps  # lower for a sub-agent's turn (agent/scope.py)

    # -- events to the channel and the ring ------------------------------------------------------------

    def emit(self, event: Any) -> None:
        """A `hologram.api.turn` event to whoever runs the turn (the kernel's `TurnHub`, a test's list)."""
        if self.on_event is not None:
            try:
                self.on_event(event)
            except Exception:  # a listener's bug must not fail the turn
                log.exception("a turn event listener failed on %s", event.type)

    async def on_delta(self, delta: Delta) -> None:
        self.streamed[0 if delta.kind == "content" else 1].append(delta.text)
        if delta.kind == "content":
            self.emit(api.ContentDelta(session=self.sid, turn=self.turn_id, text=delta.text))
        else:
            self.emit(api.ReasoningDelta(session=self.sid, turn=self.turn_id, text=delta.text))

    # -- the loop -------------------------------------------------------------------------------------

    async def run(self, text: str) -> TurnResult:
        in_use = self.agent.chains_in_use
        key = id(self.llm)
        in_use[key] = in_use.get(key, 0) + 1
        closing = CANCELLED
        try:
            return await self._run(text)
        except Exception:
            closing = FAILED  # a provider or a stage failed: the calls it left open say so, not "cancelled"
            raise
        finally:
            # the calls this turn left open (cancelled, failed), as this turn's results (turn/read reads them)
            self.store.repair(self.sid, closing, turn=self.turn_id)
            if in_use[key] <= 1:
                del in_use[key]
            else:
                in_use[key] -= 1

    async def _run(self, text: str) -> TurnResult:
        agent, ctx, stages = self.agent, self.ctx, self.agent.stages
        ctx.input = text
        if await stages.run("on_input", ctx) and ctx.respond is not None:
            self._persist_input(text)
            return await self._short_circuit(0)
        if self.llm is None:
            raise TurnError(agent.no_llm_message, kind="no_provider")
        self._persist_input(text)
        if agent.memory is None:  # with memory, each request's history comes from SessionMemory.prepare
            self.history = agent.history.messages(self.sid)
        elif self.scene is not None:  # the scene recall prefers, before the first request
            await self.scene.begin(ctx.input or "", agent.memory.recent_events(self.sid))
        if await stages.run("pre_action", ctx) and ctx.respond is not None:
            return await self._short_circuit(0)
        settings = agent.settings
        max_steps = self.max_steps
        guard = OverflowGuard(agent.context_window)  # at most two recoveries per turn
        loop = LoopGuard(settings.loop_repeats, settings.max_tool_calls)
        started = agent.clock()
        for step in range(1, max_steps + 1):
            limit = self._limit(step, loop, started)
            last = limit is not None
            tools = agent.tools.snapshot(self.sid, self.restriction)
            provider_overflow = False
            while True:
                messages = await self._request_messages(tools, guard, provider_overflow=provider_overflow)
                messages = with_images(messages, image_urls(self.parts))
                if limit is not None and tools.schemas():
                    messages.append(Message.system(limit.note))
                request = ChatRequest(
                    messages, tools=tools.schemas(), tool_choice="none" if last and tools.schemas() else None
                )
                try:
                    result = await self._complete(request)
                    break
                except LLMContextOverflowError:  # the provider's word: prune through the same path, retry
                    provider_overflow = True
            # The request's ~440 messages (memory rebuilds them for each request) go now, not when the next
            # request replaces them: else two requests' copies are alive while the next one is prepared, at a
            # long turn's peak of small objects (issue 41, docs/memory.md "Sixth round").
            del request, messages
            seq = self._persist_response(result)
            ctx.step, ctx.content, ctx.reasoning = step, result.content, result.reasoning
            ctx.tool_calls = [c.to_dict() for c in result.tool_calls]
            if await stages.run("post_action", ctx) and ctx.respond is not None:
                self._close(seq, result.tool_calls, f"not run: {ctx.responded_by} answered instead")
                return await self._short_circuit(step)
            if self.scene is not None:
                self.scene.used(c.name for c in result.tool_calls)
            if not result.tool_calls:
                return await self._finish(ctx.content or "", step, "answer")
            if limit is not None:
                self._close(seq, result.tool_calls, limit.not_run)
                return await self._finish(ctx.content or limit.note, step, limit.reason)
            refused, looping = loop.screen(result.tool_calls)
            if looping is not None:  # told once and repeating still: the turn ends here
                self._close(seq, result.tool_calls, LOOP_ENDED.format(what=looping))
                return await self._finish(ctx.content or LOOP_OUTPUT.format(what=looping), step, "loop")

            def record(call: ToolCall, outcome: Outcome, seq: int = seq) -> None:
                self._record(seq, call, outcome)
                loop.finished(call.id, outcome.content)

            with self.store.deferred():  # the batch's results: one commit (see SessionStore.deferred)
                report = await agent.executor.run_batch(result.tool_calls, tools, ctx, record, self.emit, refused)
            if report.all_denied:
                reasons = "; ".join(o.content for o in report.outcomes)
                return await self._finish(ctx.content or f"Every tool call was denied: {reasons}", step, "denied")
        raise AssertionError("unreachable: the last step always returns")

    def _limit(self, step: int, loop: LoopGuard, started: float) -> Limit | None:
        """Whether this step is the turn's last, and why: the step limit, the tool call limit spent, or the turn's
        wall time past ``max_turn_s`` (checked before each LLM call; a running tool is bounded by its timeout)."""
        settings = self.agent.settings
        if step == self.max_steps:
            n = self.max_steps
            return Limit(
                "max_steps", STEP_LIMIT_NOTE.format(n=n), f"not run: the step limit of {n} LLM calls was reached"
            )
        if loop.exhausted:
            n = settings.max_tool_calls
            return Limit("max_tool_calls", CALL_LIMIT_NOTE.format(n=n), CALL_LIMIT_RESULT.format(n=n))
        if self.agent.clock() - started >= settings.max_turn_s:
            s = settings.max_turn_s
            return Limit(
                "max_time", TIME_LIMIT_NOTE.format(n=s), f"not run: the turn's time limit of {s:g} s was reached"
            )
        return None

    async def _request_messages(self, tools: Any, guard: OverflowGuard, *, provider_overflow: bool) -> list[Message]:
        """The request's messages: the L1 history pruned against this turn's input by the memory layer.

        Before every request the accumulated tokens are compared with the window (ratio 1.25, at most two
        recoveries per turn); a provider's context-length error takes the same recovery path.
        """
        agent, ctx = self.agent, self.ctx
        if agent.memory is None:
            if provider_overflow:
                raise TurnError(
                    "the conversation no longer fits the model's context window (memory is off)", kind="context_window"
                )
            return [Message.system(ctx.system), *(self.history or ())]
        fixed = estimate_tokens(ctx.system) + estimate_tokens(json.dumps(tools.schemas(), ensure_ascii=False))
        query = ctx.input or ""
        window = agent.context_window
        scene = self.scene.active if self.scene is not None else None  # recall prefers its memory
        try:
            if provider_overflow:
                prepared = await agent.memory.recover(
                    self.sid, query, window_tokens=window, fixed_tokens=fixed, guard=guard, provider_error=True,
                    scene=scene,
                )  # fmt: skip
            else:
                prepared = await agent.memory.prepare(
                    self.sid, query, window_tokens=window, fixed_tokens=fixed, scene=scene
                )
                if guard.needs_recovery(fixed + prepared.kept_tokens):
                    prepared = await agent.memory.recover(
                        self.sid, query, window_tokens=window, fixed_tokens=fixed, guard=guard, scene=scene
                    )
        except PromptTooLargeError as exc:
            raise TurnError.of(exc) from exc
        if prepared.pruned:
            self.emit(api.MemoryNote(session=self.sid, turn=self.turn_id, pruned=len(prepared.pruned)))
        messages = prepared.request_messages(ctx.system)
        if prepared.note is None and prepared.held:
            # Standing reminder: without it the model forgets, a few requests later, that there is more.
            messages.insert(1, Message.system(COLD_CONTEXT_NOTE.format(n=prepared.held)))
        return messages

    async def _complete(self, request: ChatRequest) -> ChatResult:
        assert self.llm is not None
        self.streamed = (TextBuffer(), TextBuffer())
        try:
            return await self.llm.complete(request, self.on_delta)
        except StreamInterruptedError as exc:
            if exc.partial_content or exc.partial_reasoning:  # what the user saw stays in the history
                data = {"content": exc.partial_content, "reasoning": exc.partial_reasoning or None}
                self.store.append(self.sid, "response", {**data, "interrupted": True}, turn=self.turn_id)
            raise TurnError.of(exc) from exc
        except asyncio.CancelledError:
            content, reasoning = (part.text() for part in self.streamed)
            if content or reasoning:  # cancelled mid-answer: what the user saw is kept, marked as cut short
                cut: dict[str, Any] = {"content": content, "reasoning": reasoning or None, "tool_calls": []}
                self.store.append(
                    self.sid, "response", {**cut, "cancelled": True}, turn=self.turn_id, channel=self.channel
                )
            raise
        except LLMContextOverflowError:
            raise
        except Exception as exc:
            raise TurnError.of(exc) from exc

    # -- persistence ----------------------------------------------------------------------------------

    def _persist_input(self, original: str) -> None:
        data: dict[str, Any] = {"text": self.ctx.input}
        if self.ctx.input != original:
            data["original"] = original
        if self.parts is not None:  # a text-only turn is stored as it always was
            data["parts"] = self.parts
        data.update(self.identity.stored())  # who said it: client, partner (memory's speaker)
        self.store.append(self.sid, "input", data, turn=self.turn_id, channel=self.channel, ts=self.at)

    def _persist_response(self, result: ChatResult) -> int:
        usage = None if result.usage is None else dict(vars(result.usage))
        if usage is not None:
            self.usage.append(usage)
        data = {
            "content": result.content,
            "reasoning": result.reasoning,  # this response's own, verbatim (None: it carried none)
            "tool_calls": [c.to_dict() for c in result.tool_calls],
            "usage": usage,
            "finish_reason": result.finish_reason,
            "provider": result.provider,
            "model": result.model,
        }
        seq = self.store.append(self.sid, "response", data, turn=self.turn_id, channel=self.channel)
        if self.history is not None:
            self.history.append(result.to_message())
        return seq

    def _record(self, seq: int, call: ToolCall, outcome: Outcome) -> None:
        images = self._keep_images(outcome) if outcome.images else []
        data = {"name": call.name, "content": outcome.content, "is_error": outcome.is_error, "status": outcome.status}
        if outcome.approval is not None:  # who decided, when, under which policy (agent/approvals.py)
            data["approval"] = outcome.approval
        if images:  # references only: the bytes are in the media store, never in the log
            data["images"] = images
        self.store.add_result(self.sid, seq, call.id, data, turn=self.turn_id, channel=self.channel)
        if self.history is not None:
            self.history.append(Message.tool(call.id, outcome.content))
        self.emit(
            api.ToolResult(
                session=self.sid,
                turn=self.turn_id,
                call_id=call.id,
                tool=call.name,
                content=outcome.content[:2000],
                is_error=outcome.is_error,
                status=outcome.status,
                images=images,
            )
        )

    def _keep_images(self, outcome: Outcome) -> list[dict[str, Any]]:
        """The outcome's images put in the media store, as references; one not kept is said in the content
        (so the model and the person know), and none is kept without a store."""
        media = self.agent.media
        refs: list[dict[str, Any]] = []
        for image in outcome.images:
            kept = media.put(self.sid, image.mime, image.data) if media is not None else "no media store"
            if isinstance(kept, str):
                outcome.content += f"\n[{kept}]"
            else:
                refs.append(kept)
        outcome.images = ()
        return refs

    def _close(self, seq: int, calls: tuple[ToolCall, ...], reason: str) -> None:
        with self.store.deferred():
            for call in calls:
                self._record(seq, call, Outcome(reason, True, "skipped"))

    async def _short_circuit(self, step: int) -> TurnResult:
        text = str(self.ctx.respond)
        data: dict[str, Any] = {"content": text, "reasoning": None, "tool_calls": [], "by": self.ctx.responded_by}
        self.store.append(self.sid, "response", data, turn=self.turn_id, channel=self.channel)
        self.emit(api.ContentDelta(session=self.sid, turn=self.turn_id, text=text, by=self.ctx.responded_by))
        return await self._finish(text, step, "respond")

    async def _finish(self, text: str, steps: int, ended_by: str) -> TurnResult:
        ctx, stages = self.ctx, self.agent.stages
        ctx.output = text
        await stages.run("before_output", ctx)
        self.store.append(
            self.sid,
            "output",
            {"text": ctx.output, "ended_by": ended_by, "errors": ctx.errors},
            turn=self.turn_id,
            channel=self.channel,
        )
        await stages.run("after_output", ctx)
        if self.scene is not None and self.agent.memory is not None:  # the turn's events join its scene
            if not self.scene.text:
                self.scene.text = ctx.input or ""
            await self.scene.end(self.agent.memory.recent_events(self.sid))
        return TurnResult(self.sid, self.turn_id, ctx.output, steps, ended_by, list(ctx.errors), self.usage)
