"""The facility grammar shared by manifests, the resolver and the launcher.

A plugin *provides* `name` or `name@version` and *requires* `name`, `name@SPEC` or `name[@SPEC]:plugin`.
Versions and specifiers use PEP 440 (via `packaging`) so authors get the same rules as for Python
dependencies; a bare `@1` on a requirement means "compatible with 1" (`>=1,<2`), the common case.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

NAME_PATTERN = r"[a-z][a-z0-9_-]*"
FACILITY_PATTERN = rf"{NAME_PATTERN}(?:\.{NAME_PATTERN})*"
_NAME_RE = re.compile(rf"^{NAME_PATTERN}$")
_FACILITY_RE = re.compile(rf"^{FACILITY_PATTERN}$")
_BARE_VERSION_RE = re.compile(r"^\d+(?:\.\d+)*$")

KERNEL = "kernel"
KERNEL_FACILITY_VERSION = "1"
KERNEL_FACILITIES = ("events", "llm", "memory", "observe", "plugins", "sessions", "settings", "tools", "turns")


class FacilitySyntaxError(ValueError):
    """A facility string that does not follow the grammar; the message says what would."""


def is_valid_name(name: str) -> bool:
    return bool(_NAME_RE.match(name))


@dataclass(frozen=True, order=True)
class Provided:
    """A facility a plugin offers, optionally versioned (`notes.store@1`)."""

    name: str
    version: Version | None = None

    def __str__(self) -> str:
        return self.name if self.version is None else f"{self.name}@{self.version}"


@dataclass(frozen=True)
class Required:
    """A facility a plugin needs, with an optional version range and an optional chosen provider."""

    name: str
    spec: SpecifierSet | None = None
    provider: str | None = None

    def accepts(self, offer: Provided) -> bool:
        if offer.name != self.name:
            return False
        if self.spec is None:
            return True
        # An unversioned provider cannot promise any particular version.
        return offer.version is not None and self.spec.contains(offer.version, prereleases=True)

    def __str__(self) -> str:
        text = self.name
        if self.spec is not None:
            text += f"@{self.spec}"
        if self.provider is not None:
            text += f":{self.provider}"
        return text


def _check_name(text: str, name: str) -> None:
    if not _FACILITY_RE.match(name):
        raise FacilitySyntaxError(
            f"{text!r} is not a valid facility name: use dotted lowercase words like 'notes.store' "
            f"(each part matching {NAME_PATTERN})"
        )


@lru_cache(maxsize=65536)
def parse_provided(text: str) -> Provided:
    name, sep, version = text.partition("@")
    _check_name(text, name)
    if not sep:
        return Provided(name)
    try:
        return Provided(name, Version(version))
    except InvalidVersion:
        raise FacilitySyntaxError(
            f"{text!r} has an invalid version {version!r}: write a plain version such as 'notes.store@1'"
        ) from None


@lru_cache(maxsize=65536)
def parse_required(text: str) -> Required:
    body, colon, provider = text.partition(":")
    name, at, spec_text = body.partition("@")
    _check_name(text, name)
    if colon and not is_valid_name(provider):
        raise FacilitySyntaxError(f"{text!r} names an invalid provider {provider!r}: write 'facility:plugin-name'")
    spec: SpecifierSet | None = None
    if at:
        if _BARE_VERSION_RE.match(spec_text):
            major = int(spec_text.split(".")[0])
            spec_text = f">={spec_text},<{major + 1}"
        try:
            spec = SpecifierSet(spec_text)
        except InvalidSpecifier:
            raise FacilitySyntaxError(
                f"{text!r} has an invalid version range {spec_text!r}: write e.g. '{name}@>=1,<2' or '{name}@1'"
            ) from None
    return Required(name, spec, provider or None)


def kernel_provides() -> tuple[Provided, ...]:
    version = Version(KERNEL_FACILITY_VERSION)
    return tuple(Provided(f"{KERNEL}.{f}", version) for f in KERNEL_FACILITIES)
