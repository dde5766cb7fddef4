"""The turn API's methods, served to control-socket clients and to plugins (``kernel.turns``) alike.

Both transports call the same `TurnService` methods with the same params (`hologram.api.turn`); only who the
caller is differs: a control client is its connection, a plugin is ``("plugin", name)`` (and, under it, the
``principal`` it names: a browser tab, a chat user). Either way the events of the sessions it watches come over
its own connection as ``turn/event`` notifications, replayed from the hub on reconnect (``after``) — never on the
shared ring, which every plugin can read. A plugin whose manifest requires ``kernel.observe`` may ask for every
session's events (a logger, a relay); it cannot answer approvals by that.

A control connection that sends ``initialize`` (version 2) says once who it is and whether a person behind it
answers approvals; one that does not is served version 1 (each call says it), kept for one release.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import uuid
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hologram._version import __version__
from hologram.agent.direct_tools import DirectTools
from hologram.agent.hub import NotAllowed, TurnHub
from hologram.agent.identity import TurnIdentity
from hologram.agent.paging import BadCursor, list_page, read_page
from hologram.agent.scope import TurnScope
from hologram.agent.session_mcp import SessionMcp
from hologram.agent.turn import CANCELLED, TurnError
from hologram.agent.watcher import Watcher
from hologram.api import params as params_api
from hologram.api import turn as api
from hologram.base import _fastjson, _heap
from hologram.base.errors import HologramError
from hologram.config.settings import DeliverySettings
from hologram.kernel import preload as _preload
from hologram.rpc import Connection, ConnectionClosed, RpcError
from hologram.rpc.errors import (
    INVALID_PARAMS,
    NO_SUCH_SESSION,
    NOT_ALLOWED,
    NOT_READY,
    SESSION_BUSY,
    SESSION_FAILED,
)
from hologram.sessions import messages_from_events
from hologram.sessions.title import title_from_input

if TYPE_CHECKING:
    from hologram.agent.turn import Agent

log = logging.getLogger("hologram.agent")
Deliver = Callable[[str, bytes], Awaitable[None]]  # (plugin, an event's wire JSON) → sent on its connection
DECISIONS_SERVED = params_api.DECISIONS


@dataclass(frozen=True, slots=True)
class Client:
    """What a control connection said at ``initialize``."""

    name: str
    version: str
    protocol_version: int
    approvals: bool


class TurnService:
    def __init__(
        self,
        agent: Agent,
        *,
        seq_file: Path | None = None,
        deliver: Deliver | None = None,
        delivery: DeliverySettings | None = None,
    ) -> None:
        self.agent = agent
        self.hub = TurnHub(self._run_turn, seq_file=seq_file, delivery=delivery)
        self.deliver = deliver
        self.clients: dict[Hashable, Client] = {}  # control connections that sent `initialize`
        self.closers: list[Callable[[], Awaitable[None]]] = []  # run by aclose, after the turns stopped
        self._notices: set[asyncio.Future[None]] = set()  # drop notices on their way to plugins
        self.direct = DirectTools(agent)  # tools/list, tools/call: a tool called outside a turn (direct_tools.py)
        self.session_mcp: SessionMcp | None = None  # sessions/mcp's way to the mcp plugin (set when attached)

    async def _run_turn(
        self,
        text: str,
        session: str,
        turn: str,
        emit: Callable[[Any], None],
        /,
        *,
        scene: str | None = None,
        partner: str | None = None,
        parts: list[dict[str, Any]] | None = None,
        identity: TurnIdentity | None = None,
        scope: TurnScope | None = None,
        at: float | None = None,
    ) -> Any:
        try:
            return await self.agent.run_turn(
                text, session_id=session, turn_id=turn, on_event=emit, scene=scene, partner=partner, parts=parts,
                identity=identity, scope=scope, at=at,
            )  # fmt: skip
        except HologramError as exc:  # a damaged sessions.db page under this session: the file and the fix
            raise TurnError(one_line(exc), kind="storage") from None
        finally:  # `hologram up` held its start-up loads for the first answer (hologram/kernel/preload.py): it is out
            _preload.release()
            _heap.idle_trim.activity()  # the turn's freed heap goes back to the OS once the kernel is idle

    # -- who is calling ---------------------------------------------------------------------------------

    def control_watcher(self, connection: Connection, client: str) -> Watcher:
        async def send(event: bytes) -> None:
            try:
                await connection.notify_encoded(api.TURN_EVENT, event)
            except ConnectionClosed:
                self.hub.disconnect(connection)

        def dropped(watcher: Watcher) -> None:
            # a client that stopped reading is disconnected: it sees its connection end, and may connect again
            # and watch with `after` = the last seq it has
            connection.close()

        return self.hub.watcher(connection, send, client, dropped)

    def plugin_watcher(self, plugin: str) -> Watcher:
        deliver = self.deliver

        async def send(event: bytes) -> None:
            if deliver is not None:
                await deliver(plugin, event)

        def dropped(watcher: Watcher) -> None:
            # the plugin watches nothing any more; the last thing it gets says so (docs/protocol.md §9), after what
            # was written before, so it can watch its sessions again with `after` (the http plugin's streams do)
            if deliver is None:
                return
            notice = api.wire(api.WatchDropped(session="", turn="", seq=watcher.sent_seq))
            task: asyncio.Future[None] = asyncio.ensure_future(deliver(plugin, _fastjson.dumps_bytes(notice)))
            self._notices.add(task)
            task.add_done_callback(self._notices.discard)

        return self.hub.watcher(("plugin", plugin), send, plugin, dropped)

    def connection_gone(self, connection: Hashable) -> None:
        self.clients.pop(connection, None)
        self.hub.disconnect(connection)
        if self.session_mcp is not None:  # the MCP servers it connected for its sessions go with it
            self.session_mcp.release(connection)

    def _as_initialized(self, key: Hashable | None, method: str, params: Any) -> Any:
        """A v2 connection's defaults from its ``initialize``: its name as ``client``, its capability as
        ``approvals``; asking to approve without having declared it is refused."""
        info = self.clients.get(key) if key is not None else None
        if info is None or not isinstance(params, dict):
            return params
        if params.get("approvals") is True and not info.approvals:
            raise RpcError(
                INVALID_PARAMS,
                f"{method}: approvals: this connection did not declare capabilities.approvals at initialize; "
                'initialize with {"capabilities": {"approvals": true}} if a person answers',
            )
        return {"client": info.name, "approvals": info.approvals, **params}

    # -- initialize ------------------------------------------------------------------------------------

    async def initialize(self, key: Hashable | None, params: Any) -> dict[str, Any]:
        p = _parse(params_api.InitializeParams, api.INITIALIZE, params)
        version = min(p.protocol_version, api.TURN_API_VERSION)
        if key is not None:
            self.clients[key] = Client(p.client.name, p.client.version, version, p.capabilities.approvals)
        return {
            "protocol_version": version,
            "server": {"name": "hologram", "version": __version__},
            "capabilities": {"items": True, "principals": True, "decisions": list(DECISIONS_SERVED)},
        }

    # -- the methods (each takes the caller's watcher factory and the params) ------------------------------

    async def start(
        self,
        watcher: Callable[[str], Watcher] | None,
        params: Any,
        *,
        channel: str | None = None,
        client_version: str = "",
    ) -> dict[str, Any]:
        """``channel``: who the transport says is calling (the plugin, the initialized connection's name), never
        a param; None only for a version-1 control client, whose ``client`` is all the kernel knows."""
        p = _parse(params_api.StartParams, api.TURN_START, params)
        if self.hub.stopping:
            raise RpcError(NOT_READY, "the kernel is stopping; start the turn again once it is back")
        too_long = input_too_long(p, self.agent.settings.max_input_chars)
        if too_long is not None:
            raise RpcError(INVALID_PARAMS, too_long)
        if p.parent is not None and not self.hub.turn_running(p.parent):
            raise RpcError(INVALID_PARAMS, f"parent: no turn is running in session {p.parent!r}")
        identity = TurnIdentity(channel or p.client, p.client, client_version, p.partner)
        store = self.agent.store
        try:
            sid = p.session
            if sid is None or not store.exists(sid):  # a new session: titled by its first input, for every client
                sid = store.create_session(identity.channel, sid, title=title_from_input(p.text, p.stored_parts()))
        except HologramError as exc:
            raise RpcError(SESSION_FAILED, one_line(exc)) from None
        return self.hub.start(p, sid, watcher(p.client) if (watcher is not None and p.watch) else None, identity)

    async def watch(self, watcher: Callable[[str], Watcher], params: Any) -> dict[str, Any]:
        p = _parse(params_api.WatchParams, api.TURN_WATCH, params)
        return self.hub.watch(p.session, watcher(p.client), approvals=p.approvals, after=p.after, principal=p.principal)

    async def unwatch(self, key: Hashable, params: Any) -> dict[str, Any]:
        p = _parse(params_api.UnwatchParams, api.TURN_UNWATCH, params)
        self.hub.unwatch(p.session, key, p.principal)
        return {"watching": False}

    async def read_turn(self, params: Any) -> dict[str, Any]:
        """A turn's status and items: from the hub while it is kept there (running, queued, the last ones),
        else rebuilt from the session's store (a turn of an earlier kernel process)."""
        p = _parse(params_api.TurnReadParams, api.TURN_READ, params)
        found = self.hub.read_turn(p.session, p.turn)
        if found is not None:
            return found
        try:
            if not self.agent.store.exists(p.session):
                raise RpcError(NO_SUCH_SESSION, f"there is no session {p.session!r}", {"session": p.session})
            events = [e for e in self.agent.store.events(p.session) if e.turn == p.turn]
        except HologramError as exc:
            raise RpcError(SESSION_FAILED, one_line(exc), {"session": p.session}) from None
        if not events:
            raise RpcError(NO_SUCH_SESSION, f"session {p.session} has no turn {p.turn!r}", {"turn": p.turn})
        stop_reason, output = stored_end(events)
        items = stored_items(p.turn, events)
        return {"session": p.session, "turn": p.turn, "status": "ended", "items": items,
                "stop_reason": stop_reason, "output": output}  # fmt: skip

    async def cancel(self, params: Any) -> dict[str, Any]:
        p = _parse(params_api.CancelParams, api.TURN_CANCEL, params)
        return {"cancelled": self.hub.cancel(p.session, p.turn)}

    async def approve(self, by: str, key: Hashable, params: Any) -> dict[str, Any]:
        """``key``: the caller's watcher key (its connection, or ``("plugin", name)``): only a watcher of the
        session that can approve may answer."""
        p = _parse(params_api.ApproveParams, api.TURN_APPROVE, params)
        try:
            return {"accepted": self.hub.answer(p, by, key)}
        except NotAllowed as exc:
            raise RpcError(NOT_ALLOWED, str(exc), {"session": p.session, "approval": p.approval}) from None

    async def create_session(self, channel: str, params: Any) -> dict[str, Any]:
        """An empty session now, its ``channel`` the caller's (as a turn's: the plugin, or the initialized
        connection's name): ACP's ``session/new`` must answer with an id before any prompt, and a session the
        kernel made is one ``sessions/list`` shows and ``sessions/read`` reads, with no id kept by the client.
        With ``session``, that id (a chat channel's key for a group): made once, then left as it is."""
        p = _parse(params_api.CreateParams, api.SESSIONS_CREATE, params)
        store = self.agent.store
        try:
            if p.session is not None and store.exists(p.session):
                return {"session": p.session, "title": store.title(p.session), "created": False}
            sid = store.create_session(channel, p.session)
            if p.title:
                store.rename_session(sid, p.title)
        except HologramError as exc:
            raise RpcError(SESSION_FAILED, one_line(exc)) from None
        return {"session": sid, "title": p.title, "channel": channel, "created": True}

    async def append(self, channel: str, params: Any, *, client_version: str = "") -> dict[str, Any]:
        """``sessions/append``: a message stored as a turn's input is (who said it included), without a turn: no
        model call, no turn events. ``channel`` is the caller's, set by the transport as for ``turn/start``."""
        p = _parse(params_api.AppendParams, api.SESSIONS_APPEND, params)
        too_long = input_too_long(p, self.agent.settings.max_input_chars)
        if too_long is not None:
            raise RpcError(INVALID_PARAMS, too_long)
        identity = TurnIdentity(channel, p.client, client_version, p.partner)
        store = self.agent.store
        data: dict[str, Any] = {"text": p.prompt}
        parts = p.stored_parts()
        if parts is not None:
            data["parts"] = parts
        data.update(identity.stored())
        data["appended"] = True  # no turn answered it (sessions/read tells it from a turn's input by this)
        try:
            if not store.exists(p.session):
                store.create_session(channel, p.session, title=title_from_input(p.text, parts))
        except HologramError as exc:
            raise RpcError(SESSION_FAILED, one_line(exc)) from None
        turn = uuid.uuid4().hex[:12]

        def write() -> None:
            store.append(
                p.session, "input", data, turn=turn, channel=identity.channel, ts=None if p.at is None else float(p.at)
            )

        try:
            status = self.hub.append(p.session, write)
        except HologramError as exc:
            raise RpcError(SESSION_FAILED, one_line(exc), {"session": p.session}) from None
        return {"session": p.session, "status": status}

    async def list_sessions(self, params: Any) -> dict[str, Any]:
        p = _parse(params_api.ListParams, api.SESSIONS_LIST, params)
        try:
            return list_page(self.agent.store, p)
        except BadCursor:
            raise RpcError(
                INVALID_PARAMS, f"{api.SESSIONS_LIST}: cursor: not one this kernel gave; pass the answer's next_cursor"
            ) from None
        except HologramError as exc:
            raise RpcError(SESSION_FAILED, one_line(exc)) from None

    async def read_session(self, params: Any) -> dict[str, Any]:
        p = _parse(params_api.SessionReadParams, api.SESSIONS_READ, params)
        store = self.agent.store
        try:
            if not store.exists(p.session):
                raise RpcError(NO_SUCH_SESSION, f"there is no session {p.session!r}", {"session": p.session})
            if not self.hub.running(p.session):  # no turn of ours is writing it: close what a crash left open
                store.repair(p.session)
            events, next_before = read_page(store, p)
            title = store.title(p.session)
        except HologramError as exc:
            raise RpcError(SESSION_FAILED, one_line(exc), {"session": p.session}) from None
        return {
            "session": p.session,
            "title": title,
            "events": [
                {
                    "seq": e.seq,
                    "kind": e.kind,
                    "ts": e.ts,
                    "turn": e.turn,
                    "channel": e.channel,
                    "call_id": e.call_id,
                    "data": e.data,
                }
                for e in events
            ],
            "messages": [m.to_dict() for m in messages_from_events(events)],
            "next_before": next_before,  # a paging read: the `before` of the next (older) page; None: no more
        }

    async def read_media(self, params: Any) -> dict[str, Any]:
        """``media/read``: the bytes of an image a tool result of the session carried (base64, one control line:
        ``[media] max_image_bytes`` is at most 10 MiB). Whoever may read the session may read its images, and
        only through it: an id another session holds answers as unknown (sessions/media.py)."""
        p = _parse(params_api.MediaReadParams, api.MEDIA_READ, params)
        media = self.agent.media
        found = media.read(p.session, p.id) if media is not None else None
        if found is None:
            raise RpcError(
                NO_SUCH_SESSION,
                f"session {p.session!r} holds no image {p.id[:12]}… (deleted, pruned by [media] max_bytes, or another "
                "session's)",
                {"session": p.session, "id": p.id},
            )
        ref, data = found
        return {**ref, "data": base64.b64encode(data).decode("ascii")}

    async def rename_session(self, params: Any) -> dict[str, Any]:
        p = _parse(params_api.RenameParams, api.SESSIONS_RENAME, params)
        try:
            if not self.agent.store.rename_session(p.session, p.title):
                raise RpcError(NO_SUCH_SESSION, f"there is no session {p.session!r}", {"session": p.session})
        except HologramError as exc:
            raise RpcError(SESSION_FAILED, one_line(exc), {"session": p.session}) from None
        return {"session": p.session, "title": p.title}

    async def delete_session(self, params: Any) -> dict[str, Any]:
        p = _parse(params_api.SessionParams, api.SESSIONS_DELETE, params)
        if self.hub.running(p.session):
            raise RpcError(
                SESSION_BUSY, f"session {p.session} has a turn running; cancel it first", {"session": p.session}
            )
        try:
            deleted = self.agent.store.delete_session(p.session)
        except HologramError as exc:
            raise RpcError(SESSION_FAILED, one_line(exc), {"session": p.session}) from None
        if deleted:
            self.hub.forget(p.session)
        if deleted and self.agent.media is not None:  # its images, unless another session holds them too
            self.agent.media.forget_session(p.session)
        if deleted and self.agent.memory is not None:
            await self.agent.memory.delete(p.session)
        return {"deleted": deleted}

    async def session_servers(self, caller: Hashable, params: Any) -> dict[str, Any]:
        """``sessions/mcp``: MCP servers connected for one session, owned by ``caller`` (agent/session_mcp.py)."""
        p = _parse(params_api.McpParams, api.SESSIONS_MCP, params)
        if self.session_mcp is None:
            raise RpcError(NOT_READY, "sessions/mcp: this kernel connects no MCP servers for sessions")
        try:
            if not self.agent.store.exists(p.session):
                raise RpcError(NO_SUCH_SESSION, f"there is no session {p.session!r}", {"session": p.session})
        except HologramError as exc:
            raise RpcError(SESSION_FAILED, one_line(exc), {"session": p.session}) from None
        servers = [s.model_dump(exclude_none=True) for s in p.servers]
        answer = await self.session_mcp.connect(caller, p.session, servers)
        return answer if isinstance(answer, dict) else {"session": p.session, "servers": []}

    # -- the two transports ---------------------------------------------------------------------------------

    def control_methods(self, calling: Callable[[], Connection | None]) -> dict[str, Callable[[Any], Awaitable[Any]]]:
        """The methods of the control socket. ``calling()`` is the connection of the request being handled."""

        async def initialize(params: Any) -> Any:
            return await self.initialize(calling(), params)

        def watcher_of_caller(client: str) -> Watcher:
            connection = calling()
            if connection is None:
                raise RpcError(INVALID_PARAMS, "this method needs a connection to send events on")
            return self.control_watcher(connection, client)

        def client_name(params: Any) -> str:
            name = params.get("client") if isinstance(params, dict) else None
            return f"{name or 'client'}"

        async def start(params: Any) -> Any:
            connection = calling()
            info = self.clients.get(connection) if connection is not None else None
            params = self._as_initialized(connection, api.TURN_START, params)
            watcher = watcher_of_caller if connection is not None else None
            if info is None:  # version 1: the call's client is all the kernel knows of who calls
                return await self.start(watcher, params)
            return await self.start(watcher, params, channel=info.name, client_version=info.version)

        async def watch(params: Any) -> Any:
            return await self.watch(watcher_of_caller, self._as_initialized(calling(), api.TURN_WATCH, params))

        async def unwatch(params: Any) -> Any:
            return await self.unwatch(calling(), params)

        async def approve(params: Any) -> Any:
            connection = calling()
            watcher = self.hub.watchers.get(connection) if connection is not None else None
            by = watcher.client if watcher is not None else client_name(params)
            return await self.approve(by, connection, params)

        async def create(params: Any) -> Any:
            connection = calling()
            info = self.clients.get(connection) if connection is not None else None
            return await self.create_session(info.name if info is not None else "client", params)

        async def append(params: Any) -> Any:
            connection = calling()
            info = self.clients.get(connection) if connection is not None else None
            if info is None:  # version 1: the call's client is all the kernel knows of who calls
                return await self.append(client_name(params), params)
            params = self._as_initialized(connection, api.SESSIONS_APPEND, params)
            if isinstance(params, dict):
                params.pop("approvals", None)
            return await self.append(info.name, params, client_version=info.version)

        async def tools_call(params: Any) -> Any:
            connection = calling()
            info = self.clients.get(connection) if connection is not None else None
            return await self.direct.call(params, channel=info.name if info is not None else client_name(params))

        async def tools_list(params: Any) -> Any:
            connection = calling()
            info = self.clients.get(connection) if connection is not None else None
            return await self.direct.list(params, channel=info.name if info is not None else "")

        async def session_servers(params: Any) -> Any:
            connection = calling()
            if connection is None:
                raise RpcError(INVALID_PARAMS, "sessions/mcp needs a connection: its servers live as long as it")
            return await self.session_servers(connection, params)

        return {
            api.INITIALIZE: initialize,
            api.TURN_START: start,
            api.TURN_WATCH: watch,
            api.TURN_UNWATCH: unwatch,
            api.TURN_READ: self.read_turn,
            api.TURN_CANCEL: self.cancel,
            api.TURN_APPROVE: approve,
            api.SESSIONS_CREATE: create,
            api.SESSIONS_APPEND: append,
            api.SESSIONS_LIST: self.list_sessions,
            api.SESSIONS_READ: self.read_session,
            api.SESSIONS_RENAME: self.rename_session,
            api.SESSIONS_DELETE: self.delete_session,
            api.MEDIA_READ: self.read_media,
            api.TOOLS_LIST: tools_list,
            api.TOOLS_CALL: tools_call,
            api.SESSIONS_MCP: session_servers,
        }

    def facility_methods(self) -> dict[str, Callable[..., Awaitable[Any]]]:
        """``kernel.turns`` for plugins: the same methods, keyword params, the plugin as the caller."""

        def bind(method: Callable[[Any], Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
            async def call(caller: str, **params: Any) -> Any:
                return await method(params)

            return call

        async def start(caller: str, **params: Any) -> Any:
            # the channel is the calling plugin, whatever `client` it passes (`caller` is set by the kernel)
            return await self.start(
                lambda client: self.plugin_watcher(caller), {"client": caller, **params}, channel=caller
            )

        async def watch(caller: str, **params: Any) -> Any:
            return await self.watch(lambda client: self.plugin_watcher(caller), {"client": caller, **params})

        async def unwatch(caller: str, **params: Any) -> Any:
            return await self.unwatch(("plugin", caller), params)

        async def approve(caller: str, **params: Any) -> Any:
            return await self.approve(caller, ("plugin", caller), params)

        async def create(caller: str, **params: Any) -> Any:
            return await self.create_session(caller, params)

        async def append(caller: str, **params: Any) -> Any:
            return await self.append(caller, {"client": caller, **params})

        async def tools_call(caller: str, **params: Any) -> Any:
            return await self.direct.call(params, channel=caller)

        async def tools_list(caller: str, **params: Any) -> Any:
            return await self.direct.list(params, channel=caller)

        async def session_servers(caller: str, **params: Any) -> Any:
            return await self.session_servers(("plugin", caller), params)

        names = {
            "start": start,
            "watch": watch,
            "unwatch": unwatch,
            "cancel": bind(self.cancel),
            "approve": approve,
            "read": bind(self.read_turn),
            "sessions_create": create,
            "sessions_append": append,
            "sessions_list": bind(self.list_sessions),
            "sessions_read": bind(self.read_session),
            "sessions_rename": bind(self.rename_session),
            "sessions_delete": bind(self.delete_session),
            "media_read": bind(self.read_media),
            "tools_list": tools_list,
            "tools_call": tools_call,
            "sessions_mcp": session_servers,
        }
        return names

    def observe_methods(self) -> dict[str, Callable[..., Awaitable[Any]]]:
        """``kernel.observe`` for plugins whose manifest requires it: every session's events, from now on."""

        async def subscribe(caller: str) -> dict[str, Any]:
            self.hub.observe(self.plugin_watcher(caller))
            return {"observing": True, "seq": self.hub.last_seq}

        return {"subscribe": subscribe}

    def plugin_gone(self, plugin: str) -> None:
        """A plugin stopped or crashed: it watches nothing any more, and the MCP servers it connected go."""
        self.hub.disconnect(("plugin", plugin))
        if self.session_mcp is not None:
            self.session_mcp.release(("plugin", plugin))

    async def aclose(self) -> None:
        """Stop the turns still running (their sessions are closed valid), then memory, providers, store."""
        await self.hub.aclose()
        if self.session_mcp is not None:
            await self.session_mcp.aclose()
        for close in self.closers:
            await close()
        agent = self.agent
        if agent.memory is not None:
            await agent.memory.aclose()
        aclose = getattr(agent.llm, "aclose", None)
        if aclose is not None:
            await aclose()
        agent.store.close()


def stored_items(turn: str, events: list[Any]) -> list[dict[str, Any]]:
    """A finished turn's items as the store has them (what `TurnItems` announced while it ran, in short)."""
    items: list[dict[str, Any]] = []
    n = 0

    def add(item: dict[str, Any]) -> None:
        nonlocal n
        n += 1
        items.append({"id": f"{turn}.{n}", **item, "status": item.get("status", "completed")})

    for event in events:
        data = _data_of(event)
        if event.kind == "input":  # with the input parts (files, images) of a turn started with them
            parts = {"parts": data["parts"]} if data.get("parts") else {}
            add({"type": "user_message", "text": data.get("text", ""), **parts})
        elif event.kind == "response":
            if data.get("reasoning"):
                add({"type": "reasoning", "text": data["reasoning"]})
            if data.get("content"):
                status = "cancelled" if data.get("cancelled") else "completed"
                add({"type": "agent_message", "text": data["content"], "status": status})
        elif event.kind == "tool_result":
            item = {"type": "tool_call", "call_id": event.call_id, "tool": data.get("name")}
            item["status"] = data.get("status")
            if data.get("images"):
                item["images"] = data["images"]
            add(item)
    return items


def _data_of(event: Any) -> dict[str, Any]:
    """An event's data, read once (a stored event decodes it on each access: hologram/sessions/event.py)."""
    data = event.data
    return data if isinstance(data, dict) else {}


def stored_end(events: list[Any]) -> tuple[str, str]:
    """How a finished turn ended, as its stored events say (``turn/read`` of a turn the kernel no longer keeps,
    e.g. after a restart): (``stop_reason``, ``output``). A turn that ended with an answer (or a hook's
    response, every call denied, the step limit) stored its ``output`` with ``ended_by``; a cancelled one, the
    text streamed so far marked ``cancelled``, or its open calls closed with the cancel marker; anything else —
    the provider failed, or the kernel died mid-turn — is ``error``."""
    for event in reversed(events):
        data = _data_of(event)
        if event.kind == "output":
            return str(data.get("ended_by") or "answer"), str(data.get("text") or "")
        if event.kind == "response" and data.get("cancelled"):
            return "cancelled", str(data.get("content") or "")
    for event in events:
        data = _data_of(event)
        if event.kind == "tool_result" and data.get("content") == CANCELLED:
            return "cancelled", ""
    return "error", ""


def input_too_long(p: Any, limit: int) -> str | None:
    """Why a turn's input is refused for its length, or None. Checked before anything is stored or embedded:
    10 MB of text took the kernel to 23 GB in the memory stack until the OOM killer ended it."""
    size = len(p.prompt)  # the text, or what the model reads of the parts (a text file's content included)
    if size <= limit:
        return None
    field = "text" if p.input is None else "input (its text and text files)"
    return (
        f"{field}: {size:,} characters, over the limit of {limit:,} ([agent] max_input_chars in settings.toml); "
        "send less, or raise the limit"
    )


def _parse(model: Any, method: str, params: Any) -> Any:
    try:
        return model.parse(method, params)
    except ValueError as exc:
        raise RpcError(INVALID_PARAMS, str(exc)) from None


def one_line(exc: HologramError) -> str:
    """A `HologramError` as the message of an RPC error: each problem's file, message and fix on one line
    (the client prints it as its own error, so the ``error:`` prefix would come twice)."""
    parts = []
    for problem in exc.problems:
        where = f"{problem.file}: " if problem.file else ""
        parts.append(where + problem.message + (f"; {problem.hint}" if problem.hint else ""))
    return "\n".join(parts)
