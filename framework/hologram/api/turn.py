"""The turn API (version 1): how anything runs a turn — `hologram ask/chat`, scripts, channel plugins, the web UI.

One contract, two transports: the control socket (JSON-RPC, clients in `hologram.clients.control`) and the plugin
protocol (the ``kernel.turns`` facility; its events arrive on the event ring). Method names, their params and
every event type are defined here and nowhere else; docs/protocol.md ("The turn API") is the reference.

A client *starts* a turn in a session (``turn/start`` answers at once with the session and turn ids) or
*watches* a session (``turn/watch``); from then on the kernel sends it every event of that session's turns as a
``turn/event`` notification, in order, each with a per-session ``seq``. Many clients may watch one session: all
see the same events, any one that said it can approve may answer an ``approval.requested`` with
``turn/approve``, and all see the ``approval.resolved`` that follows. A turn ends with exactly one
``turn.ended`` event whose ``stop_reason`` says why.

Params are pydantic models (validated once a request; their JSON Schema is docs/turn-api.schema.json, made by
`make schema`). Events are slotted dataclasses: the kernel builds one per delta of every turn, and a dataclass
is several times cheaper to build than a model (docs/performance.md); `parse_event` validates a received
event with pydantic (a `TypeAdapter` of its class) and maps a type this version does not know to
`UnknownEvent`, so an older client keeps working against a newer kernel.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    TypeAdapter,
    ValidationError,
    field_validator,
)
from typing_extensions import Self

TURN_API_VERSION = 1

# -- methods (client → kernel requests; the same names are the ``kernel.turns`` facility's methods) --------
TURN_START = "turn/start"  # StartParams → {session, turn}
TURN_WATCH = "turn/watch"  # WatchParams → {session, turn (running or null), seq (last event seq)}
TURN_UNWATCH = "turn/unwatch"  # {session} → {watching: false}
TURN_CANCEL = "turn/cancel"  # {session} → {cancelled: bool}
TURN_APPROVE = "turn/approve"  # ApproveParams → {accepted: bool} (false: already decided, or no such request)
SESSIONS_LIST = "sessions/list"  # {} → {sessions: [{id, title, created, updated, channel, events}]}
SESSIONS_READ = "sessions/read"  # {session} → {events: [...], messages: [...]}
SESSIONS_RENAME = "sessions/rename"  # {session, title} → {session, title}
SESSIONS_DELETE = "sessions/delete"  # {session} → {deleted: bool}
# kernel → client notification, on every connection watching the session
TURN_EVENT = "turn/event"  # params: one event (`wire`)
# the facility plugins call; a plugin's events come on the event ring with this type, the event in "event"
FACILITY = "kernel.turns"
RING_EVENT_TYPE = "turn.event"

StopReason = Literal["answer", "denied", "respond", "max_steps", "cancelled", "error"]
OnDisconnect = Literal["cancel", "continue"]


# -- events -------------------------------------------------------------------------------------------------


@dataclass(slots=True, kw_only=True)
class _Event:
    """What every event carries. ``seq`` is set by the kernel's hub when the event is sent: it orders the
    events of a session across turns, and a client that reconnects passes the last one it saw to
    ``turn/watch`` to get the rest of a running turn's events (no gap, no repeat).

    Fields are typed strictly (``StrictStr`` …) for `parse_event`: a received event has JSON's own types, and a
    ``"no"`` is not a boolean. Only types: the kernel builds events without validating them."""

    session: StrictStr
    turn: StrictStr
    seq: StrictInt = 0


@dataclass(slots=True, kw_only=True)
class TurnStarted(_Event):
    type: Literal["turn.started"] = "turn.started"
    text: StrictStr = ""  # the input, as the client sent it
    client: StrictStr = ""  # who started it (`cli`, `web`, a plugin's name)


@dataclass(slots=True, kw_only=True)
class ContentDelta(_Event):
    type: Literal["content.delta"] = "content.delta"
    text: StrictStr = ""
    by: StrictStr | None = None  # a stage hook that answered in the model's place


@dataclass(slots=True, kw_only=True)
class ReasoningDelta(_Event):
    type: Literal["reasoning.delta"] = "reasoning.delta"
    text: StrictStr = ""


@dataclass(slots=True, kw_only=True)
class ToolCallStarted(_Event):
    """A call the model made that will run (or be asked about): its arguments as they will be used."""

    type: Literal["tool.call"] = "tool.call"
    call_id: StrictStr = ""
    tool: StrictStr = ""
    plugin: StrictStr = ""
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True, kw_only=True)
class ToolOutput(_Event):
    """Live output of a running tool (shell, code), as it comes."""

    type: Literal["tool.output"] = "tool.output"
    call_id: StrictStr = ""
    text: StrictStr = ""
    stream: StrictStr = "stdout"


@dataclass(slots=True, kw_only=True)
class ApprovalRequested(_Event):
    type: Literal["approval.requested"] = "approval.requested"
    approval: StrictStr = ""  # its id: what `turn/approve` names
    call_id: StrictStr = ""
    tool: StrictStr = ""
    plugin: StrictStr = ""
    arguments: dict[str, Any] = field(default_factory=dict)
    summary: StrictStr = ""  # one line for a person: the command, the program's first line …
    timeout_s: StrictFloat = 0.0


@dataclass(slots=True, kw_only=True)
class ApprovalResolved(_Event):
    type: Literal["approval.resolved"] = "approval.resolved"
    approval: StrictStr = ""
    call_id: StrictStr = ""
    approved: StrictBool = False
    by: StrictStr = ""  # the client that answered, or "policy" / "kernel" (no one could be asked, timeout)
    reason: StrictStr = ""


@dataclass(slots=True, kw_only=True)
class ToolResult(_Event):
    type: Literal["tool.result"] = "tool.result"
    call_id: StrictStr = ""
    tool: StrictStr = ""
    content: StrictStr = ""  # at most the first 2,000 characters; the session holds all of it
    is_error: StrictBool = False
    status: StrictStr = "ok"  # ok | error | denied | answered | invalid | unknown | skipped


@dataclass(slots=True, kw_only=True)
class MemoryNote(_Event):
    """Memory moved events out of the request (``pruned``) or brought stored ones back (``recalled``)."""

    type: Literal["memory.note"] = "memory.note"
    pruned: StrictInt = 0
    recalled: StrictInt = 0


@dataclass(slots=True, kw_only=True)
class TurnFailed(_Event):
    """Why the turn could not answer (every provider failed, a damaged session file …); ``turn.ended``
    with ``stop_reason = "error"`` follows."""

    type: Literal["turn.error"] = "turn.error"
    message: StrictStr = ""


@dataclass(slots=True, kw_only=True)
class TurnEnded(_Event):
    type: Literal["turn.ended"] = "turn.ended"
    stop_reason: StopReason = "answer"
    output: StrictStr = ""  # the delivered answer (after before_output hooks)
    steps: StrictInt = 0  # LLM calls made
    usage: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)


@dataclass(slots=True, kw_only=True)
class UnknownEvent(_Event):
    """An event type this client version does not know (a newer kernel): kept, not an error."""

    type: StrictStr = ""
    data: dict[str, Any] = field(default_factory=dict)


TurnEvent = (
    TurnStarted
    | ContentDelta
    | ReasoningDelta
    | ToolCallStarted
    | ToolOutput
    | ApprovalRequested
    | ApprovalResolved
    | ToolResult
    | MemoryNote
    | TurnFailed
    | TurnEnded
)
EVENT_TYPES: dict[str, type[Any]] = {
    str(next(f.default for f in dataclasses.fields(cls) if f.name == "type")): cls for cls in TurnEvent.__args__
}
_FIELDS: dict[type[Any], tuple[str, ...]] = {}


def wire(event: Any) -> dict[str, Any]:
    """An event as it travels (a flat JSON object). Field lists are cached per class: this runs for every
    delta of every turn, and `dataclasses.asdict` deep-copies."""
    names = _FIELDS.get(type(event))
    if names is None:
        names = _FIELDS[type(event)] = tuple(f.name for f in dataclasses.fields(event))
    return {name: getattr(event, name) for name in names}


def parse_event(data: Any) -> TurnEvent | UnknownEvent:
    """A received event, validated (its fields are strict types: a ``"no"`` is not a boolean). Raises
    `ValueError` naming the field when a known type is malformed; keys a newer kernel added are ignored."""
    if not isinstance(data, dict):
        raise ValueError(f"a turn event must be a JSON object, not {type(data).__name__}")
    kind = data.get("type")
    if kind not in EVENT_TYPES:
        base = {k: data.get(k) for k in ("session", "turn", "seq")}
        rest = {k: v for k, v in data.items() if k not in ("session", "turn", "seq", "type")}
        return UnknownEvent(
            session=str(base["session"] or ""),
            turn=str(base["turn"] or ""),
            seq=int(base["seq"] or 0),
            type=str(kind),
            data=rest,
        )
    try:
        event: TurnEvent = _adapter(str(kind)).validate_python(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(event)"
        raise ValueError(f"malformed {kind} event: {where}: {first['msg']}") from None
    return event


_ADAPTERS: dict[str, TypeAdapter[Any]] = {}


def _adapter(kind: str) -> TypeAdapter[Any]:
    """Pydantic's validator of one event class, built on the first event of that type (a client that only
    ever sees deltas and an end builds two)."""
    adapter = _ADAPTERS.get(kind)
    if adapter is None:
        adapter = _ADAPTERS[kind] = TypeAdapter(EVENT_TYPES[kind])
    return adapter


# -- params ---------------------------------------------------------------------------------------------------


class _Params(BaseModel):
    """Params are frozen and forbid unknown keys: a misspelt option is an error, not silently ignored.

    Pydantic models, unlike the events: params are validated once per request (not per delta), they are the
    contract clients write against, and their JSON Schema is published (docs/turn-api.schema.json)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @classmethod
    def parse(cls, method: str, params: Any) -> Self:
        """Validated params, or `ValueError` naming the method, each field and what is wrong with it."""
        try:
            return cls.model_validate(params if params is not None else {})
        except ValidationError as exc:
            problems = "; ".join(f"{_where(e['loc'])}: {_message(e)}" for e in exc.errors())
            raise ValueError(f"{method}: {problems}") from None

    def wire(self) -> dict[str, Any]:
        """The params as a client sends them: unset options left out, so an older kernel that does not know a
        newer option is not sent it unless it is used."""
        return self.model_dump(exclude_none=True)


def _where(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(part) for part in loc) or "(params)"


def _message(error: Any) -> str:
    """Pydantic's message, without the "Value error, " it puts before a check of ours (the scene grammar): that
    check's own sentence says what is wrong and how to write it."""
    if error["type"] == "value_error" and "error" in error.get("ctx", {}):
        return str(error["ctx"]["error"])
    return str(error["msg"])


NonEmpty = Annotated[str, Field(min_length=1)]


class StartParams(_Params):
    """``turn/start``. ``approvals``: this client can answer approval requests (default false: a script with
    no person behind it is never asked, the call is denied). ``watch``: send this connection the turn's
    events. ``on_disconnect``: ``cancel`` (the default, like Ctrl-C) stops the turn when its last watcher goes
    away; ``continue`` lets it finish (a browser tab that will reconnect). ``scene``: the scene the turn happens
    in, declared by a channel that knows it (``chan:qq/peer:group_1``; the grammar is
    `hologram.memory.scene_features`, docs/scenes.md); ``partner``: who the turn is with (a user or group id of
    the channel). Both optional (since turn API version 1, a backward-compatible addition): memory prefers what
    happened in the same scene."""

    text: NonEmpty = Field(description="the user's input")
    session: str | None = Field(None, description="the session to continue; a new one when left out")
    client: str = Field("client", description="who starts it (`cli`, `web`, a plugin's name)")
    approvals: bool = Field(False, description="this client can answer approval requests")
    watch: bool = Field(True, description="send this connection the turn's events")
    on_disconnect: OnDisconnect = Field("cancel", description="what happens when the last watcher goes away")
    scene: str | None = Field(None, min_length=1, max_length=200, description="a declared scene key")
    partner: str | None = Field(None, min_length=1, max_length=128, description="who the turn is with")

    @field_validator("scene")
    @classmethod
    def _scene_key(cls, scene: str | None) -> str | None:
        if scene is not None:
            from hologram.memory.scene_features import scene_key_problem  # the grammar, only when used

            problem = scene_key_problem(scene)
            if problem is not None:
                raise ValueError(problem)
        return scene


class WatchParams(_Params):
    """``turn/watch``. ``after``: replay the running turn's events whose ``seq`` is greater (a client that
    reconnects passes the last one it saw); without it only new events come."""

    session: NonEmpty
    after: int | None = None
    client: str = "client"
    approvals: bool = False


class SessionParams(_Params):
    """``turn/unwatch``, ``turn/cancel``, ``sessions/read``, ``sessions/delete``."""

    session: NonEmpty


class ListParams(_Params):
    """``sessions/list`` (no params yet)."""


class RenameParams(_Params):
    """``sessions/rename``."""

    session: NonEmpty
    title: str = Field(max_length=200)


class ApproveParams(_Params):
    """``turn/approve``: the answer to the ``approval.requested`` event with id ``approval``."""

    session: NonEmpty
    approval: NonEmpty
    approved: bool
    reason: str = ""


# Each method's params, for the kernel's dispatch and the published schema (docs/turn-api.schema.json).
METHOD_PARAMS: dict[str, type[_Params]] = {
    TURN_START: StartParams,
    TURN_WATCH: WatchParams,
    TURN_UNWATCH: SessionParams,
    TURN_CANCEL: SessionParams,
    TURN_APPROVE: ApproveParams,
    SESSIONS_LIST: ListParams,
    SESSIONS_READ: SessionParams,
    SESSIONS_RENAME: RenameParams,
    SESSIONS_DELETE: SessionParams,
}
