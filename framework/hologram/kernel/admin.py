"""Kernel administration methods, served twice: to plugins as a kernel facility and to clients on the
control socket as ``admin/<method>``, with the same parameters and the same answers.

Why both: the web plugin reaches the kernel through facilities (it is a plugin like any other), while the
CLI and the tests have the control socket; one registration keeps the two from drifting apart. Parameters
are a pydantic model made from the method's signature (`params_model`) and checked before the method runs,
so a wrong or missing one is a -32602 naming it and the ones the method takes, never a TypeError from deep
inside.
"""

from __future__ import annotations

import asyncio
import inspect
import typing
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from hologram.rpc import INVALID_PARAMS, RpcError

if TYPE_CHECKING:
    from pydantic import BaseModel

    from hologram.kernel.core import Kernel

CONTROL_PREFIX = "admin/"
AdminMethod = Callable[..., Awaitable[dict[str, Any]]]


def params_model(facility: str, name: str, method: AdminMethod) -> type[BaseModel]:
    """The method's params as a pydantic model, made from its signature: one definition (the method), checked
    like every other contract (unknown keys refused, types from the annotations, every problem at once), and a
    JSON Schema for free. ``caller`` is not a param: the kernel sets it. pydantic is imported here, not at the
    top: `hologram memory` reads `CONTROL_PREFIX` from this module and stays without it."""
    from pydantic import ConfigDict, create_model

    hints = _hints(method)
    fields: dict[str, Any] = {}
    for param in inspect.signature(method).parameters.values():
        if param.name == "caller":
            continue
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (hints.get(param.name, Any), default)
    title = "".join(part.title() for part in f"{facility}.{name}".replace("_", ".").split("."))
    model: type[BaseModel] = create_model(title, __config__=ConfigDict(extra="forbid", frozen=True), **fields)
    return model


def _hints(method: AdminMethod) -> dict[str, Any]:
    """The method's resolved annotations; one that names a type only imported for type checking counts as Any
    (the method checks such a value itself)."""
    try:
        return typing.get_type_hints(method)
    except (NameError, TypeError):
        return {}


def _checked(facility: str, name: str, model: type[BaseModel], params: Any) -> dict[str, Any]:
    if params is None:
        params = {}
    accepted = ", ".join(model.model_fields) or "none"
    if not isinstance(params, dict):
        raise RpcError(INVALID_PARAMS, f"{facility}.{name}: params must be an object")
    if "caller" in params:  # the kernel says who calls; a caller cannot claim to be another plugin
        raise RpcError(INVALID_PARAMS, f"{facility}.{name}: unexpected parameter 'caller'; its parameters: {accepted}")
    from pydantic import ValidationError

    try:
        checked = model.model_validate(params)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or '(params)'}: {e['msg']}" for e in exc.errors())
        raise RpcError(INVALID_PARAMS, f"{facility}.{name}: {problems}; its parameters: {accepted}") from None
    return {key: getattr(checked, key) for key in model.model_fields}


def serve_admin(kernel: Kernel, facility: str, name: str, method: AdminMethod) -> None:
    """Serve ``method`` as ``facility.name`` to plugins and as ``admin/name`` on the control socket.

    A ``caller`` parameter, when the method has one, receives the calling plugin's name (None on the control
    socket): a plugin restarting itself must be answered before it is stopped."""
    takes_caller = "caller" in inspect.signature(method).parameters
    models: list[type[BaseModel]] = []  # made on the first call: a dozen of them cost ~40 ms before the first answer

    def model() -> type[BaseModel]:
        if not models:
            models.append(params_model(facility, name, method))
        return models[0]

    async def for_plugins(caller: str, **params: Any) -> dict[str, Any]:
        params = _checked(facility, name, model(), params)
        await asyncio.sleep(0)  # off the eager first step (rpc/connection.py): httpx's anyio scopes need one task
        return await (method(caller=caller, **params) if takes_caller else method(**params))

    async def for_clients(params: Any) -> dict[str, Any]:
        params = _checked(facility, name, model(), params)
        await asyncio.sleep(0)
        return await (method(caller=None, **params) if takes_caller else method(**params))

    kernel.add_facility_method(facility, name, for_plugins)
    kernel.add_control_method(CONTROL_PREFIX + name, for_clients)
