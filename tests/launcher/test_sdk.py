"""The SDK and its test kit over the real protocol: tools, arena payloads, events, facility routing."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from hologram.rpc import RpcError
from hologram.sdk.testing import PluginHarness
from hologram.supervisor import State
from tests.kit.wait import wait_until_async
from tests.launcher.kit import events, supervisor_for, wait_state, write_plugin

pytestmark = pytest.mark.slow


def test_tool_call_and_large_result_through_the_arena(tmp_path: Path) -> None:
    manifest = write_plugin(tmp_path, "tooly", provides=["tooly.f"])

    async def scenario() -> None:
        async with PluginHarness.from_manifest(manifest) as harness:
            assert set(harness.tools) >= {"echo", "big"}
            assert await harness.call_tool("echo", {"text": "hi"}) == {"content": "tooly: hi"}
            bad = await harness.call_tool("echo", {"wrong": 1})
            assert bad["is_error"] and "bad arguments for echo" in bad["content"]
            # a value its annotation (text: str) does not accept: refused before the tool runs, not "tooly: 5"
            wrong_type = await harness.call_tool("echo", {"text": 5})
            assert wrong_type == {
                "content": "error: bad arguments for echo: 'text' must be string, not integer",
                "is_error": True,
            }
            size = 8 * 1024 * 1024
            result = await harness.call_tool("big", {"size": size})
            assert "ref" in result["blob"], "8 MiB travels as an arena reference, not on the control line"
            assert harness.read_blob(result["blob"]) == bytes(range(256)) * (size // 256)

    asyncio.run(scenario())


def test_what_a_tool_returns_becomes_the_result_object_the_docs_say(tmp_path: Path) -> None:
    """docs/authoring.md, "What a tool returns" (and `hologram.sdk.tool_result`'s docstring), on the wire: a dict
    is a result object only when it is one; data with a `content` field is data (issue 36's reader lost the
    other fields of such a dict). Mutation check (done): the old rule (any dict with "content" passed through)
    turns it red at ``data_with_content``."""
    manifest = write_plugin(tmp_path, "tooly", provides=["tooly.f"])
    expected = {
        "int": {"content": "5"},
        "none": {"content": "null"},
        "list": {"content": '[1,"二"]'},
        "data": {"content": '{"name":"apples","total":5}'},
        "data_with_content": {"content": '{"content":"a note","author":"Ada"}'},
        "result_object": {"content": "done", "is_error": False},
        "tool_result": {"content": '{"content": "a note"}'},
        "tool_result_error": {"content": "quota exceeded", "is_error": True},
        "tool_error": {"content": "error: no such counter", "is_error": True},
    }

    async def scenario() -> dict[str, object]:
        async with PluginHarness.from_manifest(manifest) as harness:
            return {kind: await harness.call_tool("shape", {"kind": kind}) for kind in expected}

    assert asyncio.run(scenario()) == expected


def test_events_reach_subscribers_through_the_ring(tmp_path: Path) -> None:
    write_plugin(tmp_path, "listener", provides=["listener.f"])

    async def scenario() -> None:
        supervisor = supervisor_for(tmp_path)
        supervisor.start()
        try:
            # no pause: the SDK subscribes during initialize, before it answers, so ready means subscribed
            await wait_state(supervisor, "listener", State.READY)
            supervisor.ring.publish({"type": "ignored", "n": 0})
            supervisor.ring.publish({"type": "greeting", "text": "你好"})
            await wait_until_async(
                lambda: any(e["event"] == "event" for e in events(tmp_path)), timeout=10, what="the event delivered"
            )
        finally:
            await supervisor.shutdown()

    asyncio.run(scenario())
    received = [e["data"] for e in events(tmp_path) if e["event"] == "event"]
    assert received == [{"type": "greeting", "text": "你好"}], "filtered by type, Chinese intact"


def test_facility_calls_are_routed_only_for_declared_requirements(tmp_path: Path) -> None:
    write_plugin(tmp_path, "provider", provides=["store.f"])
    write_plugin(tmp_path, "consumer", requires=["store.f"])
    write_plugin(tmp_path, "stranger")

    async def scenario() -> None:
        supervisor = supervisor_for(tmp_path)
        supervisor.start()
        try:
            for name in ("provider", "consumer", "stranger"):
                await wait_state(supervisor, name, State.READY)
            call = supervisor._facility_call
            with pytest.raises(RpcError, match=r"stranger does not require 'store\.f'"):
                await call(supervisor.plugins["stranger"], {"facility": "store.f", "method": "x"})
            with pytest.raises(RpcError, match=r"serves no method 'nothing' on 'store\.f'"):
                await call(supervisor.plugins["consumer"], {"facility": "store.f", "method": "nothing"})
            await supervisor.stop_plugin("provider")
            with pytest.raises(RpcError, match=r"store\.f is not ready: provider is stopped"):
                await call(supervisor.plugins["consumer"], {"facility": "store.f", "method": "x"})
        finally:
            await supervisor.shutdown()

    asyncio.run(scenario())


HOOKS = """
import threading
from hologram.sdk import Plugin
plugin = Plugin("hooky")

@plugin.stage("before_output")
def quick(ctx):
    return {"output": ctx["output"] + " @" + threading.current_thread().name}

@plugin.stage("after_output", blocking=True)
def slow(ctx):
    return {"data": {"thread": threading.current_thread().name}}

if __name__ == "__main__":
    plugin.run()
"""


def test_sync_stage_hooks_run_on_the_plugin_loop_unless_they_say_blocking(tmp_path: Path) -> None:
    """A thread hop was ~150 µs of a ~250 µs remote hook call, so plain hooks run on the loop; a hook that
    blocks opts into a thread. Mutation check (done): sending every sync hook through
    `call_maybe_async` again turns the first assert red."""
    (tmp_path / "hooky.py").write_text(HOOKS)
    stages = "[stages]\nbefore_output = { order = 1 }\nafter_output = { order = 1 }\n"
    manifest = write_plugin(tmp_path, "hooky", command=[sys.executable, str(tmp_path / "hooky.py")], extra=stages)

    async def scenario() -> None:
        async with PluginHarness.from_manifest(manifest) as harness:
            quick = await harness.call_stage("before_output", {"stage": "before_output", "output": "hi"})
            assert quick == {"output": "hi @MainThread"}
            slow = await harness.call_stage("after_output", {"stage": "after_output", "output": "hi"})
            assert slow["data"]["thread"] != "MainThread"

    asyncio.run(scenario())
