"""Stage dispatch: lock order through pluggy's LIFO, the hook contract, scope, and failing hooks."""

from __future__ import annotations

import asyncio
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from hologram.plan.lock import LOCK_VERSION, Lock, LockedPlugin
from hologram.sdk.local import LocalEndpoint
from hologram.stages import FunctionHook, StageContext, StageDispatcher, install_from_lock
from hologram.supervisor import PluginSpec, State, Supervisor


def tables(stages: dict[str, list[str]], plugins: list[dict[str, Any]]) -> dict[str, Any]:
    """A lock's tables as TOML would give them, for `Lock.from_data`."""
    return {"lock-version": LOCK_VERSION, "content-hash": "sha256:test", "stages": stages, "plugin": plugins}


def ctx(**kw: Any) -> StageContext:
    return StageContext("s1", "t1", **kw)


def recorder(name: str, seen: list[str], answer: Any = None) -> FunctionHook:
    def hook(view: dict[str, Any]) -> Any:
        seen.append(name)
        return answer

    return hook  # type: ignore[return-value]


def test_register_all_runs_in_the_given_order_although_pluggy_is_lifo() -> None:
    """Mutation check: registering in forward order in `_reregister` (no `reversed`) turns this red
    (pluggy then calls c, b, a)."""
    seen: list[str] = []
    d = StageDispatcher()
    d.register_all("on_input", [(n, FunctionHook(n, "on_input", recorder(n, seen))) for n in ("a", "b", "c")])
    d.register("on_input", "z", FunctionHook("z", "on_input", recorder("z", seen)))
    d.register("on_input", "first", FunctionHook("first", "on_input", recorder("first", seen)), first=True)
    asyncio.run(d.run("on_input", ctx(input="hi")))
    assert seen == ["first", "a", "b", "c", "z"]
    assert d.order("on_input") == seen


def test_each_stage_has_its_own_order() -> None:
    seen: list[str] = []
    d = StageDispatcher()
    d.register_all("on_input", [(n, FunctionHook(n, "on_input", recorder(n, seen))) for n in ("a", "b")])
    d.register_all("before_output", [(n, FunctionHook(n, "before_output", recorder(n, seen))) for n in ("b", "a")])
    asyncio.run(d.run("on_input", ctx()))
    asyncio.run(d.run("before_output", ctx()))
    assert seen == ["a", "b", "b", "a"]


def test_install_from_lock_follows_lock_order_and_detaches_plugins_that_are_not_ready(tmp_path: Path) -> None:
    """Real supervisor objects (not started): in-process plugins get direct function hooks, others RPC proxies."""
    pkg = tmp_path / "inproc_stage_mod.py"
    pkg.write_text(
        textwrap.dedent(
            """
            from hologram.sdk import Plugin
            plugin = Plugin("c")
            SEEN = []
            @plugin.stage("on_input")
            def hook(ctx):
                SEEN.append(ctx["input"])
                return {"input": ctx["input"] + "!"}
            """
        )
    )
    sys.path.insert(0, str(tmp_path))
    try:
        entries = [
            {"name": "kernel"},
            {
                "name": "a",
                "run": {"module": "x"},
                "stages": {"on_input": {"order": 20, "scope": "all", "timeout_s": 1}},
            },
            {"name": "c", "run": {"inproc": "inproc_stage_mod"}, "stages": {"on_input": {"order": 5}}},
        ]
        lock = Lock.from_data(tmp_path / "hologram.lock", tables({"on_input": ["c", "a"]}, entries))
        sup = Supervisor([PluginSpec(p) for p in lock.plugins[1:]], tmp_path, kernel_facilities=[])
        d = StageDispatcher()
        install_from_lock(d, lock, sup)
        assert d.order("on_input") == ["c", "a"]
        c = ctx(input="hi")
        assert asyncio.run(d.run("on_input", c)) is False
        assert c.input == "hi" and c.errors == []  # nobody ready: every hook detached
        for name in ("a", "c"):
            sup.plugins[name].state = State.READY
            sup.plugins[name].stages = ["on_input"]
        sup.plugins["c"].local = LocalEndpoint.load("inproc_stage_mod")  # as its start does
        c = ctx(input="hi")
        asyncio.run(d.run("on_input", c))
        assert c.input == "hi!"  # c ran in process, first
        assert [e["plugin"] for e in c.errors] == ["a"]  # a's proxy tried RPC: no runtime → recorded
        assert "not ready" in c.errors[0]["error"] or "ready" in c.errors[0]["error"]
    finally:
        sys.path.remove(str(tmp_path))


def test_deny_stops_the_stage_and_names_the_plugin() -> None:
    seen: list[str] = []
    d = StageDispatcher()
    d.register_all(
        "before_toolcall",
        [
            ("guard", FunctionHook("guard", "before_toolcall", recorder("guard", seen, {"deny": "no shell today"}))),
            ("later", FunctionHook("later", "before_toolcall", recorder("later", seen))),
        ],
    )
    c = ctx().for_call({"id": "c1", "name": "sh", "plugin": "shell", "arguments": {}})
    assert asyncio.run(d.run("before_toolcall", c)) is True
    assert c.denied == "denied by guard: no shell today"
    assert seen == ["guard"]


def test_rewrite_and_respond_and_data() -> None:
    d = StageDispatcher()
    d.register(
        "before_toolcall",
        "r",
        FunctionHook("r", "before_toolcall", lambda v: {"arguments": {"x": 2}, "data": {"k": 1}}),
    )
    c = ctx().for_call({"id": "c1", "name": "f", "plugin": "p", "arguments": {"x": 1}})
    asyncio.run(d.run("before_toolcall", c))
    assert c.tool_call is not None and c.tool_call["arguments"] == {"x": 2}
    assert c.data == {"k": 1}
    d.register("on_input", "bot", FunctionHook("bot", "on_input", lambda v: {"respond": "closed"}))
    c2 = ctx(input="hi")
    assert asyncio.run(d.run("on_input", c2)) is True
    assert (c2.respond, c2.responded_by) == ("closed", "bot")


def test_bad_answers_failures_and_timeouts_are_recorded_and_the_stage_goes_on() -> None:
    async def slow(view: dict[str, Any]) -> None:
        await asyncio.sleep(5)

    def boom(view: dict[str, Any]) -> None:
        raise RuntimeError("kaput")

    d = StageDispatcher()
    d.register_all(
        "on_input",
        [
            ("slow", FunctionHook("slow", "on_input", slow, timeout_s=0.05)),
            ("boom", FunctionHook("boom", "on_input", boom)),
            ("odd", FunctionHook("odd", "on_input", lambda v: {"output": "x", "input": 3})),
            ("list", FunctionHook("list", "on_input", lambda v: [1])),
            ("ok", FunctionHook("ok", "on_input", lambda v: {"input": v["input"].upper()})),
        ],
    )
    c = ctx(input="hi")
    asyncio.run(d.run("on_input", c))
    assert c.input == "HI"
    errors = {(e["plugin"], e["error"].split(":")[0]) for e in c.errors}
    assert ("slow", "timed out after 0.05 s") in errors
    assert any(p == "boom" and "kaput" in e["error"] for e in c.errors for p in [e["plugin"]])
    assert any("on_input cannot set 'output'" in e["error"] for e in c.errors)
    assert any("input must be str, not int" in e["error"] for e in c.errors)
    assert any(e["plugin"] == "list" for e in c.errors)


def test_own_tools_scope_sees_only_its_plugins_calls() -> None:
    seen: list[str] = []
    d = StageDispatcher()
    d.register(
        "before_toolcall", "notes", FunctionHook("notes", "before_toolcall", recorder("notes", seen), scope="own_tools")
    )
    d.register("before_toolcall", "audit", FunctionHook("audit", "before_toolcall", recorder("audit", seen)))
    for plugin in ("notes", "shell"):
        asyncio.run(
            d.run("before_toolcall", ctx().for_call({"id": "1", "name": "t", "plugin": plugin, "arguments": {}}))
        )
    assert seen == ["notes", "audit", "audit"]


def test_hooks_get_a_copy_they_cannot_corrupt() -> None:
    def vandal(view: dict[str, Any]) -> None:
        view["data"]["x"] = 1
        view["tool_call"]["arguments"]["x"] = 99

    d = StageDispatcher()
    d.register("before_toolcall", "v", FunctionHook("v", "before_toolcall", vandal))
    c = ctx().for_call({"id": "1", "name": "t", "plugin": "p", "arguments": {"x": 1}})
    asyncio.run(d.run("before_toolcall", c))
    assert c.data == {} and c.tool_call is not None and c.tool_call["arguments"] == {"x": 1}


def test_unknown_stage_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown stage"):
        StageDispatcher().register("on_lunch", "p", FunctionHook("p", "on_lunch", lambda v: None))


def test_a_batch_asks_pluggy_once_per_stage_and_tool_plugin_and_keeps_the_scope() -> None:
    """The batch memo (dispatch.py, "Batches"): pluggy is asked once per tool plugin, hooks still run per
    call, and an ``own_tools`` hook still sees only its plugin's calls.
    Mutation checks (done): ignoring ``batch`` turns the pluggy count red (3, not 2); a memo key without
    the call's plugin turns the ``seen`` order red (notes' hook ran for shell's call)."""
    seen: list[str] = []
    d = StageDispatcher()
    d.register(
        "before_toolcall", "notes", FunctionHook("notes", "before_toolcall", recorder("notes", seen), scope="own_tools")
    )
    d.register("before_toolcall", "audit", FunctionHook("audit", "before_toolcall", recorder("audit", seen)))
    asked: list[str] = []
    d.pm.add_hookcall_monitoring(lambda name, impls, kwargs: asked.append(name), lambda *a: None)
    turn = ctx()
    batch: dict[Any, Any] = {}
    for i, plugin in enumerate(("notes", "shell", "notes")):
        call = turn.for_call({"id": str(i), "name": "t", "plugin": plugin, "arguments": {}})
        asyncio.run(d.run("before_toolcall", call, batch=batch))
    assert seen == ["notes", "audit", "audit", "notes", "audit"]
    assert asked == ["before_toolcall", "before_toolcall"]
    asked.clear()
    asyncio.run(d.run("before_toolcall", turn.for_call({"id": "9", "name": "t", "plugin": "notes", "arguments": {}})))
    assert asked == ["before_toolcall"]  # without a batch: asked for the call


def test_a_stage_with_a_source_of_its_own_is_asked_for_every_call() -> None:
    """A plain callable source may decide by anything in the context, so its stage keeps no memo."""
    d = StageDispatcher()
    ran: list[str] = []

    def by_tool_name(c: StageContext) -> Any:
        from hologram.stages import HookCall

        name = (c.tool_call or {}).get("name")
        return (
            HookCall("picky", lambda view: ran.append(view["tool_call"]["name"]), 1.0, False) if name == "x" else None
        )

    d.register("before_toolcall", "picky", by_tool_name)
    turn, batch = ctx(), {}
    for name in ("y", "x", "y", "x"):
        asyncio.run(d.run("before_toolcall", turn.for_call({"id": name, "name": name, "plugin": "p"}), batch=batch))
    assert ran == ["x", "x"] and batch == {}


def test_a_remote_hook_whose_plugin_stopped_mid_batch_is_skipped_not_failed(tmp_path: Path) -> None:
    """pluggy's answer is kept for the batch, but a plugin that is no longer ready loses its hook at once
    (no RPC, no error). Mutation check (done): dropping the readiness check in `RemoteHook._run` turns this
    red (an RPC attempt, recorded as a failed hook)."""
    from hologram.stages import RemoteHook

    entry = {"name": "a", "run": {"module": "x"}, "stages": {"after_toolcall": {"order": 1}}}
    sup = Supervisor([PluginSpec(LockedPlugin.model_validate(entry))], tmp_path, kernel_facilities=[])
    sup.plugins["a"].state = State.READY
    sup.plugins["a"].stages = ["after_toolcall"]
    d = StageDispatcher()
    d.register("after_toolcall", "a", RemoteHook(sup, "a", "after_toolcall", timeout_s=1, scope="all"))
    turn, batch = ctx(), {}
    first = turn.for_call({"id": "1", "name": "t", "plugin": "p"})
    asyncio.run(d.run("after_toolcall", first, batch=batch))
    assert len(turn.errors) == 1  # ready but no runtime: the RPC was tried, and failed
    sup.plugins["a"].state = State.CRASHED
    second = turn.for_call({"id": "2", "name": "t", "plugin": "p"})
    asyncio.run(d.run("after_toolcall", second, batch=batch))
    assert len(batch) == 1 and len(turn.errors) == 1  # the memo was used, and the stopped plugin skipped


def test_an_in_process_blocking_hook_runs_in_a_thread_and_a_plain_one_inline(tmp_path: Path) -> None:
    """``@plugin.stage(name, blocking=True)`` means the same in process as out of it (proxies.py).
    Mutation check (done): returning the function unwrapped from `_inproc_resolver` turns this red."""
    (tmp_path / "inproc_threads_mod.py").write_text(
        textwrap.dedent(
            """
            import threading
            from hologram.sdk import Plugin
            plugin = Plugin("t")

            @plugin.stage("on_input", blocking=True)
            def slow(ctx):
                return {"data": {"slow": threading.current_thread().name}}

            @plugin.stage("pre_action")
            def quick(ctx):
                return {"data": {"quick": threading.current_thread().name}}
            """
        )
    )
    sys.path.insert(0, str(tmp_path))
    try:
        entries = [
            {"name": "kernel"},
            {"name": "t", "run": {"inproc": "inproc_threads_mod"}, "stages": {"on_input": {}, "pre_action": {}}},
        ]
        lock = Lock.from_data(tmp_path / "hologram.lock", tables({"on_input": ["t"], "pre_action": ["t"]}, entries))
        sup = Supervisor([PluginSpec(lock.plugins[1])], tmp_path, kernel_facilities=[])
        sup.plugins["t"].state = State.READY
        sup.plugins["t"].local = LocalEndpoint.load("inproc_threads_mod")  # as its start does
        d = StageDispatcher()
        install_from_lock(d, lock, sup)
        c = ctx(input="hi")

        async def both() -> None:
            await d.run("on_input", c)
            await d.run("pre_action", c)

        asyncio.run(both())
        assert c.errors == []
        assert c.data["quick"] == "MainThread" and c.data["slow"] != "MainThread"
    finally:
        sys.path.remove(str(tmp_path))
