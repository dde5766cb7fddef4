"""The plugin manifest: a public contract, so the model is strict and every field is documented.

Unknown keys are errors (`extra="forbid"`) because a typo in a manifest (`require = [...]`) would otherwise
silently drop a dependency and surface much later as a confusing start-up order.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from packaging.version import InvalidVersion, Version
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from hologram.base.protocol import STAGE_NAMES
from hologram.manifest.facility import (
    FACILITY_PATTERN,
    KERNEL,
    NAME_PATTERN,
    FacilitySyntaxError,
    Provided,
    Required,
    parse_provided,
    parse_required,
)
from hologram.manifest.schema_check import schema_problem  # jsonschema only for a schema outside the common subset
from hologram.tools.policy import GRAMMAR, check_entries

MANIFEST_VERSION = 1
TOOL_STAGES = frozenset({"before_toolcall", "after_toolcall"})
TOOL_NAME_PATTERN = r"^[a-zA-Z0-9_-]{1,64}$"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class RunSpec(_Strict):
    """How the plugin runs: exactly one of `module`, `command` or `inproc`."""

    module: str | None = Field(None, description="Python module run as `python -m MODULE` in a separate process.")
    command: list[str] | None = Field(
        None, min_length=1, description="Any executable and its arguments, e.g. ['node', 'main.js']."
    )
    inproc: str | None = Field(
        None, description="Python module imported into the kernel process (trusted, hot-path plugins)."
    )
    env: dict[str, str] = Field(default_factory=dict, description="Extra environment variables.")

    @model_validator(mode="after")
    def _exactly_one(self) -> RunSpec:
        chosen = [k for k in ("module", "command", "inproc") if getattr(self, k) is not None]
        if len(chosen) != 1:
            raise ValueError(
                f"set exactly one of 'module', 'command' or 'inproc' (found {', '.join(chosen) if chosen else 'none'})"
            )
        return self

    @property
    def kind(self) -> Literal["module", "command", "inproc"]:
        if self.module is not None:
            return "module"
        return "command" if self.command is not None else "inproc"


class PluginInfo(_Strict):
    name: Annotated[str, Field(pattern=rf"^{NAME_PATTERN}$", max_length=64)] = Field(
        description="Unique plugin name: lowercase letters, digits, '-' and '_', starting with a letter; "
        "'kernel' is reserved."
    )
    version: str = Field(description="The plugin's version (PEP 440, e.g. '0.1.0').")
    description: str = Field("", description="One line for humans; does not affect the lock.")
    run: RunSpec
    config_schema: Annotated[str, Field(pattern=r"^[A-Za-z0-9_][A-Za-z0-9_./-]*\.json$")] | None = Field(
        None,
        description=(
            "The JSON Schema of the plugin's configuration, a file beside the manifest (e.g. "
            "'notes.config.schema.json'): written from the SDK plugin's `Plugin(config=Model)` by "
            "`hologram check --write`, copied into the lock by `hologram build` for the web UI."
        ),
    )

    @field_validator("name")
    @classmethod
    def _not_reserved(cls, name: str) -> str:
        if name == KERNEL:
            raise ValueError("'kernel' is reserved for the kernel node; choose another plugin name")
        return name

    @field_validator("config_schema")
    @classmethod
    def _beside_the_manifest(cls, path: str | None) -> str | None:
        if path is not None and ".." in path.split("/"):
            raise ValueError(f"{path!r} leaves the manifest's directory; name a file beside or below it")
        return path

    @field_validator("version")
    @classmethod
    def _pep440(cls, version: str) -> str:
        try:
            Version(version)
        except InvalidVersion:
            raise ValueError(f"{version!r} is not a valid version: write e.g. '0.1.0'") from None
        return version


def _check_all(values: list[str], parse: Any) -> list[str]:
    for text in values:
        try:
            parse(text)
        except FacilitySyntaxError as exc:
            raise ValueError(str(exc)) from None
    if len(set(values)) != len(values):
        dupes = sorted({v for v in values if values.count(v) > 1})
        raise ValueError(f"listed twice: {', '.join(dupes)}")
    return values


# For editors only (the validators below give the precise message): the shapes of the facility grammar.
_PROVIDED_PATTERN = rf"^{FACILITY_PATTERN}(@[0-9][0-9A-Za-z.+!-]*)?$"
_REQUIRED_PATTERN = rf"^{FACILITY_PATTERN}(@[^:]+)?(:{NAME_PATTERN})?$"


def _items(pattern: str) -> dict[str, Any]:
    return {"items": {"type": "string", "pattern": pattern}}


class Facilities(_Strict):
    provides: list[str] = Field(
        default_factory=list,
        description="Facilities this plugin offers: 'name' or 'name@version'.",
        json_schema_extra=_items(_PROVIDED_PATTERN),
    )
    requires: list[str] = Field(
        default_factory=list,
        description="Facilities that must be provided by someone: 'name', 'name@>=1,<2', 'name:plugin'.",
        json_schema_extra=_items(_REQUIRED_PATTERN),
    )
    after_if_present: list[str] = Field(
        default_factory=list,
        description="Ordering only: start after these if some plugin provides them.",
        json_schema_extra=_items(_REQUIRED_PATTERN),
    )

    @field_validator("provides")
    @classmethod
    def _provides(cls, values: list[str]) -> list[str]:
        _check_all(values, parse_provided)
        for text in values:
            if text.split("@")[0].split(".")[0] == KERNEL:
                raise ValueError(f"{text!r}: facilities under 'kernel.' are provided by the kernel only")
        return values

    @field_validator("requires", "after_if_present")
    @classmethod
    def _requires(cls, values: list[str]) -> list[str]:
        return _check_all(values, parse_required)

    def provided(self) -> list[Provided]:
        return [parse_provided(t) for t in self.provides]

    def required(self) -> list[Required]:
        return [parse_required(t) for t in self.requires]

    def optional(self) -> list[Required]:
        return [parse_required(t) for t in self.after_if_present]


class StageHook(_Strict):
    order: int = Field(100, description="Lower runs first; ties are broken by plugin name.")
    scope: Literal["all", "own_tools"] = Field(
        "all", description="For tool stages: 'own_tools' sees only calls to this plugin's tools."
    )
    timeout_s: float = Field(10.0, gt=0, description="A hook slower than this is skipped and recorded.")


class Stages(_Strict):
    on_input: StageHook | None = None
    pre_action: StageHook | None = None
    post_action: StageHook | None = None
    before_toolcall: StageHook | None = None
    after_toolcall: StageHook | None = None
    before_output: StageHook | None = None
    after_output: StageHook | None = None

    @model_validator(mode="after")
    def _scope_only_on_tool_stages(self) -> Stages:
        for name in STAGE_NAMES:
            hook = getattr(self, name)
            if hook is not None and hook.scope == "own_tools" and name not in TOOL_STAGES:
                raise ValueError(f"{name}: scope 'own_tools' only applies to before_toolcall and after_toolcall")
        return self

    def hooked(self) -> dict[str, StageHook]:
        return {n: h for n in STAGE_NAMES if (h := getattr(self, n)) is not None}


class Tool(_Strict):
    name: Annotated[str, Field(pattern=TOOL_NAME_PATTERN)] = Field(
        description="Model-visible tool name: letters, digits, '_' and '-', at most 64 characters."
    )
    description: str = Field(min_length=1, description="What the tool does, written for the model.")
    parallel_safe: bool = Field(False, description="True if calls may run concurrently with other parallel-safe calls.")
    parameters: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object", "properties": {}},
        description="JSON Schema of the arguments; must be of type 'object'. Default: an object without properties.",
    )
    needs_approval: bool = Field(
        False,
        description="True if each call needs the user's approval first (asked by the kernel; see [approvals]).",
    )
    approval_subject: str | None = Field(
        None,
        description="The argument a person reads when asked, and the [approvals] allow-list matches (e.g. 'command').",
    )
    deferred: bool = Field(
        False,
        description="True if the model is sent only the tool's name until it loads the tool (tools_load): for "
        "tools most requests do not use, so their schemas are not paid for on every request.",
    )
    effect: Literal["read", "write", "execute", "send", "manage"] | None = Field(
        None,
        description="What a call does: 'read' (only reads — files, notes, the web, memory — and changes nothing), "
        "'write' (changes what is kept: files, notes, the calendar), 'execute' (runs commands or code), 'send' "
        "(sends messages to others), 'manage' (changes Hologram itself). A channel's tool policy offers tools by "
        "it (@read: docs/settings.md, [channels]); unset, the tool is treated as one that may change things.",
    )

    @model_validator(mode="after")
    def _subject_is_a_parameter(self) -> Tool:
        if self.approval_subject is not None:
            properties = self.parameters.get("properties") or {}
            if self.approval_subject not in properties:
                known = ", ".join(sorted(properties)) or "none"
                raise ValueError(
                    f"approval_subject {self.approval_subject!r} is not one of the tool's parameters ({known})"
                )
            if not self.needs_approval:
                raise ValueError("approval_subject is set but needs_approval is not; add needs_approval = true")
        return self

    @field_validator("parameters")
    @classmethod
    def _object_schema(cls, schema: dict[str, Any]) -> dict[str, Any]:
        if schema.get("type") != "object":
            raise ValueError('the parameters schema must have type = "object"')
        problem = schema_problem(schema)
        if problem is not None:
            raise ValueError(f"not a valid JSON Schema: {problem}")
        return schema


class Start(_Strict):
    timeout_s: float = Field(30.0, gt=0, description="Not ready by then: start failed.")
    restart: Literal["never", "on-failure", "always"] = Field(
        "on-failure", description="Restart policy after the process exits."
    )
    lazy: bool = Field(
        False,
        description="True: `hologram up` does not start the plugin; the first call of one of its tools does (its "
        "manifest's [[tools]] are offered meanwhile). For plugins that only answer tool calls: started at once "
        "anyway if it has stage hooks or another plugin requires (or orders itself after) its facilities.",
    )


class ChannelDefaults(_Strict):
    """``[channel]``: for a plugin that starts turns for other people through ``kernel.turns`` (a chat channel)."""

    tools: list[str] = Field(
        description="The tool policy of the turns this plugin starts, unless settings.toml's [channels.NAME] says "
        f"otherwise: each entry is {GRAMMAR}. ['@read'] offers only the tools that read."
    )

    @field_validator("tools")
    @classmethod
    def _entries(cls, tools: list[str]) -> list[str]:
        return check_entries(tools)


class Manifest(_Strict):
    """A plugin manifest (`manifests/NAME.toml`)."""

    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        frozen=True,
        json_schema_extra={"$id": "https://hologram.dev/schema/manifest-1.json"},
        title="Hologram plugin manifest",
    )

    manifest_version: Literal[1] = Field(1, description="Version of this manifest format; currently 1.")
    plugin: PluginInfo
    facilities: Facilities = Field(default_factory=lambda: Facilities())
    stages: Stages = Field(default_factory=lambda: Stages())
    tools: list[Tool] = Field(
        default_factory=list,
        description="Model-callable tools, one [[tools]] table each (a plugin may register more at start); "
        "each call's arguments are validated against its parameters before the plugin receives it.",
    )
    start: Start = Field(default_factory=lambda: Start())
    channel: ChannelDefaults | None = Field(
        None,
        description="For a channel plugin: the default tool policy of the turns it starts (the kernel applies it; "
        "absent: every tool, as the web page and the CLI have).",
    )
    config: dict[str, Any] = Field(
        default_factory=dict, description="Default configuration handed to the plugin at initialize."
    )

    @model_validator(mode="after")
    def _consistent(self) -> Manifest:
        names = [t.name for t in self.tools]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"tools: duplicate tool name(s) {', '.join(dupes)}")
        offered = {p.name for p in self.facilities.provided()}
        for req in self.facilities.required():
            if req.name in offered:
                raise ValueError(
                    f"facilities.requires: {str(req)!r} is provided by this plugin itself; "
                    "a plugin cannot require its own facility"
                )
        if self.plugin.run.inproc is not None and self.plugin.run.env:
            raise ValueError("plugin.run.env cannot be used with inproc plugins (they share the kernel)")
        return self


def relevant_content(manifest: Manifest) -> dict[str, Any]:
    """The part of a manifest that affects the lock: everything but the plugin's human-facing description.
    Tool descriptions count: the model reads them, and the lock carries them to `hologram up`."""
    data = manifest.model_dump(mode="json", exclude_defaults=False)
    data["plugin"].pop("description", None)
    # fields added later count only where set: a manifest without them keeps the hash (and its lock stays fresh)
    if data.get("channel") is None:
        data.pop("channel", None)
    for tool in data.get("tools") or []:
        if tool.get("effect") is None:
            tool.pop("effect", None)
    return data
