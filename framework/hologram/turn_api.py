"""The turn API (version 1): how anything runs a turn — `hologram ask/chat`, scripts, channel plugins, the web UI.

One contract, two transports: the control socket (JSON-RPC, clients in `hologram.client`) and the plugin
protocol (the ``kernel.turns`` facility; its events arrive on the event ring). Method names, their params and
every event type are defined here and nowhere else; docs/protocol.md ("The turn API") is the reference.

A client *starts* a turn in a session (``turn/start`` answers at once with the session and turn ids) or
*watches* a session (``turn/watch``); from then on the kernel sends it every event of that session's turns as a
``turn/event`` notification, in order, each with a per-session ``seq``. Many clients may watch one session: all
see the same events, any one that said it can approve may answer an ``approval.requested`` with
``turn/approve``, and all see the ``approval.resolved`` that follows. A turn ends with exactly one
``turn.ended`` event whose ``stop_reason`` says why.

Events and params are slotted dataclasses (cheap to build on the kernel's hot path); `parse_event` validates a
received event (`hologram._fields`, not pydantic: a client is often a new process per turn, `hologram ask`,
and pydantic's import alone costs it ~100 ms) and maps a type this version does not know to `UnknownEvent`,
so an older client keeps working against a newer kernel.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal

from hologram._fields import FieldError, build

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
    ``turn/watch`` to get the rest of a running turn's events (no gap, no repeat)."""

    session: str
    turn: str
    seq: int = 0


@dataclass(slots=True, kw_only=True)
class TurnStarted(_Event):
    type: Literal["turn.started"] = "turn.started"
    text: str = ""  # the input, as the client sent it
    client: str = ""  # who started it (`cli`, `web`, a plugin's name)


@dataclass(slots=True, kw_only=True)
class ContentDelta(_Event):
    type: Literal["content.delta"] = "content.delta"
    text: str = ""
    by: str | None = None  # a stage hook that answered in the model's place


@dataclass(slots=True, kw_only=True)
class ReasoningDelta(_Event):
    type: Literal["reasoning.delta"] = "reasoning.delta"
    text: str = ""


@dataclass(slots=True, kw_only=True)
class ToolCallStarted(_Event):
    """A call the model made that will run (or be asked about): its arguments as they will be used."""

    type: Literal["tool.call"] = "tool.call"
    call_id: str = ""
    tool: str = ""
    plugin: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True, kw_only=True)
class ToolOutput(_Event):
    """Live output of a running tool (shell, code), as it comes."""

    type: Literal["tool.output"] = "tool.output"
    call_id: str = ""
    text: str = ""
    stream: str = "stdout"


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


@dataclass(slots=True, kw_only=True)
class ApprovalResolved(_Event):
    type: Literal["approval.resolved"] = "approval.resolved"
    approval: str = ""
    call_id: str = ""
    approved: bool = False
    by: str = ""  # the client that answered, or "policy" / "kernel" (no one could be asked, timeout)
    reason: str = ""


@dataclass(slots=True, kw_only=True)
class ToolResult(_Event):
    type: Literal["tool.result"] = "tool.result"
    call_id: str = ""
    tool: str = ""
    content: str = ""  # at most the first 2,000 characters; the session holds all of it
    is_error: bool = False
    status: str = "ok"  # ok | error | denied | answered | invalid | unknown | skipped


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


@dataclass(slots=True, kw_only=True)
class TurnEnded(_Event):
    type: Literal["turn.ended"] = "turn.ended"
    stop_reason: StopReason = "answer"
    output: str = ""  # the delivered answer (after before_output hooks)
    steps: int = 0  # LLM calls made
    usage: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)


@dataclass(slots=True, kw_only=True)
class UnknownEvent(_Event):
    """An event type this client version does not know (a newer kernel): kept, not an error."""

    type: str = ""
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
EVENT_TYPES: dict[str, type[Any]] = {cls.__dataclass_fields__["type"].default: cls for cls in TurnEvent.__args__}
_FIELDS: dict[type[Any], tuple[str, ...]] = {}


def wire(event: Any) -> dict[str, Any]:
    """An event as it travels (a flat JSON object). Field lists are cached per class: this runs for every
    delta of every turn, and `dataclasses.asdict` deep-copies."""
    names = _FIELDS.get(type(event))
    if names is None:
        names = _FIELDS[type(event)] = tuple(f.name for f in dataclasses.fields(event))
    return {name: getattr(event, name) for name in names}


def parse_event(data: Any) -> TurnEvent | UnknownEvent:
    """A received event, validated. Raises `ValueError` naming the field when a known type is malformed."""
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
        event: TurnEvent = build(EVENT_TYPES[str(kind)], data)
    except FieldError as exc:
        raise ValueError(f"malformed {kind} event: {'.'.join(map(str, exc.loc)) or '(event)'}: {exc.msg}") from None
    return event


# -- params ---------------------------------------------------------------------------------------------------


def _scene_key_problem(key: str) -> str | None:
    """The grammar's check, imported when a turn declares a scene (the client's start-up stays lean)."""
    from hologram.memory.scene_features import scene_key_problem

    return scene_key_problem(key)


def _length(low: int | None = None, high: int | None = None) -> Any:
    """A string field's length bounds (checked by `hologram._fields`)."""
    bounds = {"min_length": low, "max_length": high}
    return {k: v for k, v in bounds.items() if v is not None}


@dataclass(frozen=True, slots=True, kw_only=True)
class _Params:
    """Params are frozen and forbid unknown keys: a misspelt option is an error, not silently ignored."""

    @classmethod
    def parse(cls, method: str, params: Any) -> Any:
        """Validated params, or `ValueError` naming the method, the field and what is wrong with it."""
        try:
            return build(cls, params if params is not None else {}, extra="forbid")
        except FieldError as exc:
            raise ValueError(f"{method}: {'.'.join(map(str, exc.loc)) or '(params)'}: {exc.msg}") from None


@dataclass(frozen=True, slots=True, kw_only=True)
class StartParams(_Params):
    """``turn/start``. ``approvals``: this client can answer approval requests (default false: a script with
    no person behind it is never asked, the call is denied). ``watch``: send this connection the turn's
    events. ``on_disconnect``: ``cancel`` (the default, like Ctrl-C) stops the turn when its last watcher goes
    away; ``continue`` lets it finish (a browser tab that will reconnect). ``scene``: the scene the turn happens
    in, declared by a channel that knows it (``chan:qq/peer:group_1``; the grammar is
    `hologram.memory.scene_features`, docs/scenes.md); ``partner``: who the turn is with (a user or group id of
    the channel). Both optional (since turn API version 1, a backward-compatible addition): memory prefers what
    happened in the same scene."""

    text: str = field(metadata=_length(1))
    session: str | None = None
    client: str = "client"
    approvals: bool = False
    watch: bool = True
    on_disconnect: OnDisconnect = "cancel"
    scene: str | None = field(default=None, metadata=_length(1, 200))
    partner: str | None = field(default=None, metadata=_length(1, 128))

    def __post_init__(self) -> None:
        if self.scene is not None:
            problem = _scene_key_problem(self.scene)
            if problem is not None:
                raise FieldError(("scene",), problem)


@dataclass(frozen=True, slots=True, kw_only=True)
class WatchParams(_Params):
    """``turn/watch``. ``after``: replay the running turn's events whose ``seq`` is greater (a client that
    reconnects passes the last one it saw); without it only new events come."""

    session: str = field(metadata=_length(1))
    after: int | None = None
    client: str = "client"
    approvals: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionParams(_Params):
    """``turn/unwatch``, ``turn/cancel``, ``sessions/read``, ``sessions/delete``."""

    session: str = field(metadata=_length(1))


@dataclass(frozen=True, slots=True, kw_only=True)
class RenameParams(_Params):
    session: str = field(metadata=_length(1))
    title: str = field(metadata=_length(high=200))


@dataclass(frozen=True, slots=True, kw_only=True)
class ApproveParams(_Params):
    """``turn/approve``: the answer to the ``approval.requested`` event with id ``approval``."""

    session: str = field(metadata=_length(1))
    approval: str = field(metadata=_length(1))
    approved: bool
    reason: str = ""
