"""What a plugin inherits of the kernel's environment: enough to run, nothing that authenticates.

The kernel's environment holds the provider keys (``api_key_env``), and plugins are code the user may not
have written. Every plugin process — spawned directly or forked from the zygote, whose memory a forked
child inherits — starts from `scrubbed_environ`, then gets what its manifest (``run.env``) and the user's
settings (``[plugins.NAME] env`` and ``pass_env``) give it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

#: Variables a plugin inherits from the kernel: what a program needs to run (paths, locale, time zone,
#: temp dir, certificates, proxies) and nothing that authenticates. Provider keys (DEEPSEEK_API_KEY …),
#: tokens and everything else stay in the kernel; a plugin that needs one is given it by name
#: (``[plugins.NAME] pass_env = ["GITHUB_TOKEN"]`` in settings.toml) or by value (``run.env``, ``env``).
INHERITED = frozenset(
    {
        "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TERM", "TMPDIR", "TEMP", "TMP",
        "PYTHONPATH", "PYTHONHOME", "PYTHONHASHSEED", "PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX",
        "PYTHONWARNINGS", "PYTHONDEVMODE", "PYTHONUTF8", "VIRTUAL_ENV",
        "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
        "http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "all_proxy",
        "HOLOGRAM_EVENT_LOOP", "HOLOGRAM_ZYGOTE",
    }
)  # fmt: skip
INHERITED_PREFIXES = ("LC_", "XDG_")


PLUGIN_FIXED_ENV = {"PYTHONUNBUFFERED": "1"}  # set for every plugin, over what the manifest says


def scrubbed_environ(source: Mapping[str, str] | None = None) -> dict[str, str]:
    """The kernel's environment with only the `INHERITED` variables kept (issue 10: plugins inherited it
    whole, provider keys included)."""
    env = os.environ if source is None else source
    return {k: v for k, v in env.items() if k in INHERITED or k.startswith(INHERITED_PREFIXES)}


def split_environment(table: Mapping[str, object]) -> tuple[dict[str, object], dict[str, str]]:
    """A ``[plugins.NAME]`` table of settings.toml as (configuration, extra environment).

    ``env = {NAME = "value"}`` sets variables; ``pass_env = ["NAME", …]`` passes the kernel's own values of
    those variables (a missing one is left out). Neither reaches the plugin's configuration."""
    config = {k: v for k, v in table.items() if k not in ("env", "pass_env")}
    extra: dict[str, str] = {}
    names = table.get("pass_env") or []
    for name in names if isinstance(names, list) else []:
        value = os.environ.get(str(name))
        if value is not None:
            extra[str(name)] = value
    values = table.get("env") or {}
    if isinstance(values, Mapping):
        extra.update({str(k): str(v) for k, v in values.items()})
    return config, extra
