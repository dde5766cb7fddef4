"""The turn API's params: one pydantic model per method (`METHOD_PARAMS`), validated by the kernel for every
request on both transports (`hologram.agent.service`), and the source of docs/turn-api.schema.json.

Frozen, unknown keys refused, every problem of a request said at once. A client sends the same fields as a
JSON object; `hologram.clients` builds them as plain dicts, so `hologram ask` (a process per turn) does not
import pydantic (tests/foundation/test_turn_api_parse.py holds the clients' keys to these models).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from typing_extensions import Self

from hologram.api.input_parts import Part, check_parts
from hologram.api.turn import (
    INITIALIZE,
    MEDIA_READ,
    SESSIONS_APPEND,
    SESSIONS_CREATE,
    SESSIONS_DELETE,
    SESSIONS_LIST,
    SESSIONS_MCP,
    SESSIONS_READ,
    SESSIONS_RENAME,
    TOOLS_CALL,
    TOOLS_LIST,
    TURN_APPROVE,
    TURN_CANCEL,
    TURN_READ,
    TURN_START,
    TURN_UNWATCH,
    TURN_WATCH,
    OnDisconnect,
)

#: An original time may lie this far ahead of the kernel's clock (clocks of two machines differ a little).
_FUTURE_SLACK_S = 300.0


def original_time(at: float | str) -> float:
    """Epoch seconds of an input's ``at`` (issue 39: imported conversations carried the import's time): epoch
    seconds, or ISO 8601 — a naive one is UTC, as memory reads times (`hologram.memory.cold.blocks`). Raises
    ValueError naming the value and the forms it takes; a time in the future is refused."""
    import time
    from datetime import datetime, timezone

    if isinstance(at, int | float):
        seconds = float(at)
    else:
        try:
            parsed = datetime.fromisoformat(at.strip())
        except ValueError:
            raise ValueError(
                f"{at!r} is not a time: give ISO 8601 (2026-05-13T09:30:00+08:00) or epoch seconds"
            ) from None
        seconds = (parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)).timestamp()
    if not seconds > 0 or seconds != seconds:
        raise ValueError(f"{at!r} is not a time: give a moment after 1970 (epoch seconds > 0 or ISO 8601)")
    if seconds > time.time() + _FUTURE_SLACK_S:
        raise ValueError(f"{at!r} is in the future: `at` is when an imported message was said; leave it out for now")
    return seconds


# -- params ---------------------------------------------------------------------------------------------------


class _Params(BaseModel):
    """Params are frozen and forbid unknown keys: a misspelt option is an error, not silently ignored.

    Pydantic models, unlike the events: params are validated once per request (not per delta), they are the
    contract clients write against, and their JSON Schema is published (docs/turn-api.schema.json)."""

    # defer_build: each model's validator is built on its first request, not when the kernel imports this
    # (six models, ~40 ms before the first answer that only turn/start needs)
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    @classmethod
    def parse(cls, method: str, params: Any) -> Self:
        """Validated params, or `ValueError` naming the method, each field and what is wrong with it."""
        try:
            return cls.model_validate(params if params is not None else {})
        except ValidationError as exc:
            problems = "; ".join(f"{_where(e['loc'])}: {_message(e)}" for e in exc.errors())
            raise ValueError(f"{method}: {problems}") from None


def _where(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(part) for part in loc) or "(params)"


def _message(error: Any) -> str:
    """Pydantic's message, without the "Value error, " it puts before a check of ours (the scene grammar): that
    check's own sentence says what is wrong and how to write it."""
    if error["type"] == "value_error" and "error" in error.get("ctx", {}):
        return str(error["ctx"]["error"])
    return str(error["msg"])


NonEmpty = Annotated[str, Field(min_length=1)]
Principal = Annotated[
    str,
    Field(
        max_length=128,
        description="who, under the calling plugin, this is (a browser tab, a chat user): watchers and approvers "
        "are (plugin, principal); empty for the caller itself",
    ),
]


class ClientInfo(_Params):
    name: NonEmpty = Field(max_length=64, description="shown as who started a turn or answered an approval")
    version: str = Field("", max_length=64)


class Capabilities(_Params):
    approvals: bool = Field(False, description="a person behind this client answers approval requests")


class InitializeParams(_Params):
    """``initialize``, once per control-socket connection (version 2): who the client is and what it can do.
    A connection that never sends it is served version 1, as before (kept for one release)."""

    protocol_version: int = Field(ge=1, description="the newest turn API version the client speaks")
    client: ClientInfo
    capabilities: Capabilities = Capabilities()


class _Input(_Params):
    """The user's words: ``text``, or ``input`` — typed parts (text, images, files; `hologram.api.input_parts`) —
    exactly one of the two (``text`` is one text part, as in version 1). What `StartParams` and `AppendParams`
    share, so a message stored without a turn is checked and stored as a turn's input is."""

    text: NonEmpty | None = Field(None, description="the user's input (or give input)")
    input: list[Part] | None = Field(None, description="the user's input as typed parts (or give text)")
    at: float | str | None = Field(
        None,
        description="when the user said it, for an imported message: ISO 8601 (naive = UTC) or epoch seconds; "
        "default now",
    )

    @field_validator("at", mode="before")
    @classmethod
    def _at(cls, at: Any) -> float | None:
        if at is None:
            return None
        if not isinstance(at, int | float | str) or isinstance(at, bool):
            raise ValueError(f"{at!r} is not a time: give ISO 8601 (2026-05-13T09:30:00+08:00) or epoch seconds")
        return original_time(at)

    @field_validator("input")
    @classmethod
    def _parts(cls, parts: list[Any] | None) -> list[Any] | None:
        if parts is not None:
            check_parts(parts)
        return parts

    @model_validator(mode="after")
    def _text_or_input(self) -> Self:
        if (self.text is None) == (self.input is None):
            raise ValueError(
                "give exactly one of text (a string) or input (a list of parts), not "
                + ("both" if self.text is not None else "neither")
            )
        return self

    @property
    def prompt(self) -> str:
        """The turn's text: ``text``, or what the model reads of ``input`` (`hologram.llm.content`)."""
        if self.input is None:
            return self.text or ""
        from hologram.llm.content import input_text  # only for a turn with parts

        return input_text(self.stored_parts() or [])

    def stored_parts(self) -> list[dict[str, Any]] | None:
        """``input`` as plain dicts, as the turn's input event stores them (None: a text-only turn)."""
        return None if self.input is None else [p.model_dump(exclude_none=True) for p in self.input]


class StartParams(_Input):
    """``turn/start``. ``approvals``: this client can answer approval requests (default false: a script with
    no person behind it is never asked, the call is denied). ``watch``: send this connection the turn's
    events. ``on_disconnect``: ``cancel`` (the default, like Ctrl-C) stops the turn when its last watcher goes
    away; ``continue`` lets it finish (a browser tab that will reconnect). ``scene``: the scene the turn happens
    in, declared by a channel that knows it (``chan:qq/peer:group_1``; the grammar is
    `hologram.memory.scenes.scene_features`, docs/scenes.md); ``partner``: who the turn is with (a user or group id of
    the channel). Both optional (since turn API version 1, a backward-compatible addition): memory prefers what
    happened in the same scene. ``input``: typed parts (text, images, files; `hologram.api.input_parts`)
    instead of ``text`` — exactly one of the two (``text`` is one text part, as in version 1). ``tools``,
    ``max_steps``, ``parent``: a turn started for another turn (a sub-agent, ``agent_delegate``) — only these
    tools (or plugins; never more than the turn's policy allows), at most these LLM calls, and the session whose
    running turn it works for: it may use no tool that turn may not, and it is cancelled when that turn ends
    (hologram/agent/scope.py; backward-compatible additions)."""

    session: str | None = Field(None, description="the session to continue; a new one when left out")
    client: str = Field("client", description="who starts it (`cli`, `web`, a plugin's name)")
    approvals: bool = Field(False, description="this client can answer approval requests")
    watch: bool = Field(True, description="send this connection the turn's events")
    on_disconnect: OnDisconnect = Field("cancel", description="what happens when the last watcher goes away")
    scene: str | None = Field(None, min_length=1, max_length=200, description="a declared scene key")
    partner: str | None = Field(None, min_length=1, max_length=128, description="who the turn is with")
    principal: Principal = ""
    tools: list[Annotated[str, Field(min_length=1, max_length=128)]] | None = Field(
        None,
        max_length=500,
        description="only these tools or plugins (by name); never more than the turn's policy allows",
    )
    max_steps: int | None = Field(None, ge=1, le=1000, description="at most this many LLM calls ([agent] caps it)")
    parent: str | None = Field(
        None, min_length=1, description="the session whose running turn this one works for (cancelled with it)"
    )

    @field_validator("scene")
    @classmethod
    def _scene_key(cls, scene: str | None) -> str | None:
        if scene is not None:
            from hologram.memory.scenes.scene_features import scene_key_problem  # the grammar, only when used

            problem = scene_key_problem(scene)
            if problem is not None:
                raise ValueError(problem)
        return scene


class AppendParams(_Input):
    """``sessions/append``: a message stored in ``session`` as a turn's input is — with who said it (the
    caller's channel, ``client``, ``partner``) — but no turn runs and no model is asked: a group chat's talk the
    agent should know when it is asked later. A session that does not exist yet is created (titled from it)."""

    session: NonEmpty = Field(description="the session to store it in (created when it does not exist)")
    client: str = Field("client", description="who stores it (`cli`, a plugin's name)")
    partner: str | None = Field(None, min_length=1, max_length=128, description="who said it")


class WatchParams(_Params):
    """``turn/watch``. ``after``: replay the running turn's events whose ``seq`` is greater (a client that
    reconnects passes the last one it saw); without it only new events come."""

    session: NonEmpty
    after: int | None = None
    client: str = "client"
    approvals: bool = False
    principal: Principal = ""


class UnwatchParams(_Params):
    """``turn/unwatch``: ``principal`` stops watching; without it, every principal of the caller."""

    session: NonEmpty
    principal: str | None = Field(None, max_length=128)


class TurnReadParams(_Params):
    """``turn/read``: a turn's status and items (running, queued, or finished: then from the session's store)."""

    session: NonEmpty
    turn: NonEmpty


class CreateParams(_Params):
    """``sessions/create``: an empty session, for a client that needs its id before the first turn (an ACP
    editor's ``session/new``). ``turn/start`` without ``session`` still creates one with its first turn.
    ``session``: an id of the caller's choosing (a chat channel's stable key, ``qq:group:1``); when a session has
    it already nothing changes and the answer says ``created: false``."""

    title: str = Field("", max_length=200, description="a title for it (sessions/list shows it)")
    session: str | None = Field(
        None,
        pattern=r"^[^/\s]{1,200}$",
        description="the new session's id (1-200 characters, no '/' or whitespace); default: a new random id",
    )


class SessionParams(_Params):
    """``sessions/delete``."""

    session: NonEmpty


class MediaReadParams(_Params):
    """``media/read``: an image a tool result of ``session`` carried (its ``images`` reference's ``id``)."""

    session: NonEmpty
    id: str = Field(pattern=r"^[0-9a-f]{64}$", description="the image's sha256, 64 lowercase hex characters")


PAGE_DEFAULT = 50  # a page's size when a client pages (gives a cursor or `before`) without saying `limit`
PAGE_MAX = 500


class SessionReadParams(_Params):
    """``sessions/read``. Without ``limit`` and ``before``, every event (version 1's answer); with either, the
    newest ``limit`` events older than ``before`` (a seq; the answer's ``next_before`` continues backwards)."""

    session: NonEmpty
    limit: int | None = Field(None, ge=1, le=PAGE_MAX, description="at most this many events")
    before: int | None = Field(None, ge=1, description="only events with a smaller seq (a previous next_before)")


class CancelParams(_Params):
    """``turn/cancel``: the session's running turn, or ``turn`` — the running one or one queued behind it (a
    queued turn is dropped before it starts: ``turn.ended`` with ``cancelled``, no ``turn.started``)."""

    session: NonEmpty
    turn: str | None = Field(None, min_length=1, description="a queued or running turn of the session")


class ListParams(_Params):
    """``sessions/list``. Without ``limit`` and ``cursor``, every session (version 1's answer); with either, a
    page of at most ``limit`` (default `PAGE_DEFAULT`), and ``next_cursor`` for the next one."""

    limit: int | None = Field(None, ge=1, le=PAGE_MAX, description="at most this many sessions")
    cursor: str | None = Field(
        None, min_length=1, max_length=512, description="opaque: the previous answer's next_cursor"
    )


class RenameParams(_Params):
    """``sessions/rename``."""

    session: NonEmpty
    title: str = Field(max_length=200)


# What a person can answer (docs/protocol.md §9): this call; this tool and subject for the rest of the session;
# always (written to the approval policy); no; no, and stop the turn.
Decision = Literal["approve_once", "approve_for_session", "always", "deny", "cancel"]
DECISIONS: tuple[str, ...] = get_args(Decision)


class ApproveParams(_Params):
    """``turn/approve``: the answer to the ``approval.requested`` event with id ``approval``: a ``decision``,
    or (version 1, kept) ``approved``: true is ``approve_once``, false ``deny``. Exactly one of the two."""

    session: NonEmpty
    approval: NonEmpty
    decision: Decision | None = Field(None, description="approve_once | approve_for_session | always | deny | cancel")
    approved: bool | None = Field(None, description="version 1: true = approve_once, false = deny")
    reason: str = ""
    principal: Principal = ""

    @model_validator(mode="after")
    def _one_answer(self) -> Self:
        if (self.decision is None) == (self.approved is None):
            raise ValueError("send either decision (" + " | ".join(DECISIONS) + ") or approved (true | false)")
        return self

    @property
    def chosen(self) -> Decision:
        """The decision, with a version-1 ``approved`` read as one."""
        if self.decision is not None:
            return self.decision
        return "approve_once" if self.approved else "deny"


class McpServer(_Params):
    """One MCP server for a session: ``command`` (stdio: the kernel's ``mcp`` plugin starts it) or ``url``
    (streamable HTTP), exactly one of the two."""

    name: str = Field(
        pattern=r"^[A-Za-z0-9_-]{1,40}$", description="its name (1-40 of A-Z a-z 0-9 _ -); tools are mcp_NAME_TOOL"
    )
    command: str | None = Field(None, min_length=1, description="stdio: the program to start (found on PATH)")
    args: list[str] = Field(default_factory=list, max_length=256, description="stdio: its arguments")
    env: dict[str, str] = Field(default_factory=dict, description="stdio: environment variables added")
    cwd: str | None = Field(None, min_length=1, description="stdio: its working directory")
    url: str | None = Field(None, pattern=r"^https?://", description="streamable HTTP: the server's endpoint")
    headers: dict[str, str] = Field(default_factory=dict, description="streamable HTTP: headers sent with each request")

    @model_validator(mode="after")
    def _one_transport(self) -> Self:
        if (self.command is None) == (self.url is None):
            raise ValueError(
                f"server {self.name!r}: give command (a stdio server) or url (streamable HTTP), exactly one"
            )
        return self


class McpParams(_Params):
    """``sessions/mcp``: connect these MCP servers for ``session`` alone — the servers an ACP editor passes in
    ``session/new`` — through the ``mcp`` plugin (the provider of ``mcp.sessions``). Their tools are offered in
    that session's turns only, every call put to the user's approval policy like any MCP tool's; they replace
    what this caller connected for the session before (``servers: []`` disconnects them all), and they go when
    the caller's connection does. The answer comes once each server is up or has failed, so the next turn sees
    its tools."""

    session: NonEmpty = Field(description="an existing session")
    servers: list[McpServer] = Field(max_length=32, description="the servers (names unique)")

    @model_validator(mode="after")
    def _unique(self) -> Self:
        names = [s.name for s in self.servers]
        if len(set(names)) != len(names):
            raise ValueError("servers: a name is given twice")
        return self


class ToolsListParams(_Params):
    """``tools/list``: the tools of the plugins, with their schemas and whether the policy puts them to a person."""


class ToolCallParams(_Params):
    """``tools/call``: one call of a plugin's tool outside any turn (hologram/agent/direct_tools.py): the
    schema check, the tool stage hooks and the approval policy as for a model's call; a call the policy would
    ask about is refused (nobody to ask). Nothing is stored."""

    tool: NonEmpty
    arguments: dict[str, Any] = Field(default_factory=dict)


# Each method's params, for the kernel's dispatch and the published schema (docs/turn-api.schema.json).
METHOD_PARAMS: dict[str, type[_Params]] = {
    INITIALIZE: InitializeParams,
    TURN_START: StartParams,
    TURN_WATCH: WatchParams,
    TURN_UNWATCH: UnwatchParams,
    TURN_READ: TurnReadParams,
    TURN_CANCEL: CancelParams,
    TURN_APPROVE: ApproveParams,
    SESSIONS_CREATE: CreateParams,
    SESSIONS_APPEND: AppendParams,
    SESSIONS_LIST: ListParams,
    SESSIONS_READ: SessionReadParams,
    SESSIONS_RENAME: RenameParams,
    SESSIONS_DELETE: SessionParams,
    SESSIONS_MCP: McpParams,
    MEDIA_READ: MediaReadParams,
    TOOLS_LIST: ToolsListParams,
    TOOLS_CALL: ToolCallParams,
}
