"""The turn API (version 2; version 1 still served): how anything runs a turn — `hologram ask/chat`, scripts,
channel plugins, the web UI.

One contract, two transports: the control socket (JSON-RPC, clients in `hologram.clients.control`) and the plugin
protocol (the ``kernel.turns`` facility; its events arrive over the plugin's connection). Method names, their params and
every event type are defined here and nowhere else; docs/protocol.md ("The turn API") is the reference.

A client *starts* a turn in a session (``turn/start`` answers at once with the session and turn ids) or
*watches* a session (``turn/watch``); from then on the kernel sends it every event of that session's turns as a
``turn/event`` notification, in order, each with a per-session ``seq``. Many clients may watch one session: all
see the same events, any one that said it can approve may answer an ``approval.requested`` with
``turn/approve``, and all see the ``approval.resolved`` that follows. A turn ends with exactly one
``turn.ended`` event whose ``stop_reason`` says why.

Events are slotted dataclasses: the kernel builds one per delta of every turn, 1.5-2.4x cheaper than a
pydantic model (tools/bench/event_cost.py); `parse_event` turns a received one back into its class and maps a
type this version does not know to `UnknownEvent`, so an older client keeps working against a newer kernel.
The methods' params are pydantic models in `hologram.api.params` (the kernel validates every request with
them; docs/turn-api.schema.json is generated from both). This module imports no pydantic: it is what a client
imports, and `hologram ask` is a new process per turn.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal

TURN_API_VERSION = 2
SUPPORTED_VERSIONS = (1, 2)  # a client that does not `initialize` is served as version 1 (kept for one release)

# -- methods (client → kernel requests; the same names are the ``kernel.turns`` facility's methods) --------
INITIALIZE = "initialize"  # InitializeParams → {protocol_version, server {name, version}, capabilities}
TURN_READ = "turn/read"  # {session, turn} → {turn, status, items, events}: a running or recently finished turn
TURN_START = "turn/start"  # StartParams → {session, turn, status: running | queued}
TURN_WATCH = "turn/watch"  # WatchParams → {session, turn (running or null), seq (last event seq)}
TURN_UNWATCH = "turn/unwatch"  # {session} → {watching: false}
TURN_CANCEL = "turn/cancel"  # {session, turn?} → {cancelled: bool}
TURN_APPROVE = "turn/approve"  # ApproveParams → {accepted: bool} (false: already decided, or no such request)
SESSIONS_CREATE = "sessions/create"  # {title?, session?} → {session, title, channel, created}: an empty session
SESSIONS_APPEND = "sessions/append"  # AppendParams → {session, status: stored | queued}: a message, no turn
SESSIONS_LIST = "sessions/list"  # {limit?, cursor?} → {sessions: [{id, title, updated, channel, …}], next_cursor}
SESSIONS_READ = "sessions/read"  # {session, limit?, before?} → {session, title, events, messages, next_before}
SESSIONS_RENAME = "sessions/rename"  # {session, title} → {session, title}
SESSIONS_DELETE = "sessions/delete"  # {session} → {deleted: bool}
# McpParams → {session, servers: [{name, state, tools, error}]}: MCP servers connected for one session, its tools
SESSIONS_MCP = "sessions/mcp"
# {session, id} → {id, mime, bytes, width?, height?, data (base64)}: an image a tool result of the session carried
MEDIA_READ = "media/read"
TOOLS_LIST = "tools/list"  # {} → {tools: [{name, description, parameters, plugin, needs_approval}]}
TOOLS_CALL = "tools/call"  # {tool, arguments} → {content, is_error, status}: outside a turn, policy only
# kernel → client notification, on every connection watching the session
TURN_EVENT = "turn/event"  # params: one event (`wire`); to plugins the same (hologram.base.protocol.TURN_EVENT)
# the facility plugins call; a watching plugin's events come over its own connection as TURN_EVENT notifications
FACILITY = "kernel.turns"
# every turn's events, for a plugin whose manifest requires it (a logger, a relay): `subscribe` sends them all
OBSERVE_FACILITY = "kernel.observe"
ItemType = Literal["user_message", "agent_message", "reasoning", "tool_call", "approval"]

# loop: the loop guard ended the turn; max_steps, max_tool_calls, max_time: a limit of [agent] was reached
StopReason = Literal[
    "answer", "denied", "respond", "loop", "max_steps", "max_tool_calls", "max_time", "cancelled", "error"
]
OnDisconnect = Literal["cancel", "continue"]


# -- events -------------------------------------------------------------------------------------------------


@dataclass(slots=True, kw_only=True)
class _Event:
    """What every event carries. ``seq`` is set by the kernel's hub when the event is sent: it orders the
    events of a session across turns, and a client that reconnects passes the last one it saw to
    ``turn/watch`` to get the rest of a running turn's events (no gap, no repeat)."""

    session: str
    turn: str
    seq: int = 0


@dataclass(slots=True, kw_only=True)
class TurnQueued(_Event):
    """A turn waits behind the one running in its session (``turn/cancel`` with its id drops it)."""

    type: Literal["turn.queued"] = "turn.queued"
    text: str = ""
    client: str = ""
    ahead: int = 0  # turns before it: the running one and those queued earlier
    channel: str = ""  # set by the kernel: the plugin that started it, or the control client's name
    partner: str | None = None  # who the turn is with (a user or group id of the channel)


@dataclass(slots=True, kw_only=True)
class TurnStarted(_Event):
    type: Literal["turn.started"] = "turn.started"
    text: str = ""  # the input, as the client sent it
    client: str = ""  # who started it, as the caller says (`cli`, `web`, a plugin's name)
    channel: str = ""  # set by the kernel, never by a param: the plugin that started it, or the control client
    partner: str | None = None  # who the turn is with (a user or group id of the channel), if it said


@dataclass(slots=True, kw_only=True)
class ContentDelta(_Event):
    type: Literal["content.delta"] = "content.delta"
    text: str = ""
    item: str = ""  # the agent_message item this delta belongs to (set by the kernel's hub)
    by: str | None = None  # a stage hook that answered in the model's place


@dataclass(slots=True, kw_only=True)
class ReasoningDelta(_Event):
    type: Literal["reasoning.delta"] = "reasoning.delta"
    text: str = ""
    item: str = ""  # the reasoning item


@dataclass(slots=True, kw_only=True)
class ToolCallStarted(_Event):
    """A call the model made that will run (or be asked about): its arguments as they will be used."""

    type: Literal["tool.call"] = "tool.call"
    call_id: str = ""
    tool: str = ""
    plugin: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)
    item: str = ""  # the tool_call item


@dataclass(slots=True, kw_only=True)
class ToolOutput(_Event):
    """Live output of a running tool (shell, code), as it comes."""

    type: Literal["tool.output"] = "tool.output"
    call_id: str = ""
    text: str = ""
    stream: str = "stdout"
    item: str = ""  # the tool_call item


@dataclass(slots=True, kw_only=True)
class ApprovalRequested(_Event):
    type: Literal["approval.requested"] = "approval.requested"
    approval: str = ""  # its id: what `turn/approve` names
    call_id: str = ""
    tool: str = ""
    plugin: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)
    summary: str = ""  # one line for a person: the command, the program's first line …
    timeout_s: float = 0.0
    item: str = ""  # the approval item


@dataclass(slots=True, kw_only=True)
class ApprovalResolved(_Event):
    type: Literal["approval.resolved"] = "approval.resolved"
    approval: str = ""
    call_id: str = ""
    approved: bool = False
    by: str = ""  # the client that answered, or "policy" / "kernel" (no one could be asked, timeout)
    reason: str = ""
    decision: str = ""  # approve_once | approve_for_session | always | deny | cancel (params.Decision)
    item: str = ""


@dataclass(slots=True, kw_only=True)
class ToolResult(_Event):
    type: Literal["tool.result"] = "tool.result"
    call_id: str = ""
    tool: str = ""
    content: str = ""  # at most the first 2,000 characters; the session holds all of it
    is_error: bool = False
    status: str = "ok"  # ok | error | denied | answered | invalid | unknown | skipped
    item: str = ""
    # images the tool returned (a screenshot), as references: [{id (sha256), mime, bytes, width?, height?}];
    # the bytes come from `media/read` with the session and the id, never inline in an event
    images: list[dict[str, Any]] = field(default_factory=list)


@dataclass(slots=True, kw_only=True)
class ItemStarted(_Event):
    """An item of the turn begins (version 2; Codex's ``item/started``): ``item`` is ``{id, type, …}`` —
    ``user_message`` {text}, ``agent_message`` and ``reasoning`` (one per LLM step, their deltas name the id),
    ``tool_call`` {call_id, tool, plugin}, ``approval`` {approval, call_id}."""

    type: Literal["item.started"] = "item.started"
    item: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True, kw_only=True)
class ItemCompleted(_Event):
    """An item is done, with its authoritative content: a message's whole ``text``, a tool call's ``status``
    and ``content``, an approval's decision; ``status`` ``completed``, or ``cancelled`` when the turn stopped
    first (a cancelled agent_message keeps the text streamed so far, as the session stores it)."""

    type: Literal["item.completed"] = "item.completed"
    item: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True, kw_only=True)
class MemoryNote(_Event):
    """Memory moved events out of the request (``pruned``) or brought stored ones back (``recalled``)."""

    type: Literal["memory.note"] = "memory.note"
    pruned: int = 0
    recalled: int = 0


@dataclass(slots=True, kw_only=True)
class TurnFailed(_Event):
    """Why the turn could not answer (every provider failed, a damaged session file …); ``turn.ended``
    with ``stop_reason = "error"`` follows."""

    type: Literal["turn.error"] = "turn.error"
    message: str = ""
    # what for a client: context_window | auth | rate_limit | upstream_http | network | bad_request |
    # stream_interrupted | no_provider | storage | internal (hologram.agent.failure); since version 1, additive
    kind: str = "internal"
    status: int | None = None  # the provider's HTTP status, when there was one


@dataclass(slots=True, kw_only=True)
class TurnEnded(_Event):
    type: Literal["turn.ended"] = "turn.ended"
    stop_reason: StopReason = "answer"
    output: str = ""  # the delivered answer (after before_output hooks)
    steps: int = 0  # LLM calls made
    usage: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)


@dataclass(slots=True, kw_only=True)
class WatchDropped(_Event):
    """To a plugin only, the last event it gets when it fell more than ``[delivery] client_queue_bytes`` behind: it
    watches nothing any more, and may watch its sessions again with ``after``. ``seq``: the last one it was sent;
    ``session`` and ``turn`` are empty."""

    type: Literal["watch.dropped"] = "watch.dropped"


@dataclass(slots=True, kw_only=True)
class UnknownEvent(_Event):
    """An event type this client version does not know (a newer kernel): kept, not an error."""

    type: str = ""
    data: dict[str, Any] = field(default_factory=dict)


TurnEvent = (
    TurnQueued
    | TurnStarted
    | ContentDelta
    | ReasoningDelta
    | ToolCallStarted
    | ToolOutput
    | ApprovalRequested
    | ApprovalResolved
    | ToolResult
    | ItemStarted
    | ItemCompleted
    | MemoryNote
    | TurnFailed
    | TurnEnded
    | WatchDropped
)
EVENT_TYPES: dict[str, type[Any]] = {
    str(next(f.default for f in dataclasses.fields(cls) if f.name == "type")): cls for cls in TurnEvent.__args__
}
_FIELDS: dict[type[Any], tuple[str, ...]] = {}
_REQUIRED = ("session", "turn")  # the fields every event has without a default


def _field_names(cls: type[Any]) -> tuple[str, ...]:
    """An event class's field names, cached: `wire` and `parse_event` run for every delta of every turn."""
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return names


def wire(event: Any) -> dict[str, Any]:
    """An event as it travels (a flat JSON object); not `dataclasses.asdict`, which deep-copies."""
    return {name: getattr(event, name) for name in _field_names(type(event))}


def parse_event(data: Any) -> TurnEvent | UnknownEvent:
    """A received event as its dataclass: the keys of its type (keys a newer kernel added are ignored), a
    missing required one a `ValueError` naming it; an unknown type kept as `UnknownEvent`.

    Types are not checked here: the kernel builds every event from these typed dataclasses, and this runs for
    each streamed delta in `hologram ask`, a new process a turn, where pydantic's import and validators cost
    ~0.1 s (docs/performance.md, "pydantic back on the contracts"). `validate_event` checks every field with
    pydantic, for a client that takes events from somewhere it does not trust."""
    if not isinstance(data, dict):
        raise ValueError(f"a turn event must be a JSON object, not {type(data).__name__}")
    kind = data.get("type")
    cls = EVENT_TYPES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        base = {k: data.get(k) for k in ("session", "turn", "seq")}
        rest = {k: v for k, v in data.items() if k not in ("session", "turn", "seq", "type")}
        return UnknownEvent(
            session=str(base["session"] or ""),
            turn=str(base["turn"] or ""),
            seq=int(base["seq"] or 0),
            type=str(kind),
            data=rest,
        )
    missing = [name for name in _REQUIRED if name not in data]
    if missing:
        raise ValueError(f"malformed {kind} event: {missing[0]}: Field required")
    event: TurnEvent = cls(**{name: data[name] for name in _field_names(cls) if name in data})
    return event


def validate_event(data: Any) -> TurnEvent | UnknownEvent:
    """`parse_event` with every field of a known type checked by pydantic, strictly (JSON's own types: a
    ``"no"`` is not a boolean, ``true`` not a number); raises `ValueError` naming the field. pydantic is
    imported on the first call."""
    event = parse_event(data)
    if isinstance(event, UnknownEvent):
        return event
    import json

    from pydantic import ValidationError

    try:
        checked: TurnEvent = _adapter(event.type).validate_json(json.dumps(data), strict=True)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(event)"
        raise ValueError(f"malformed {event.type} event: {where}: {first['msg']}") from None
    return checked


_ADAPTERS: dict[str, Any] = {}


def _adapter(kind: str) -> Any:
    """Pydantic's validator of one event class, built on the first event of that type."""
    adapter = _ADAPTERS.get(kind)
    if adapter is None:
        from pydantic import TypeAdapter

        adapter = _ADAPTERS[kind] = TypeAdapter(EVENT_TYPES[kind])
    return adapter
