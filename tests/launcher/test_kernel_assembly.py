"""The kernel is assembled by registration: control methods, kernel facility methods, event listeners,
lock-changed listeners and notices go through `Kernel`'s calls, which refuse duplicates.

Real objects: `Kernel` (not run: no plugin is started), its `Supervisor` and `ControlServer`.

Mutation checks (done): `ControlServer.add` or `Supervisor.add_kernel_method` accepting a duplicate turns the
two refusal tests red; `Kernel.replace_lock` not calling its listeners, or calling them after the plugins
restarted, turns ``test_replace_lock_...`` red; `Notices.subscribe` not replaying turns the notice test red.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hologram.kernel import Kernel
from hologram.kernel.notices import Notice
from hologram.plan.lock import LOCK_VERSION, Lock
from hologram.rpc import METHOD_NOT_FOUND, RpcError


def make_lock(path: Path, content_hash: str = "h1", *, config: dict[str, Any] | None = None) -> Lock:
    plugin = {
        "name": "p",
        "run": {"inproc": "no_such_module_for_assembly"},
        "requires": {"kernel.sessions": "kernel"},
        "config": config or {},
    }
    data = {
        "lock-version": LOCK_VERSION,
        "content-hash": content_hash,
        "stages": {},
        "plugin": [{"name": "kernel", "provides": ["kernel.sessions"]}, plugin],
    }
    return Lock.from_data(path, data)


@pytest.fixture
def kernel(tmp_path: Path) -> Iterator[Kernel]:
    k = Kernel(make_lock(tmp_path / "hologram.lock"), tmp_path)
    yield k
    k.ring.close()


async def no_op(params: dict[str, Any]) -> dict[str, Any]:
    return {}


def test_a_control_method_is_served_and_a_duplicate_name_is_refused(kernel: Kernel) -> None:
    kernel.add_control_method("ping", no_op)
    assert kernel.control.methods["ping"] is no_op
    with pytest.raises(ValueError, match="already serves 'ping'"):
        kernel.add_control_method("ping", no_op)
    with pytest.raises(ValueError, match="already serves 'status'"):  # the kernel's own are registered alike
        kernel.add_control_method("status", no_op)


def test_a_facility_method_is_served_through_facility_call_and_a_duplicate_is_refused(kernel: Kernel) -> None:
    def approve(caller: str, tool: str) -> dict[str, Any]:
        return {"caller": caller, "tool": tool}

    kernel.add_facility_method("kernel.sessions", "approve", approve)
    with pytest.raises(ValueError, match=r"'kernel\.sessions' already serves 'approve'"):
        kernel.add_facility_method("kernel.sessions", "approve", approve)
    caller = kernel.supervisor.plugins["p"]

    async def call(method: str) -> Any:
        params = {"facility": "kernel.sessions", "method": method, "params": {"tool": "shell_run"}}
        return await kernel.supervisor._facility_call(caller, params)

    assert asyncio.run(call("approve")) == {"caller": "p", "tool": "shell_run"}
    with pytest.raises(RpcError) as raised:
        asyncio.run(call("deny"))
    assert raised.value.code == METHOD_NOT_FOUND


def test_an_event_listener_sees_each_plugin_event_after_the_ring(kernel: Kernel) -> None:
    seen: list[dict[str, Any]] = []
    kernel.add_event_listener(seen.append)
    kernel.add_event_listener(lambda event: 1 / 0)  # a broken listener costs nobody the event
    kernel.add_event_listener(seen.append)
    kernel.supervisor._event_publish(kernel.supervisor.plugins["p"], {"type": "tool_output", "text": "x"})
    assert seen == [{"type": "tool_output", "text": "x", "source": "p"}] * 2


def test_replace_lock_is_the_only_way_the_lock_changes_and_tells_listeners_before_restarts(
    kernel: Kernel, tmp_path: Path
) -> None:
    first = kernel.lock
    kernel.supervisor.plugins["p"].wanted = False  # stopped by hand: adopting the lock does not start it
    order: list[str] = []
    kernel.on_lock_changed(lambda lock: order.append(f"listener {lock.content_hash}"))
    kernel.on_lock_changed(lambda lock: 1 / 0)  # logged; the others still hear of the lock
    kernel.on_lock_changed(lambda lock: order.append(f"spec {kernel.supervisor.plugins['p'].spec.plugin.config}"))
    with pytest.raises(AttributeError):
        kernel.lock = first  # type: ignore[misc]

    changed = make_lock(tmp_path / "hologram.lock", "h2", config={"x": 1})
    restarted = asyncio.run(kernel.replace_lock(changed))
    assert kernel.lock is changed
    assert order == ["listener h2", "spec {}"]  # the listeners ran before the supervisor adopted the specs
    assert restarted == ["p"]  # its lock entry changed
    assert kernel.supervisor.plugins["p"].spec.plugin.config == {"x": 1}


def test_notices_given_before_anyone_listens_are_replayed_in_order(kernel: Kernel) -> None:
    kernel.notify("agent", "no provider", warning=True)
    heard: list[Notice] = []
    kernel.on_notice(heard.append)
    kernel.notify("watch", "lock rebuilt; restarted nothing")
    assert heard == [Notice("agent", "no provider", True), Notice("watch", "lock rebuilt; restarted nothing")]
