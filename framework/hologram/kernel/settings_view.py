"""``kernel.settings`` ``get``: the settings the kernel runs with, as data a model or a page may read — never a secret.

What the self-management tools (the admin plugin's ``settings_get``) show the model, so it can see why something
behaves as it does. A secret is replaced by ``{"set": bool}`` wherever it sits: a provider's ``api_key``, any key
whose name says token, secret, password or key (``SECRET_HINTS``, as kernel.plugins ``list`` hides a plugin's
config), and every value of a ``[plugins.NAME] env`` table (environment variables carry credentials). The names of
``api_key_env`` and ``pass_env`` variables are shown: they name where a secret is, not what it is.
"""

from __future__ import annotations

from typing import Any

from hologram.config.settings import Settings

SECRET_HINTS = ("token", "secret", "password", "passwd", "api_key", "apikey", "credential", "private_key")
NOT_SECRET = frozenset({"api_key_env", "pass_env", "max_tokens", "context_window"})
SECTIONS = ("agent", "llm", "delivery", "media", "approvals", "channels", "memory", "log", "providers", "plugins")


def is_secret(key: str) -> bool:
    lowered = key.lower()
    return lowered not in NOT_SECRET and any(hint in lowered for hint in SECRET_HINTS)


def redacted(value: Any, *, env: bool = False) -> Any:
    """``value`` with every secret replaced by ``{"set": bool}`` (``env``: every value is one)."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if env or (is_secret(str(key)) and not isinstance(item, dict | list)):
                out[key] = {"set": item not in (None, "")}
            else:
                out[key] = redacted(item, env=str(key) == "env")
        return out
    if isinstance(value, list):
        return [redacted(item) for item in value]
    return value


def settings_view(settings: Settings, section: str | None = None) -> dict[str, Any]:
    """The whole settings, or one ``section`` (``agent``, ``plugins``, or a dotted path such as ``plugins.web``);
    raises `KeyError` with what exists when the path does not."""
    data = redacted(settings.model_dump(mode="json"))
    if not section:
        return {"settings": data, "file": str(settings.path) if settings.path else None}
    node: Any = data
    walked: list[str] = []
    for part in section.split("."):
        if not isinstance(node, dict) or part not in node:
            where = ".".join(walked) or "the settings"
            known = ", ".join(sorted(node)) if isinstance(node, dict) else "nothing below it"
            raise KeyError(f"section {section!r}: {where} has no {part!r} (it has: {known or 'nothing'})")
        node = node[part]
        walked.append(part)
    return {"section": section, "settings": node}
