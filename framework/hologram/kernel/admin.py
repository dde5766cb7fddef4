"""Kernel administration methods, served twice: to plugins as a kernel facility and to clients on the
control socket as ``admin/<method>``, with the same parameters and the same answers.

Why both: the web plugin reaches the kernel through facilities (it is a plugin like any other), while the
CLI and the tests have the control socket; one registration keeps the two from drifting apart. Parameters
are checked against the method's signature first, so a wrong or missing one is a -32602 naming it and the
ones the method takes, never a TypeError from deep inside.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from hologram.rpc import INVALID_PARAMS, RpcError

if TYPE_CHECKING:
    from hologram.kernel.core import Kernel

CONTROL_PREFIX = "admin/"
AdminMethod = Callable[..., Awaitable[dict[str, Any]]]


def _checked(facility: str, name: str, method: AdminMethod, params: Any) -> dict[str, Any]:
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise RpcError(INVALID_PARAMS, f"{facility}.{name}: params must be an object")
    signature = inspect.signature(method)
    accepted = [p for p in signature.parameters if p != "caller"]
    if "caller" in params:  # the kernel says who calls; a caller cannot claim to be another plugin
        raise RpcError(
            INVALID_PARAMS,
            f"{facility}.{name}: unexpected parameter 'caller'; its parameters: " + (", ".join(accepted) or "none"),
        )
    try:
        signature.bind(**{"caller": None, **params} if "caller" in signature.parameters else params)
    except TypeError as exc:
        expected = ", ".join(accepted) or "none"
        raise RpcError(INVALID_PARAMS, f"{facility}.{name}: {exc}; its parameters: {expected}") from None
    return params


def serve_admin(kernel: Kernel, facility: str, name: str, method: AdminMethod) -> None:
    """Serve ``method`` as ``facility.name`` to plugins and as ``admin/name`` on the control socket.

    A ``caller`` parameter, when the method has one, receives the calling plugin's name (None on the control
    socket): a plugin restarting itself must be answered before it is stopped."""
    takes_caller = "caller" in inspect.signature(method).parameters

    async def for_plugins(caller: str, **params: Any) -> dict[str, Any]:
        params = _checked(facility, name, method, params)
        await asyncio.sleep(0)  # off the eager first step (rpc/connection.py): httpx's anyio scopes need one task
        return await (method(caller=caller, **params) if takes_caller else method(**params))

    async def for_clients(params: Any) -> dict[str, Any]:
        params = _checked(facility, name, method, params)
        await asyncio.sleep(0)
        return await (method(caller=None, **params) if takes_caller else method(**params))

    kernel.add_facility_method(facility, name, for_plugins)
    kernel.add_control_method(CONTROL_PREFIX + name, for_clients)
