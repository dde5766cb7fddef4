"""The SDK's local call path (`LocalEndpoint`) answers exactly what the plugin answers over its channel.

Real objects: an SDK `Plugin`, its `Runtime` serving the in-memory pipe `LocalEndpoint.connect` makes, and a
kernel-side `Connection` on that pipe (the path every request took before: the protocol).

Mutation checks (done): `StageFunctions` returning a blocking hook unwrapped turns
``test_a_blocking_hook_runs_in_a_thread_on_both_paths`` red; `LocalEndpoint.handle` calling anything but
the runtime's handler for the method turns ``test_handle_answers_as_the_channel_does`` red.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from typing import Any

import pytest

from hologram.base import protocol
from hologram.rpc import METHOD_NOT_FOUND, NOT_READY, Connection, RpcError
from hologram.sdk import Plugin
from hologram.sdk.local import LocalEndpoint, load_plugin


def make_plugin() -> tuple[Plugin, list[str]]:
    plugin = Plugin("local")
    threads: list[str] = []

    @plugin.tool("shout", parameters={"type": "object"})
    def shout(text: str) -> str:
        return text.upper()

    @plugin.stage("on_input")
    def on_input(ctx: dict[str, Any]) -> dict[str, Any]:
        return {"input": ctx["input"] + "!"}

    @plugin.stage("before_output")
    async def before_output(ctx: dict[str, Any]) -> dict[str, Any]:
        return {"output": ctx["output"] + "?"}

    @plugin.stage("pre_action", blocking=True)
    def pre_action(ctx: dict[str, Any]) -> None:
        threads.append(threading.current_thread().name)

    return plugin, threads


async def both_paths(method: str, params: dict[str, Any]) -> tuple[Any, Any]:
    """(the answer over the channel, the answer through `handle`), from one connected endpoint."""
    plugin, _ = make_plugin()
    local = LocalEndpoint(plugin)
    reader, writer, serve = local.connect()
    serving = asyncio.ensure_future(serve)
    kernel = Connection(reader, writer, name="kernel→local")
    listening = asyncio.ensure_future(kernel.serve())
    try:
        over_channel = await kernel.request(method, params, timeout=5)
        return over_channel, await local.handle(method, params)
    finally:
        kernel.close()
        for task in (serving, listening):
            task.cancel()


@pytest.mark.parametrize(
    ("method", "params", "expected"),
    [
        (protocol.STAGE_INVOKE, {"stage": "on_input", "context": {"input": "hi"}}, {"result": {"input": "hi!"}}),
        (protocol.STAGE_INVOKE, {"stage": "before_output", "context": {"output": "o"}}, {"result": {"output": "o?"}}),
        (protocol.TOOL_INVOKE, {"name": "shout", "arguments": {"text": "hey"}, "call_id": "c1"}, {"content": "HEY"}),
    ],
)
def test_handle_answers_as_the_channel_does(method: str, params: dict[str, Any], expected: Any) -> None:
    over_channel, local = asyncio.run(both_paths(method, params))
    assert over_channel == local == expected


def test_unknown_requests_fail_alike_and_an_unconnected_endpoint_is_not_ready() -> None:
    plugin, _ = make_plugin()
    with pytest.raises(RpcError) as raised:
        asyncio.run(LocalEndpoint(plugin).handle(protocol.TOOL_INVOKE, {"name": "shout"}))
    assert raised.value.code == NOT_READY

    async def unknown_hook() -> None:
        local = LocalEndpoint(plugin)
        serve = local.connect()[2]
        try:
            await local.handle(protocol.STAGE_INVOKE, {"stage": "post_action", "context": {}})
        finally:
            serve.close()  # type: ignore[attr-defined]  # never served: a coroutine not started

    with pytest.raises(RpcError) as raised:
        asyncio.run(unknown_hook())
    assert raised.value.code == METHOD_NOT_FOUND and "does not hook 'post_action'" in raised.value.message


def test_stage_function_is_what_stage_invoke_runs() -> None:
    plugin, _ = make_plugin()
    local = LocalEndpoint(plugin)
    assert local.stage_function("on_input") is plugin.stages["on_input"]  # plain: called inline, no wrapper
    assert local.stage_function("post_action") is None
    assert local.stage_function("pre_action") is local.stage_function("pre_action")  # one wrapper, kept
    answer = local.stage_function("before_output")({"output": "o"})  # type: ignore[misc]
    assert inspect.isawaitable(answer)
    assert asyncio.run(answer) == {"output": "o?"}  # type: ignore[arg-type]


def test_a_blocking_hook_runs_in_a_thread_on_both_paths() -> None:
    plugin, threads = make_plugin()
    local = LocalEndpoint(plugin)
    answer = local.stage_function("pre_action")({})  # type: ignore[misc]
    assert inspect.isawaitable(answer)
    asyncio.run(answer)  # type: ignore[arg-type]
    over_channel, _ = asyncio.run(both_paths(protocol.STAGE_INVOKE, {"stage": "pre_action", "context": {}}))
    assert over_channel == {"result": None}
    assert threads and all(name != threading.main_thread().name for name in threads)


def test_load_plugin_names_a_module_without_a_plugin() -> None:
    with pytest.raises(ImportError, match="json has no module-level `plugin = Plugin"):
        load_plugin("json")
