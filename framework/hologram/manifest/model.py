"""The plugin manifest: a public contract, so the model is strict and every field is documented.

Unknown keys are errors (``_extra = "forbid"``) because a typo in a manifest (`require = [...]`) would
otherwise silently drop a dependency and surface much later as a confusing start-up order.

Frozen dataclasses validated by `hologram._fields` in its strict mode (TOML's types as written: ``"30"`` is
not a number, ``1`` is not a bool). Not pydantic: `hologram up` reads every manifest its lock names to check
the lock is current, and the lock itself carries `RunSpec`, `Start` and `StageHook`, so these models are on
the kernel's start-up path (docs/performance.md). The descriptions in the fields' metadata are published in
docs/manifest.schema.json (`hologram.manifest.schema`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from packaging.version import InvalidVersion, Version

from hologram._fields import meta
from hologram._model import Model
from hologram.facility import (
    FACILITY_PATTERN,
    KERNEL,
    NAME_PATTERN,
    FacilitySyntaxError,
    Provided,
    Required,
    parse_provided,
    parse_required,
)
from hologram.protocol import STAGE_NAMES
from hologram.schema_check import schema_problem  # jsonschema only for a schema outside the common subset

MANIFEST_VERSION = 1
TOOL_STAGES = frozenset({"before_toolcall", "after_toolcall"})
TOOL_NAME_PATTERN = r"^[a-zA-Z0-9_-]{1,64}$"


class _Strict(Model):
    __slots__ = ()
    _strict = True


@dataclass(frozen=True, slots=True, kw_only=True)
class RunSpec(_Strict):
    """How the plugin runs: exactly one of `module`, `command` or `inproc`."""

    module: str | None = field(
        default=None, metadata=meta(description="Python module run as `python -m MODULE` in a separate process.")
    )
    command: list[str] | None = field(
        default=None,
        metadata=meta(min_length=1, description="Any executable and its arguments, e.g. ['node', 'main.js']."),
    )
    inproc: str | None = field(
        default=None,
        metadata=meta(description="Python module imported into the kernel process (trusted, hot-path plugins)."),
    )
    env: dict[str, str] = field(default_factory=dict, metadata=meta(description="Extra environment variables."))

    def _check_model(self) -> None:
        chosen = [k for k in ("module", "command", "inproc") if getattr(self, k) is not None]
        if len(chosen) != 1:
            raise ValueError(
                f"set exactly one of 'module', 'command' or 'inproc' (found {', '.join(chosen) if chosen else 'none'})"
            )

    @property
    def kind(self) -> Literal["module", "command", "inproc"]:
        if self.module is not None:
            return "module"
        return "command" if self.command is not None else "inproc"


def _not_reserved(name: str) -> str:
    if name == KERNEL:
        raise ValueError("'kernel' is reserved for the kernel node; choose another plugin name")
    return name


def _pep440(version: str) -> str:
    try:
        Version(version)
    except InvalidVersion:
        raise ValueError(f"{version!r} is not a valid version: write e.g. '0.1.0'") from None
    return version


@dataclass(frozen=True, slots=True, kw_only=True)
class PluginInfo(_Strict):
    name: str = field(
        metadata=meta(
            pattern=rf"^{NAME_PATTERN}$",
            max_length=64,
            check=_not_reserved,
            description="Unique plugin name: lowercase letters, digits, '-' and '_', starting with a letter.",
        )
    )
    version: str = field(metadata=meta(check=_pep440, description="The plugin's version (PEP 440, e.g. '0.1.0')."))
    description: str = field(default="", metadata=meta(description="One line for humans; does not affect the lock."))
    run: RunSpec


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


def _provides(values: list[str]) -> list[str]:
    _check_all(values, parse_provided)
    for text in values:
        if text.split("@")[0].split(".")[0] == KERNEL:
            raise ValueError(f"{text!r}: facilities under 'kernel.' are provided by the kernel only")
    return values


def _requires(values: list[str]) -> list[str]:
    return _check_all(values, parse_required)


# For editors only (the validators above give the precise message): the shapes of the facility grammar.
_PROVIDED_PATTERN = rf"^{FACILITY_PATTERN}(@[0-9][0-9A-Za-z.+!-]*)?$"
_REQUIRED_PATTERN = rf"^{FACILITY_PATTERN}(@[^:]+)?(:{NAME_PATTERN})?$"


def _items(pattern: str) -> dict[str, Any]:
    return {"items": {"type": "string", "pattern": pattern}}


@dataclass(frozen=True, slots=True, kw_only=True)
class Facilities(_Strict):
    provides: list[str] = field(
        default_factory=list,
        metadata=meta(
            check=_provides,
            description="Facilities this plugin offers: 'name' or 'name@version'.",
            schema=_items(_PROVIDED_PATTERN),
        ),
    )
    requires: list[str] = field(
        default_factory=list,
        metadata=meta(
            check=_requires,
            description="Facilities that must be provided by someone: 'name', 'name@>=1,<2', 'name:plugin'.",
            schema=_items(_REQUIRED_PATTERN),
        ),
    )
    after_if_present: list[str] = field(
        default_factory=list,
        metadata=meta(
            check=_requires,
            description="Ordering only: start after these if some plugin provides them.",
            schema=_items(_REQUIRED_PATTERN),
        ),
    )

    def provided(self) -> list[Provided]:
        return [parse_provided(t) for t in self.provides]

    def required(self) -> list[Required]:
        return [parse_required(t) for t in self.requires]

    def optional(self) -> list[Required]:
        return [parse_required(t) for t in self.after_if_present]


@dataclass(frozen=True, slots=True, kw_only=True)
class StageHook(_Strict):
    order: int = field(default=100, metadata=meta(description="Lower runs first; ties are broken by plugin name."))
    scope: Literal["all", "own_tools"] = field(
        default="all",
        metadata=meta(description="For tool stages: 'own_tools' sees only calls to this plugin's tools."),
    )
    timeout_s: float = field(
        default=10.0, metadata=meta(gt=0, description="A hook slower than this is skipped and recorded.")
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Stages(_Strict):
    on_input: StageHook | None = None
    pre_action: StageHook | None = None
    post_action: StageHook | None = None
    before_toolcall: StageHook | None = None
    after_toolcall: StageHook | None = None
    before_output: StageHook | None = None
    after_output: StageHook | None = None

    def _check_model(self) -> None:
        for name in STAGE_NAMES:
            hook = getattr(self, name)
            if hook is not None and hook.scope == "own_tools" and name not in TOOL_STAGES:
                raise ValueError(f"{name}: scope 'own_tools' only applies to before_toolcall and after_toolcall")

    def hooked(self) -> dict[str, StageHook]:
        return {n: h for n in STAGE_NAMES if (h := getattr(self, n)) is not None}


def _object_schema(schema: dict[str, Any]) -> dict[str, Any]:
    if schema.get("type") != "object":
        raise ValueError('the parameters schema must have type = "object"')
    problem = schema_problem(schema)
    if problem is not None:
        raise ValueError(f"not a valid JSON Schema: {problem}")
    return schema


def _no_parameters() -> dict[str, Any]:
    return {"type": "object", "properties": {}}


@dataclass(frozen=True, slots=True, kw_only=True)
class Tool(_Strict):
    name: str = field(
        metadata=meta(
            pattern=TOOL_NAME_PATTERN,
            description="Model-visible tool name: letters, digits, '_' and '-', at most 64 characters.",
        )
    )
    description: str = field(metadata=meta(min_length=1, description="What the tool does, written for the model."))
    parallel_safe: bool = field(
        default=False,
        metadata=meta(description="True if calls may run concurrently with other parallel-safe calls."),
    )
    parameters: dict[str, Any] = field(
        default_factory=_no_parameters,
        metadata=meta(check=_object_schema, description="JSON Schema of the arguments; must be of type 'object'."),
    )
    needs_approval: bool = field(
        default=False,
        metadata=meta(
            description="True if each call needs the user's approval first (asked by the kernel; see [approvals])."
        ),
    )
    approval_subject: str | None = field(
        default=None,
        metadata=meta(
            description="The argument a person reads when asked, and the [approvals] allow-list matches "
            "(e.g. 'command')."
        ),
    )
    deferred: bool = field(
        default=False,
        metadata=meta(
            description="True if the model is sent only the tool's name until it loads the tool (tools_load): for "
            "tools most requests do not use, so their schemas are not paid for on every request."
        ),
    )

    def _check_model(self) -> None:
        if self.approval_subject is not None:
            properties = self.parameters.get("properties") or {}
            if self.approval_subject not in properties:
                known = ", ".join(sorted(properties)) or "none"
                raise ValueError(
                    f"approval_subject {self.approval_subject!r} is not one of the tool's parameters ({known})"
                )
            if not self.needs_approval:
                raise ValueError("approval_subject is set but needs_approval is not; add needs_approval = true")


@dataclass(frozen=True, slots=True, kw_only=True)
class Start(_Strict):
    timeout_s: float = field(default=30.0, metadata=meta(gt=0, description="Not ready by then: start failed."))
    restart: Literal["never", "on-failure", "always"] = field(
        default="on-failure", metadata=meta(description="Restart policy after the process exits.")
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Manifest(_Strict):
    """A plugin manifest (`manifests/NAME.toml`)."""

    schema_title: ClassVar[str] = "Hologram plugin manifest"
    schema_id: ClassVar[str] = "https://hologram.dev/schema/manifest-1.json"

    manifest_version: Literal[1] = field(
        default=1, metadata=meta(description="Version of this manifest format; currently 1.")
    )
    plugin: PluginInfo
    facilities: Facilities = field(default_factory=Facilities)
    stages: Stages = field(default_factory=Stages)
    tools: list[Tool] = field(default_factory=list)
    start: Start = field(default_factory=Start)
    config: dict[str, Any] = field(
        default_factory=dict, metadata=meta(description="Default configuration handed to the plugin at initialize.")
    )

    def _check_model(self) -> None:
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


def relevant_content(manifest: Manifest) -> dict[str, Any]:
    """The part of a manifest that affects the lock: everything but the plugin's human-facing description.
    Tool descriptions count: the model reads them, and the lock carries them to `hologram up`."""
    data = manifest.model_dump(mode="json")
    data["plugin"].pop("description", None)
    return data
