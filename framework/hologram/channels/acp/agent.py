"""The ACP agent: an editor's requests mapped onto the turn API (docs/channels.md has the tables).

- ``initialize`` {clientInfo} → ``initialize`` {client: its name and version}; the kernel makes that name the
  turns' channel;
- ``session/new`` → ``sessions/create`` (the session exists before its first prompt);
- ``session/load`` → ``sessions/read``, replayed as ``session/update`` notifications;
- ``session/list`` → ``sessions/list`` in pages, newest first;
- ``session/prompt`` → ``turn/start`` with the blocks as input parts; its events as ``session/update``
  (`updates`); ``turn.ended`` → ``stopReason``;
- ``session/cancel`` → ``turn/cancel``; the prompt answers ``stopReason: cancelled``;
- ``approval.requested`` → ``session/request_permission``; the option chosen → ``turn/approve``'s decision.

What it keeps is the connection's: the editor's name, the sessions this connection created or loaded (with
the ``cwd`` and MCP servers the editor gave them), and for a running prompt whether the editor cancelled it
and its open permission requests. The turns, their items and their history are the kernel's; two editors (or
an editor and the web page) on one session see the same turn.

MCP servers the editor passes in ``session/new`` and ``session/load`` are connected for that session alone
(``sessions/mcp``: the kernel's ``mcp`` plugin connects them, their tools are offered in that session's turns
only, each call asked like any MCP tool's) and closed when this connection ends (`mcp`); after a kernel restart
the next prompt connects them again. A kernel without the ``mcp`` plugin, or a server that fails, costs the
session only those tools: it is said on stderr.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import sys
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from acp import (
    PROTOCOL_VERSION,
    AuthenticateResponse,
    InitializeResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PromptResponse,
    RequestError,
)
from acp.interfaces import Client
from acp.schema import (
    AgentCapabilities,
    AllowedOutcome,
    ClientCapabilities,
    Implementation,
    ListSessionsResponse,
    McpCapabilities,
    PromptCapabilities,
    SessionCapabilities,
    SessionInfo,
    SessionListCapabilities,
    ToolCallUpdate,
)

from hologram import __version__
from hologram.api import turn as api
from hologram.channels.acp.content import PromptBlock, input_of
from hologram.channels.acp.kernel import KernelLink
from hologram.channels.acp.mcp import server_specs
from hologram.channels.acp.updates import (
    DECISIONS,
    STOP_REASONS,
    LiveTurn,
    permission_options,
    replay,
    stored_images,
    with_images,
)
from hologram.clients import TurnClient
from hologram.clients.errors import ConnectionClosed, HologramError, RpcError

NAME_MAX = 64  # the turn API's client name (hologram.api.params.ClientInfo)
READ_PAGE = 500  # events per sessions/read request when loading (hologram.api.params.PAGE_MAX)
NO_SUCH_SESSION = 3  # the turn API's code (docs/protocol.md §2) → ACP's "resource not found"
RESOURCE_NOT_FOUND = -32002  # ACP's code (the kernel's -32002 is NOT_READY: codes are mapped, never passed on)
INTERNAL_ERROR = -32603
LIST_PAGE = 50  # sessions per session/list answer (the turn API's default page)


@dataclass
class Session:
    """A session this connection opened (``session/new``) or loaded, as the editor described it."""

    cwd: str
    mcp_servers: list[Any] = field(default_factory=list)  # connected for it through sessions/mcp (`_connect_mcp`)
    mcp_on: TurnClient | None = None  # the kernel connection they were connected on (a new one: connect again)


@dataclass
class Prompt:
    """A ``session/prompt`` being answered: its turn, whether the editor cancelled it, its open requests."""

    turn: str | None = None
    cancelled: bool = False
    asking: dict[str, asyncio.Task[None]] = field(default_factory=dict)  # approval id → its permission request


def client_name(info: Implementation | None) -> str:
    name = (info.name if info is not None else "").strip() or "acp"
    return name[:NAME_MAX]


def request_error(exc: RpcError | HologramError | ConnectionClosed) -> RequestError:
    """A kernel's refusal, or no kernel, as the JSON-RPC error the editor shows: the kernel's one-line
    message (the field and the fix), not a generic "Internal error"."""
    if isinstance(exc, RpcError):  # JSON-RPC's own codes pass; the kernel's others mean other things in ACP
        standard = -32700 <= exc.code <= -32600
        code = RESOURCE_NOT_FOUND if exc.code == NO_SUCH_SESSION else exc.code if standard else INTERNAL_ERROR
        return RequestError(code, exc.message, exc.data)
    if isinstance(exc, HologramError):
        return RequestError(
            INTERNAL_ERROR, " ".join(p.message + (f" ({p.hint})" if p.hint else "") for p in exc.problems)
        )
    return RequestError(INTERNAL_ERROR, "the kernel went away (was it stopped?); the next request connects again")


class HologramAgent:
    """One editor connection (``acp.run_agent`` calls these methods; `on_connect` gives the editor's side)."""

    def __init__(self, link: KernelLink) -> None:
        self.link = link
        self.editor: Client | None = None
        self.sessions: dict[str, Session] = {}
        self.prompts: dict[str, Prompt] = {}
        self.options = permission_options(os.environ)  # labelled in the user's language

    def on_connect(self, conn: Client) -> None:
        self.editor = conn

    async def _client(self) -> TurnClient:
        try:
            return await self.link.client()
        except HologramError as exc:
            raise request_error(exc) from None

    # -- lifecycle -------------------------------------------------------------------------------------

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        """The editor's name and version become the turn API client's (the kernel is reached on first use:
        an editor's first ``initialize`` is not held up by a kernel starting)."""
        self.link.name = client_name(client_info)
        self.link.version = (client_info.version if client_info is not None else "")[:NAME_MAX]
        capabilities = AgentCapabilities(
            load_session=True,
            prompt_capabilities=PromptCapabilities(image=True, audio=False, embedded_context=True),
            mcp_capabilities=McpCapabilities(http=True, sse=False),  # stdio always; http by the mcp plugin
            session_capabilities=SessionCapabilities(list=SessionListCapabilities()),
        )
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=capabilities,
            agent_info=Implementation(name="hologram", title="Hologram", version=__version__),
            auth_methods=[],
        )

    async def authenticate(self, method_id: str, **kwargs: Any) -> AuthenticateResponse:
        """Nothing to authenticate: the control socket is the user's own (mode 0600)."""
        return AuthenticateResponse()

    # -- sessions ----------------------------------------------------------------------------------------

    async def new_session(
        self, cwd: str, additional_directories: list[str] | None = None, mcp_servers: list[Any] | None = None,
        **kwargs: Any,
    ) -> NewSessionResponse:  # fmt: skip
        client = await self._client()
        try:
            session = await client.create_session()
        except (RpcError, ConnectionClosed) as exc:
            raise request_error(exc) from None
        self.sessions[session] = Session(cwd, list(mcp_servers or []))
        await self._connect_mcp(client, session)
        return NewSessionResponse(session_id=session)

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None,
        additional_directories: list[str] | None = None, **kwargs: Any,
    ) -> LoadSessionResponse:  # fmt: skip
        """The stored history, replayed as updates before the answer (as ACP asks), oldest first."""
        client = await self._client()
        try:
            events = await self._read_all(client, session_id)
        except (RpcError, ConnectionClosed) as exc:
            raise request_error(exc) from None
        for update in replay(events):
            await self._send(session_id, update)
        for call_id, data, refs in stored_images(events):  # the tool calls' images, after their text
            shown = await self._images(client, session_id, refs)
            if shown:
                status, is_error = str(data.get("status") or "ok"), bool(data.get("is_error"))
                text = str(data.get("content") or "")[:2000]
                await self._send(session_id, with_images(call_id, status, is_error, text, shown))
        self.sessions[session_id] = Session(cwd, list(mcp_servers or []))
        await self._connect_mcp(client, session_id)
        return LoadSessionResponse()

    async def _connect_mcp(self, client: TurnClient, session_id: str) -> None:
        """The editor's MCP servers for this session (``sessions/mcp``), before the answer: its first prompt
        sees their tools. A failure is said on stderr (the editor's log), not to the editor: the session works
        without them."""
        session = self.sessions[session_id]
        session.mcp_on = client
        specs = server_specs(session.mcp_servers, session.cwd)
        if not specs:
            return
        try:
            answer = await client.mcp_servers(session_id, specs)
        except (RpcError, ConnectionClosed) as exc:
            print(f"hologram acp: the editor's MCP servers are not connected: {exc}", file=sys.stderr, flush=True)
            return
        for server in answer.get("servers", []):
            state, tools = server.get("state"), server.get("tools") or []
            said = f"{len(tools)} tools" if state == "up" else f"{state}: {server.get('error') or 'no reason given'}"
            print(f"hologram acp: MCP server {server.get('name')} for session {session_id}: {said}", file=sys.stderr,
                  flush=True)  # fmt: skip

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> ListSessionsResponse:
        """The kernel's sessions, newest first, a page at a time (the kernel's cursor passed through). Hologram's
        sessions belong to no directory — one memory across them, any client continues any — so ``cwd`` filters
        nothing: each session is given the directory this connection opened it in, else the one asked about
        (else this process's)."""
        client = await self._client()
        try:
            page = await client.sessions_page(limit=LIST_PAGE, cursor=cursor)
        except (RpcError, ConnectionClosed) as exc:
            raise request_error(exc) from None
        where = cwd or os.getcwd()
        sessions = [
            SessionInfo(
                session_id=s["id"],
                cwd=self.sessions[s["id"]].cwd if s["id"] in self.sessions else where,
                title=s.get("title") or None,
                updated_at=datetime.fromtimestamp(float(s["updated"]), timezone.utc).isoformat(timespec="seconds"),
            )
            for s in page["sessions"]
        ]
        return ListSessionsResponse(sessions=sessions, next_cursor=page.get("next_cursor"))

    @staticmethod
    async def _read_all(client: TurnClient, session: str) -> list[dict[str, Any]]:
        """Every event of a session, read in pages (newest first; each page one bounded control-socket line)."""
        pages: list[list[dict[str, Any]]] = []
        before: int | None = None
        while True:
            page = await client.read(session, limit=READ_PAGE, before=before)
            pages.append(list(page["events"]))
            before = page.get("next_before")
            if before is None:
                return [event for events in reversed(pages) for event in events]

    # -- prompts -----------------------------------------------------------------------------------------

    async def prompt(self, prompt: list[PromptBlock], session_id: str, **kwargs: Any) -> PromptResponse:
        if session_id not in self.sessions:
            raise RequestError(
                RESOURCE_NOT_FOUND,
                f"session {session_id!r} is not open on this connection: session/new or session/load it",
            )
        if session_id in self.prompts:  # ACP's rule; the turn API would queue it, but one prompt owns the session
            raise RequestError(-32600, f"a prompt is already running in session {session_id}: cancel it first")
        text, parts = input_of(prompt)
        client = await self._client()
        if self.sessions[session_id].mcp_on is not client:  # the kernel was restarted: it forgot the servers
            await self._connect_mcp(client, session_id)
        running = self.prompts[session_id] = Prompt()
        live = LiveTurn()
        failure: api.TurnFailed | None = None
        ended: api.TurnEnded | None = None
        try:
            stream = await client.start(text, session=session_id, parts=parts)
            running.turn = stream.turn
            if running.cancelled:  # cancelled before the kernel said which turn it is
                await client.cancel(session_id, stream.turn)
            async for event in stream:
                for update in live.updates(event):
                    await self._send(session_id, update)
                if isinstance(event, api.ToolResult) and event.images:  # a screenshot: shown after its text
                    shown = await self._images(client, session_id, event.images)
                    if shown:
                        update = with_images(event.call_id, event.status, event.is_error, event.content, shown)
                        await self._send(session_id, update)
                if isinstance(event, api.ApprovalRequested):
                    running.asking[event.approval] = asyncio.ensure_future(self._ask(client, event))
                elif isinstance(event, api.ApprovalResolved):  # decided (here, elsewhere, by the timeout)
                    asked = running.asking.pop(event.approval, None)
                    if asked is not None and not asked.done():
                        asked.cancel()
                elif isinstance(event, api.TurnFailed):
                    failure = event
            ended = stream.ended
        except (RpcError, ConnectionClosed) as exc:
            if running.cancelled:
                return PromptResponse(stop_reason="cancelled")
            raise request_error(exc) from None
        finally:
            self.prompts.pop(session_id, None)
            for asked in running.asking.values():
                asked.cancel()
        assert ended is not None
        if running.cancelled or ended.stop_reason == "cancelled":
            return PromptResponse(stop_reason="cancelled")
        if ended.stop_reason == "error":
            message = failure.message if failure is not None else "the turn failed"
            data = {"kind": failure.kind, "status": failure.status} if failure is not None else None
            raise RequestError(INTERNAL_ERROR, message, data)
        return PromptResponse(stop_reason=STOP_REASONS.get(ended.stop_reason, "end_turn"))

    async def _ask(self, client: TurnClient, request: api.ApprovalRequested) -> None:
        """One approval request as ``session/request_permission``; the editor's choice as the decision. An
        editor that answers with an error is a deny: the call must not run unasked. An editor that went away
        answers nothing: closing this connection makes the kernel cancel the turn (as Ctrl-C would)."""
        assert self.editor is not None
        tool_call = ToolCallUpdate(
            tool_call_id=request.call_id, title=request.summary or request.tool, status="pending",
            raw_input=request.arguments,
        )  # fmt: skip
        try:
            answer = await self.editor.request_permission(
                session_id=request.session, tool_call=tool_call, options=self.options
            )
            outcome = answer.outcome
            chosen = outcome.option_id if isinstance(outcome, AllowedOutcome) else "cancel"
        except (RequestError, ValueError) as exc:  # an error, or an answer that is not ACP's (a ValidationError)
            chosen, reason = "deny", f"the editor could not be asked: {exc}"
        except ConnectionError:
            return
        else:
            reason = f"{chosen} ({self.link.name})"
        decision = DECISIONS.get(chosen, "cancel" if chosen == "cancel" else "deny")  # an unknown option: no
        with contextlib.suppress(RpcError, ConnectionClosed):  # already decided, or the kernel went: nothing to do
            # shielded: the resolution this answer causes may reach `prompt` (which then cancels this task) before
            # the kernel's reply to it does
            await asyncio.shield(client.approve(request, decision, reason))

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        """``session/cancel`` (a notification): the running turn is cancelled; its prompt answers
        ``cancelled`` once the kernel closed the turn (its open calls and requests resolved, the session valid)."""
        running = self.prompts.get(session_id)
        if running is None:
            return
        running.cancelled = True
        if running.turn is None:  # `prompt` cancels it as soon as it knows the turn
            return
        with contextlib.suppress(RpcError, ConnectionClosed, HologramError):
            client = await self.link.client()
            await client.cancel(session_id, running.turn)

    async def _images(self, client: TurnClient, session_id: str, refs: list[dict[str, Any]]) -> list[tuple[str, str]]:
        """The images of a result, ``(base64, mime)`` each, read with ``media/read``; one the kernel no longer
        has (pruned, deleted) is left out."""
        shown = []
        for ref in refs:
            try:
                found, data = await client.media_read(session_id, str(ref.get("id")))
            except RpcError:
                continue
            shown.append((base64.b64encode(data).decode("ascii"), str(found.get("mime") or "image/png")))
        return shown

    async def _send(self, session_id: str, update: Any) -> None:
        assert self.editor is not None
        await self.editor.session_update(session_id=session_id, update=update)
