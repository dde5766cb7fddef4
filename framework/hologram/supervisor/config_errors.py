"""A plugin's refusal of its configuration, told as the file, line and key the user has to fix.

The plugin validates its configuration itself (`Plugin(config=Model)`, hologram/sdk/_runtime.py): only its
process has the model. It answers ``initialize`` with `CONFIG_INVALID` and each problem's key path and
message, never the value. Which file the value came from only the kernel knows: settings.toml's
``[plugins.NAME]`` is layered over the manifest's ``[config]`` defaults (the lock's copy of them), so a key
the user set is named in settings.toml, a default the user did not override in the manifest, and a required
key nobody set where the user would add it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hologram.manifest.locate import locate


def _text(path: Path | None) -> str | None:
    if path is None:
        return None
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):  # the error is still named by file and key, without a line
        return None


def _where(path: Path | str, text: str | None, loc: Sequence[str | int]) -> str:
    line = locate(text, loc) if text is not None else None
    return f"{path}:{line}" if line else str(path)


def describe_config_errors(
    plugin: str,
    errors: Sequence[Any],
    *,
    overrides: Mapping[str, Any],
    defaults: Mapping[str, Any],
    settings_path: Path | None,
    manifest_path: Path | None,
) -> str:
    """One ``FILE:LINE: KEY: message`` per problem, joined by ``; `` (a plugin's state reason is one line)."""
    settings_name: Path | str = settings_path or "settings.toml"
    settings_text = _text(settings_path)
    manifest_text: str | None = None
    told: list[str] = []
    for error in errors:
        if not isinstance(error, Mapping):
            continue
        loc = [p for p in error.get("loc") or [] if isinstance(p, (str, int))]
        key = ".".join(str(p) for p in loc)
        message = str(error.get("msg") or "invalid value")
        if error.get("type") == "extra_forbidden":
            message = "unknown key (the plugin's configuration has no such setting)"
        head = loc[0] if loc else None
        if head in overrides or head not in defaults:
            # set in settings.toml, or set nowhere (required, no default): settings.toml is where it goes
            found = head in overrides
            where = _where(settings_name, settings_text, ["plugins", plugin, *loc] if found else ["plugins", plugin])
            hint = "" if found else f" (add `{key} = …` under [plugins.{plugin}] in settings.toml)"
            told.append(f"{where}: plugins.{plugin}.{key}: {message}{hint}")
        else:
            if manifest_text is None:
                manifest_text = _text(manifest_path) or ""
            where = _where(manifest_path or "the plugin's manifest", manifest_text or None, ["config", *loc])
            told.append(
                f"{where}: config.{key}: {message} (the manifest's default; "
                f"override it as plugins.{plugin}.{key} in settings.toml)"
            )
    return "; ".join(told)
