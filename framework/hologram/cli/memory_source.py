"""Where `hologram memory` gets its answer: the running kernel, or the data directory itself when none runs.

**Online.** A kernel runs on the data directory when its control socket accepts a connection; then every
sub-command is ``admin/<method>`` there. A refused parameter (-32602) is the user's to fix and says so; any
other error is the kernel's, reported as that — never followed by an offline attempt, because the kernel
holds the graph database open (only one process may) and a second answer computed elsewhere would hide the
kernel's problem.

**Offline.** No kernel: the same `MemoryInspector` over the same classes the kernel wires
(`SessionMemory` without a model — search scores by keywords, as a kernel does until its model has loaded —,
`GraphMemory`, `SceneStore`), opened for this one call and closed again.
"""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hologram.base.errors import HologramError, Problem
from hologram.kernel.admin import CONTROL_PREFIX
from hologram.kernel.control import check_socket_path, request, socket_path
from hologram.rpc import INVALID_PARAMS, RpcError

if TYPE_CHECKING:
    from hologram.config.settings import Settings
    from hologram.memory.session_memory import SessionMemory

ONLINE = "kernel"
OFFLINE = "offline"


def kernel_runs(data: Path) -> bool:
    """Whether a kernel serves the control socket of `data` (a socket file left by a killed kernel refuses)."""
    path = socket_path(data)
    if not path.exists():
        return False
    address = check_socket_path(path)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(5)
        try:
            sock.connect(address)
        except (FileNotFoundError, ConnectionRefusedError):
            return False
    return True


def answer(data: Path, method: str, params: dict[str, Any], *, timeout: float) -> tuple[dict[str, Any], str]:
    """``kernel.memory.<method>(**params)`` and where it was answered (`ONLINE` or `OFFLINE`)."""
    data = Path(data)
    if kernel_runs(data):
        return _online(data, method, params, timeout), ONLINE
    return asyncio.run(_offline(data, method, params)), OFFLINE


def _online(data: Path, method: str, params: dict[str, Any], timeout: float) -> dict[str, Any]:
    reply = request(data, CONTROL_PREFIX + method, params, timeout)
    error = reply.get("error")
    if error is None:
        result: dict[str, Any] = reply.get("result") or {}
        return result
    message = str(error.get("message", error)) if isinstance(error, dict) else str(error)
    if isinstance(error, dict) and error.get("code") == INVALID_PARAMS:
        raise HologramError(Problem(f"hologram memory {method}: {message}", hint="see `hologram memory --help`"))
    raise HologramError(
        Problem(
            f"the running kernel could not answer `hologram memory {method}`: {message}",
            file=str(socket_path(data)),
            hint="nothing was read offline: while a kernel runs it holds the memory graph open, so this command "
            "goes through it. The kernel's log (<data>/logs/) has the details; or stop the kernel and run the "
            "command again to read the data directory directly",
        )
    )


async def _offline(data: Path, method: str, params: dict[str, Any]) -> dict[str, Any]:
    from hologram.config.settings import load_settings
    from hologram.memory.inspection import MemoryInspector
    from hologram.memory.session_memory import SessionMemory
    from hologram.sessions import SessionStore

    if not data.is_dir():
        raise HologramError(
            Problem(
                "no data directory here: nothing to inspect",
                file=str(data),
                hint="pass the --data directory `hologram up` uses (default ./.hologram)",
            )
        )
    settings = load_settings(data, create=False)
    store = SessionStore.in_data_dir(data)
    try:
        memory = SessionMemory.open(data, store, load_model=False)
        chain = _Chain(settings)
        try:
            chain = _open_layers(memory, data, settings)
            try:
                result = dict(await getattr(MemoryInspector(memory), method)(**params))
                if memory.graph is not None and memory.graph.problem:  # e.g. another process holds the graph
                    raise HologramError(Problem(f"hologram memory {method}: {memory.graph.problem}"))
                return result
            except RpcError as exc:
                raise HologramError(Problem(f"hologram memory {method}: {exc.message}")) from None
            except RuntimeError as exc:  # the graph could not be opened (GraphMemory.problem says why)
                raise HologramError(Problem(f"hologram memory {method}: {exc}")) from None
        finally:
            await _close_layers(memory, chain)
            await memory.aclose()
    finally:
        store.close()


def _open_layers(memory: SessionMemory, data: Path, settings: Settings) -> _Chain:
    """Give `memory` its L3 graph and its scenes as the kernel does (agent/attach.py). Nothing is created by
    looking: the graph opens only if it exists (`GraphMemory` is lazy) or a distillation has events to move;
    scenes only if ``scenes.db`` exists. The provider chain (for ``extractor = "llm"``/``"auto"``) is built
    only if the distillation asks for it."""
    from hologram.memory.graph.service import GraphMemory
    from hologram.memory.scenes.store import SCENES_DB, SceneStore

    chain = _Chain(settings)
    memory.graph = GraphMemory.open(data, settings.memory, memory.cold, chain=chain)
    scenes = data / SCENES_DB
    if settings.memory.scenes.enabled and scenes.exists():
        memory.scenes = SceneStore.open(scenes, settings.memory.scenes)
    return chain


class _Chain:
    """The settings' provider chain, built the first time the extractor asks (offline: no kernel's chain)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.chain: Any = None
        self.built = False

    def __call__(self) -> Any:
        if not self.built:
            from hologram.agent.attach import build_chain

            self.chain, _ = build_chain(self.settings)
            self.built = True
        return self.chain

    async def aclose(self) -> None:
        if self.chain is not None:
            await self.chain.aclose()


async def _close_layers(memory: SessionMemory, chain: _Chain) -> None:
    if memory.graph is not None:
        await memory.graph.aclose()
    if memory.scenes is not None:
        memory.scenes.close()
    await chain.aclose()
