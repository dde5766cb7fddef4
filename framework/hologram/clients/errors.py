"""The errors the turn-API clients raise, importable beside them: a channel written only against
`hologram.clients` (the ACP adapter, a third party's bridge) tells them apart without importing the kernel's
transport (`hologram.rpc`) or base modules itself.

- `HologramError` (its `Problem`s): `TurnClient.connect` found no kernel for the data directory (its message
  says how to start one);
- `RpcError`: the kernel refused a request (``code``, ``message``: the method, the field and the fix);
- `ConnectionClosed` (and its `KernelGone`): the kernel went away mid-stream.
"""

from __future__ import annotations

from hologram.base.errors import HologramError, Problem
from hologram.clients.stream import KernelGone
from hologram.rpc import ConnectionClosed, RpcError

__all__ = ["ConnectionClosed", "HologramError", "KernelGone", "Problem", "RpcError"]
