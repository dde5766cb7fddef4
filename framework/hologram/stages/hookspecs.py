"""The seven stages of an agent turn, as pluggy hookspecs: the one place a stage hook's contract is written.

Project name ``hologram.stages``. Every hook receives the turn's `StageContext` (argument ``ctx``) and
returns a `HookCall` (what to run, and for which plugin) or ``None`` (this hook does not apply here: its
plugin is not ready, or the tool call is outside its ``own_tools`` scope). Returning a call instead of
running it keeps pluggy synchronous and cheap while the hooks themselves may be async and remote: the
dispatcher (`hologram.stages.dispatch`) then runs the calls one after another, in pluggy's order, each with
its own timeout, and folds each answer into the context before the next hook sees it. For the two tool
stages, within one batch of calls, the answer is asked once per tool plugin and kept for the batch (a
source opts in with ``batch_stable = True``; see `hologram.stages.dispatch`, "Batches").

What a hook *function* (an SDK ``@plugin.stage(name)`` function, in or out of process) receives and returns:

- it receives ``ctx.view(stage)``: a JSON object with ``stage``, ``session_id``, ``turn_id``, ``channel`` (set
  by the kernel: the plugin that started the turn, or the control client's name), ``client`` (who the caller
  says it is), ``partner`` (who the turn is with, or null), ``step``, ``data`` (a dict hooks share during a
  turn) and the stage's own fields (table below); ``channel``, ``client`` and ``partner`` are read-only;
- it returns ``None``/``{}`` (no change) or a dict of changes. Keys it may set, per stage:

  ==================  =================================================  ===================================
  stage               sees                                               may return
  ==================  =================================================  ===================================
  on_input            input                                              input, data, respond
  pre_action          input, system                                      system, data, respond
  post_action         input, content, reasoning, tool_calls              content, data, respond
  before_toolcall     tool_call {id, name, plugin, arguments}            arguments, data, deny, respond
  after_toolcall      tool_call, result {content, is_error}              content, is_error, data
  before_output       input, output                                      output, data
  after_output        input, output                                      data
  ==================  =================================================  ===================================

  ``deny: str`` refuses the tool call; the model sees ``denied by PLUGIN: REASON`` as the call's result.
  ``respond: str`` short-circuits: in ``on_input``/``pre_action``/``post_action`` it becomes the answer of
  the turn and the model is not asked (again); in ``before_toolcall`` it becomes the tool's result and the
  tool is not run. After a deny or respond the later hooks of that stage are skipped. Any other key, or a
  value of the wrong type, is an error recorded in ``ctx.errors``; the rest of the answer still applies.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from hologram.stages.context import HookCall, StageContext

PROJECT = "hologram.stages"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


class StageSpec:
    """The hookspecs. Docstrings say when each stage runs within a turn (see docs/agent.md)."""

    @hookspec
    def on_input(self, ctx: StageContext) -> HookCall | None:
        """The user's text arrived: blocklists, rate limits, rewriting, or a reply without the model."""

    @hookspec
    def pre_action(self, ctx: StageContext) -> HookCall | None:
        """Once per turn, before the first LLM call: inject data into the system text."""

    @hookspec
    def post_action(self, ctx: StageContext) -> HookCall | None:
        """After every LLM response (text and tool calls): filter the text, or answer instead."""

    @hookspec
    def before_toolcall(self, ctx: StageContext) -> HookCall | None:
        """Before each tool call: audit, deny (the model sees the reason), rewrite arguments, or answer."""

    @hookspec
    def after_toolcall(self, ctx: StageContext) -> HookCall | None:
        """After each tool call, in call order: redact or rewrite the result the model will see."""

    @hookspec
    def before_output(self, ctx: StageContext) -> HookCall | None:
        """The answer is final: format it for the channel."""

    @hookspec
    def after_output(self, ctx: StageContext) -> HookCall | None:
        """The answer was sent: statistics, logging. Changes other than ``data`` are ignored."""
