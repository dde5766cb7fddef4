"""Typed stage views and plugin state: the SDK's classes agree with the kernel's stage contract, a typed hook
speaks the same wire format as a dict hook, and `Plugin(state=...)` is built per start from its config.

Mutation checks (done): dropping ``"reasoning"`` from PostActionView's fields, or making BeforeToolcallView's
``deny`` build ``{"denied": ...}``, turns the contract tests red; registering the typed hook unwrapped turns
``test_a_typed_hook_gets_a_view_and_answers_on_the_wire`` red (the hook gets a dict and fails on
``view.output``); building the state after the on_start hooks turns the state test red.
"""

from __future__ import annotations

import asyncio
import dataclasses
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from hologram.base.protocol import STAGE_NAMES
from hologram.sdk import BeforeOutputView, BeforeToolcallView, Change, OnInputView, Plugin, StageView
from hologram.sdk._views import VIEWS
from hologram.sdk.testing import PluginHarness
from hologram.stages import FunctionHook, StageDispatcher
from hologram.stages.context import VISIBLE, WRITABLE, StageContext
from tests.launcher.kit import write_plugin

if TYPE_CHECKING:
    from hologram.sdk import AfterOutputView

BASE = {f.name for f in dataclasses.fields(StageView)}

# For each stage, every answer its view can build (all methods, all optional fields).
ANSWERS: dict[str, list[Callable[[Any], Change]]] = {
    "on_input": [lambda v: v.rewrite("x"), lambda v: v.respond("x")],
    "pre_action": [lambda v: v.rewrite("x"), lambda v: v.respond("x")],
    "post_action": [lambda v: v.rewrite("x"), lambda v: v.respond("x")],
    "before_toolcall": [lambda v: v.rewrite({"a": 1}), lambda v: v.deny("no"), lambda v: v.respond("x")],
    "after_toolcall": [lambda v: v.rewrite(content="x", is_error=True)],
    "before_output": [lambda v: v.rewrite("x")],
    "after_output": [],
}


def _turn() -> StageContext:
    return StageContext(
        "s1",
        "t1",
        step=2,
        input="hi",
        system="sys",
        content="c",
        reasoning="r",
        tool_calls=[{"id": "1", "name": "n", "arguments": {}}],
        tool_call={"id": "c1", "name": "notes_read", "plugin": "notes", "arguments": {"title": "a"}},
        result={"content": "ok", "is_error": False},
        output="out",
        data={"k": 1},
    )


def test_every_stage_has_a_view_showing_exactly_what_the_kernel_shows() -> None:
    assert set(VIEWS) == set(STAGE_NAMES)
    for stage in STAGE_NAMES:
        fields = {f.name for f in dataclasses.fields(VIEWS[stage])} - BASE
        assert fields == set(VISIBLE[stage]), stage
        wire = _turn().view(stage)
        view = VIEWS[stage].from_wire(wire)
        assert (view.stage, view.session_id, view.turn_id, view.step, view.data) == (stage, "s1", "t1", 2, {"k": 1})
        for name in fields:
            value = getattr(view, name)
            is_record = dataclasses.is_dataclass(value) and not isinstance(value, type)
            shown = dataclasses.asdict(value) if is_record else value
            assert shown == wire[name], (stage, name)


def test_every_answer_a_view_builds_is_accepted_by_the_kernel_and_covers_what_it_may_set() -> None:
    for stage in STAGE_NAMES:
        view = VIEWS[stage].from_wire(_turn().view(stage))
        keys: set[str] = set()
        for index, build in enumerate([*ANSWERS[stage], lambda v: v.remember(seen=True)]):
            answer = build(view)
            context = _turn()
            context.apply(stage, "p", {**answer, "data": {"seen": True}})
            assert context.errors == [], (stage, index, context.errors)
            assert context.data["seen"] is True
            keys |= set(answer)
        assert keys == {*WRITABLE[stage], "data"}, stage


def test_a_rewrite_changes_the_kernel_state_it_names() -> None:
    context = _turn().for_call({"id": "c2", "name": "files_read", "plugin": "files", "arguments": {"path": "a"}})
    view = BeforeToolcallView.from_wire(context.view("before_toolcall"))
    assert view.tool_call.name == "files_read" and view.tool_call.arguments == {"path": "a"}
    context.apply("before_toolcall", "guard", view.rewrite({"path": "b"}, data={"why": "sandbox"}))
    assert context.tool_call is not None and context.tool_call["arguments"] == {"path": "b"}
    assert context.data["why"] == "sandbox"
    assert context.apply("before_toolcall", "guard", view.deny("not today"))
    assert context.denied == "denied by guard: not today"


def test_registration_wraps_typed_hooks_and_keeps_dict_hooks_as_they_are() -> None:
    plugin = Plugin("p")

    @plugin.stage("on_input")
    def bare(context: dict[str, Any]) -> dict[str, Any]:
        return {"input": context["input"].upper()}

    assert plugin.stages["on_input"] is bare, "a dict hook is called directly: no wrapper, no cost"

    @plugin.stage("before_output")
    def sign(view: BeforeOutputView) -> Change:
        return view.rewrite(view.output + " ☀")

    assert plugin.stages["before_output"]({"output": "Sunny"}) == {"output": "Sunny ☀"}

    @plugin.stage("after_output")
    def observe(view: AfterOutputView) -> Change:  # the annotation only exists for the type checker
        return view.remember(length=len(view.output))

    assert plugin.stages["after_output"]({"output": "four"}) == {"data": {"length": 4}}

    with pytest.raises(TypeError, match=r"registered for pre_action but takes a OnInputView.*PreActionView"):

        @plugin.stage("pre_action")
        def wrong(view: OnInputView) -> None:
            return None


def test_an_async_typed_hook_stays_a_coroutine_function() -> None:
    plugin = Plugin("p")

    @plugin.stage("on_input")
    async def shout(view: OnInputView) -> Change:
        return view.respond(view.input + "!")

    hook = plugin.stages["on_input"]
    assert asyncio.iscoroutinefunction(hook), "the runtime awaits it instead of calling it on the loop"
    assert asyncio.run(hook({"input": "hi"})) == {"respond": "hi!"}


def test_state_is_an_error_before_the_plugin_starts() -> None:
    with pytest.raises(RuntimeError, match="not running"):
        _ = Plugin("p", state=lambda ctx: 1).state
    with pytest.raises(RuntimeError, match=r"has no state: declare it with Plugin\('q', state=...\)"):
        _ = Plugin("q").state


TYPED = """
from dataclasses import dataclass
from pathlib import Path

from hologram.sdk import BeforeOutputView, Change, Plugin, StartContext


@dataclass
class Counter:
    prefix: str
    path: Path
    calls: int = 0
    seen_at_start: bool = False


def build(ctx: StartContext) -> Counter:
    return Counter(str(ctx.config["prefix"]), Path(ctx.data_dir))


plugin = Plugin("typed", state=build)


@plugin.on_start
def started(ctx: StartContext) -> None:
    plugin.state.seen_at_start = True


@plugin.tool("count")
def count() -> str:
    plugin.state.calls += 1
    s = plugin.state
    return f"{s.prefix} {s.calls} started={s.seen_at_start} dir={s.path.is_dir()}"


@plugin.stage("before_output")
def sign(view: BeforeOutputView) -> Change:
    return view.rewrite(f"{view.output} [{view.turn_id}]", data={"signed": True})


if __name__ == "__main__":
    plugin.run()
"""


@pytest.mark.slow
def test_a_typed_hook_gets_a_view_and_answers_on_the_wire_and_state_is_built_at_start(tmp_path: Path) -> None:
    (tmp_path / "typed.py").write_text(TYPED)
    manifest = write_plugin(
        tmp_path,
        "typed",
        command=[sys.executable, str(tmp_path / "typed.py")],
        config={"prefix": "n"},
        extra="[stages]\nbefore_output = { order = 1 }\n",
    )

    async def scenario() -> None:
        async with PluginHarness.from_manifest(manifest) as harness:
            view = {"stage": "before_output", "turn_id": "t9", "input": "q", "output": "Sunny", "data": {}}
            assert await harness.call_stage("before_output", view) == {
                "output": "Sunny [t9]",
                "data": {"signed": True},
            }
            assert await harness.call_tool("count") == {"content": "n 1 started=True dir=True"}
            assert await harness.call_tool("count") == {"content": "n 2 started=True dir=True"}

    asyncio.run(scenario())


def test_typed_hooks_run_in_the_kernels_dispatcher_as_an_in_process_plugin_does() -> None:
    """The kernel calls an in-process plugin's ``plugin.stages[stage]`` with the view dict (no protocol): the
    typed wrapper must keep that contract, deny and rewrite included."""
    plugin = Plugin("guard")

    @plugin.stage("before_toolcall")
    def guard(view: BeforeToolcallView) -> Change | None:
        if view.tool_call.name == "shell_run":
            return view.deny(f"no shell in {view.channel}")
        return view.rewrite({**view.tool_call.arguments, "safe": True})

    dispatcher = StageDispatcher()
    dispatcher.register(
        "before_toolcall", "guard", FunctionHook("guard", "before_toolcall", plugin.stages["before_toolcall"])
    )
    call = _turn().for_call({"id": "c1", "name": "files_read", "plugin": "files", "arguments": {"path": "a"}})
    assert asyncio.run(dispatcher.run("before_toolcall", call)) is False
    assert call.tool_call is not None and call.tool_call["arguments"] == {"path": "a", "safe": True}
    shell = _turn().for_call({"id": "c2", "name": "shell_run", "plugin": "shell", "arguments": {}})
    assert asyncio.run(dispatcher.run("before_toolcall", shell)) is True
    assert shell.denied == "denied by guard: no shell in cli" and shell.errors == []
