"""The client of the turn API over the control socket: what `hologram ask/chat`, scripts and benchmarks use.

    async with await TurnClient.connect(data_dir, client="script") as client:
        turn = await client.start("what is in my notes about paris?")
        async for event in turn:                  # typed events (hologram.api.turn), this turn's only
            if isinstance(event, api.ContentDelta):
                print(event.text, end="")
        print(turn.ended.stop_reason)

A client that says ``approvals=True`` may answer the ``approval.requested`` events of the sessions it watches
(`TurnClient.approve`); any number of clients may watch one session (`TurnClient.watch`) and all see the same
events. The contract is in `hologram.api.turn`; docs/protocol.md ("The turn API") describes it for clients
in other languages.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from types import TracebackType
from typing import Any

from hologram._version import __version__
from hologram.api import turn as api
from hologram.clients.stream import _END, EventStream, KernelGone, answer_params, start_params
from hologram.kernel.control import connect as connect_control
from hologram.rpc import METHOD_NOT_FOUND, Connection, RpcError

__all__ = ["EventStream", "KernelGone", "TurnClient"]


class TurnClient:
    def __init__(self, connection: Connection, *, client: str, approvals: bool, version: str = __version__) -> None:
        self.connection = connection
        self.client = client
        self.version = version  # the client's own version, said at `initialize` (an editor's, for ACP)
        self.approvals = approvals
        self._streams: set[EventStream] = set()
        self.malformed: list[str] = []  # events that did not validate (a kernel bug): kept, not raised
        self.protocol_version = 1  # until `initialize` says otherwise
        self.server: dict[str, Any] = {}
        connection.register(api.TURN_EVENT, self._on_event)
        self._serving = asyncio.ensure_future(self._serve())

    @classmethod
    async def connect(
        cls, data_dir: Path, *, client: str = "cli", approvals: bool = False, version: str = __version__
    ) -> TurnClient:
        """Raises `HologramError` (no kernel runs with this data directory, and how to start one). `client` and
        `version` are who this client is (`initialize`): shown as who started a turn or answered an approval;
        the kernel makes `client` the turns' channel."""
        connection = await connect_control(data_dir, name=client)
        self = cls(connection, client=client, approvals=approvals, version=version)
        try:
            await self.initialize()
        except BaseException:
            await self.aclose()
            raise
        return self

    async def initialize(self) -> int:
        """Say who this client is, once (turn API version 2); a kernel from before version 2 does not know the
        method, and is spoken to as version 1 (each call says the client and whether it approves)."""
        params = {
            "protocol_version": api.TURN_API_VERSION,
            "client": {"name": self.client, "version": self.version},
            "capabilities": {"approvals": self.approvals},
        }
        try:
            answer = await self.connection.request(api.INITIALIZE, params)
        except RpcError as exc:
            if exc.code != METHOD_NOT_FOUND:
                raise
            return self.protocol_version
        self.protocol_version = int(answer.get("protocol_version") or 1)
        self.server = dict(answer.get("server") or {})
        return self.protocol_version

    async def _serve(self) -> None:
        try:
            await self.connection.serve()
        finally:
            for stream in list(self._streams):
                stream._queue.put_nowait(_END)

    async def _on_event(self, params: Any) -> None:
        try:
            event = api.parse_event(params)
        except ValueError as exc:
            self.malformed.append(str(exc))
            return
        for stream in list(self._streams):
            stream._offer(event)

    # -- turns ----------------------------------------------------------------------------------------

    async def start(
        self,
        text: str | None,
        *,
        session: str | None = None,
        on_disconnect: api.OnDisconnect | None = None,
        scene: str | None = None,
        partner: str | None = None,
        parts: list[dict[str, Any]] | None = None,
    ) -> EventStream:
        """Start a turn (queued behind a running one in the same session); its events come on the stream.
        `on_disconnect`: None is the kernel's default (``cancel``: the turn stops when this connection goes).
        `scene`: a declared scene key (``chan:qq/peer:group_1``, docs/scenes.md); `partner`: who the turn is
        with. The kernel rejects a malformed key with an RPC error naming the field and the grammar. The same
        keyword params as `HttpTurnClient.start` (tests/remote/test_client_parity.py holds them equal).
        `parts`: typed input parts (text, images, files: `hologram.clients.parts`) sent instead of `text`."""
        # A plain dict of StartParams' fields (hologram.api.params): the kernel validates it, and its error
        # names the field; no pydantic in a process that runs one turn.
        params = start_params(text, self.client, self.approvals, session, on_disconnect, scene, partner, parts)
        # The stream exists before the request is sent: the first events may arrive before its answer.
        pending = EventStream(self, None, None)
        self._streams.add(pending)
        try:
            answer = await self.connection.request(api.TURN_START, params)
        finally:
            self._streams.discard(pending)
        stream = EventStream(self, answer["session"], answer["turn"])
        self._streams.add(stream)
        while not pending._queue.empty():  # events that came before the answer, in order
            stream._offer(pending._queue.get_nowait())
        return stream

    async def watch(self, session: str, *, after: int | None = None) -> EventStream:
        """Every event of ``session`` from now on (``after``: also the running turn's since that ``seq``)."""
        stream = EventStream(self, session, None)
        self._streams.add(stream)
        params: dict[str, Any] = {"session": session, "client": self.client, "approvals": self.approvals}
        if after is not None:
            params["after"] = after
        await self.connection.request(api.TURN_WATCH, params)
        return stream

    async def unwatch(self, session: str) -> None:
        await self.connection.request(api.TURN_UNWATCH, {"session": session})

    async def read_turn(self, session: str, turn: str) -> dict[str, Any]:
        """A turn's status (queued, running, ended) and items, also of a turn an earlier kernel process ran."""
        answer: dict[str, Any] = await self.connection.request(api.TURN_READ, {"session": session, "turn": turn})
        return answer

    async def cancel(self, session: str, turn: str | None = None) -> bool:
        """Cancel the session's running turn, or `turn` (running, or queued behind it)."""
        params: dict[str, Any] = {"session": session}
        if turn is not None:
            params["turn"] = turn
        answer = await self.connection.request(api.TURN_CANCEL, params)
        return bool(answer.get("cancelled"))

    async def approve(self, request: api.ApprovalRequested, decision: bool | str, reason: str = "") -> bool:
        """Answer an approval request with a decision (``approve_once`` … ``cancel``; a bool is version 1's
        ``approved``); False when it was already decided (another client, the timeout)."""
        params = {"session": request.session, "approval": request.approval, **answer_params(decision, reason)}
        answer = await self.connection.request(api.TURN_APPROVE, params)
        return bool(answer.get("accepted"))

    # -- sessions -------------------------------------------------------------------------------------

    async def create_session(self, title: str = "") -> str:
        """A new, empty session's id (``sessions/create``): for a client that must name the session before its
        first turn (ACP's ``session/new``); `start` without a session makes one too."""
        answer = await self.connection.request(api.SESSIONS_CREATE, {"title": title} if title else {})
        return str(answer["session"])

    async def append(self, session: str, text: str, *, partner: str | None = None) -> str:
        """Store ``text`` in ``session`` as a user's message without running a turn (``sessions/append``): the
        model is not asked; a later turn there sees it. The session is created when missing. Answers
        ``stored``, or ``queued`` behind the turn running there."""
        params: dict[str, Any] = {"session": session, "text": text, **({"partner": partner} if partner else {})}
        if self.protocol_version < 2:
            params["client"] = self.client
        answer = await self.connection.request(api.SESSIONS_APPEND, params)
        return str(answer["status"])

    async def mcp_servers(self, session: str, servers: list[dict[str, Any]]) -> dict[str, Any]:
        """Connect these MCP servers for ``session`` alone (``sessions/mcp``; each ``{name, command, args?, env?,
        cwd?}`` or ``{name, url, headers?}``), replacing the ones this connection connected there before; they go
        when this connection closes. Answers once each is up or failed: ``{session, servers: [{name, state,
        tools, error}]}``."""
        answer: dict[str, Any] = await self.connection.request(
            api.SESSIONS_MCP, {"session": session, "servers": servers}
        )
        return answer

    async def sessions(self) -> list[dict[str, Any]]:
        answer = await self.connection.request(api.SESSIONS_LIST, {})
        return list(answer["sessions"])

    async def sessions_page(self, *, limit: int | None = None, cursor: str | None = None) -> dict[str, Any]:
        """One page of ``sessions/list``, newest first: ``{sessions, next_cursor}`` (pass ``next_cursor`` as
        ``cursor`` for the next page; None after the last)."""
        params = {k: v for k, v in (("limit", limit), ("cursor", cursor)) if v is not None}
        answer: dict[str, Any] = await self.connection.request(api.SESSIONS_LIST, params or {"limit": 50})
        return answer

    async def read(self, session: str, *, limit: int | None = None, before: int | None = None) -> dict[str, Any]:
        """The session as stored: ``events`` and the ``messages`` a model would be sent. With ``limit`` or
        ``before``, one page: the newest ``limit`` events below ``before``, and ``next_before`` for the older."""
        params: dict[str, Any] = {"session": session}
        params.update({k: v for k, v in (("limit", limit), ("before", before)) if v is not None})
        answer: dict[str, Any] = await self.connection.request(api.SESSIONS_READ, params)
        return answer

    async def media_read(self, session: str, media_id: str) -> tuple[dict[str, Any], bytes]:
        """An image a tool result of ``session`` carried (``tool.result``'s ``images[].id``): its reference
        ``{id, mime, bytes, width?, height?}`` and its bytes. Raises `RpcError` (code 3) for an id the session
        does not hold."""
        import base64

        answer: dict[str, Any] = await self.connection.request(api.MEDIA_READ, {"session": session, "id": media_id})
        data = base64.b64decode(str(answer.pop("data", "")))
        return answer, data

    async def rename(self, session: str, title: str) -> None:
        await self.connection.request(api.SESSIONS_RENAME, {"session": session, "title": title})

    async def delete(self, session: str) -> bool:
        answer = await self.connection.request(api.SESSIONS_DELETE, {"session": session})
        return bool(answer.get("deleted"))

    # -- tools outside a turn ---------------------------------------------------------------------------

    async def tools_list(self) -> list[dict[str, Any]]:
        """The plugins' tools: ``{name, description, parameters, plugin, needs_approval}`` each."""
        answer = await self.connection.request(api.TOOLS_LIST, {})
        return list(answer["tools"])

    async def tools_call(self, tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        """Call a plugin's tool outside any turn (``tools/call``): ``{content, is_error, status}``; a call your
        approval policy would ask about is denied (nobody to ask)."""
        answer: dict[str, Any] = await self.connection.request(
            api.TOOLS_CALL, {"tool": tool, "arguments": arguments or {}}
        )
        return answer

    # -- life -----------------------------------------------------------------------------------------

    def abandon(self) -> None:
        """Stop waiting (a second Ctrl-C): the connection closes; the kernel cancels a turn nobody watches."""
        self.connection.close()

    async def aclose(self) -> None:
        self.connection.close()
        self._serving.cancel()
        with contextlib.suppress(BaseException):
            await self._serving

    async def __aenter__(self) -> TurnClient:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
