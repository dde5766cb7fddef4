"""admin as a real subprocess (the conformance harness), with ``kernel.plugins`` and ``kernel.settings`` served by
the test as the kernel serves them; the redaction of ``kernel.settings`` ``get`` on real settings files
(hologram/kernel/settings_view.py). tests/e2e/test_agents_e2e.py runs the plugin under `hologram up`.

Mutation checks (done): ``redacted`` not descending into ``env`` tables turns
test_settings_never_show_a_secret red (the variable's value shown); ``is_secret`` without its hints turns it red.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hologram.config.settings import load_settings
from hologram.kernel.settings_view import settings_view
from hologram.rpc import UNKNOWN_NAME, RpcError
from hologram.sdk.testing import PluginHarness
from hologram.testing.conformance import check_conformance
from tests.kit.loop import run
from tests.plugins.helpers import MANIFESTS, err, ok

PLUGINS = [
    {"name": "web", "state": "ready", "pid": 11, "restarts": 0, "uptime_s": 5.0, "waiting_on": [], "provides": [],
     "requires": [], "tools": [{"name": "web_fetch"}], "last_error": None, "status": "", "config": {"x": 1}},
    {"name": "rss", "state": "crashed", "pid": None, "restarts": 3, "uptime_s": 0, "waiting_on": [], "provides": [],
     "requires": [], "tools": [], "last_error": "exited with code 1: boom", "status": ""},
]  # fmt: skip


class Kernel:
    def __init__(self) -> None:
        self.restarted: list[str] = []

    def list(self, caller: str) -> dict[str, Any]:
        return {"plugins": PLUGINS}

    def restart(self, caller: str, name: str = "") -> dict[str, Any]:
        if name not in {p["name"] for p in PLUGINS}:
            raise RpcError(UNKNOWN_NAME, f"no plugin named {name!r}; the plugins: rss, web")
        self.restarted.append(name)
        return {"ok": True}

    def settings(self, caller: str, section: str | None = None) -> dict[str, Any]:
        return {"section": section, "settings": {"max_steps": 16}} if section else {"settings": {"agent": {}}}


def admin(kernel: Kernel) -> PluginHarness:
    return PluginHarness.from_manifest(
        MANIFESTS / "admin.toml",
        provide={
            "kernel.plugins": {"list": kernel.list, "restart": kernel.restart},
            "kernel.settings": {"get": kernel.settings},
        },
    )


def test_plugins_list_restart_and_settings() -> None:
    async def go() -> None:
        kernel = Kernel()
        async with admin(kernel) as h:
            listed = ok(await h.call_tool("plugins_list"))
            head, body = listed.split("\n", 1)
            assert head == "2 plugin(s); not ready: rss"
            rss = json.loads(body)[1]
            assert rss == {"name": "rss", "state": "crashed", "restarts": 3, "uptime_s": 0,
                           "last_error": "exited with code 1: boom", "tools": 0}  # fmt: skip
            assert "config" not in body
            assert "no plugin named 'nope'; the plugins: rss, web" in err(
                await h.call_tool("plugins_list", {"name": "nope"})
            )
            assert ok(await h.call_tool("plugin_restart", {"name": "rss"})).startswith("rss restarted; now crashed")
            assert kernel.restarted == ["rss"]
            assert "no plugin named 'x'" in err(await h.call_tool("plugin_restart", {"name": "x"}))
            got = json.loads(ok(await h.call_tool("settings_get", {"section": "agent"})))
            assert got == {"section": "agent", "settings": {"max_steps": 16}}

    run(go())


def test_plugin_restart_needs_approval_in_the_lock() -> None:
    """The kernel asks before the call reaches the plugin; the manifest is what says so (the lock copies it)."""
    import tomli

    tools = {t["name"]: t for t in tomli.loads((MANIFESTS / "admin.toml").read_text())["tools"]}
    assert tools["plugin_restart"]["needs_approval"] is True and tools["plugin_restart"]["approval_subject"] == "name"
    assert not tools["plugins_list"].get("needs_approval") and not tools["settings_get"].get("needs_approval")


def test_settings_never_show_a_secret(tmp_path: Path) -> None:
    (tmp_path / "settings.toml").write_text(
        """
[agent]
max_steps = 5

[[providers]]
name = "main"
kind = "deepseek"
base_url = "https://api.deepseek.com"
api_key = "sk-SECRET-1"
model = "deepseek-chat"

[[providers]]
name = "backup"
kind = "openai"
base_url = "http://127.0.0.1:9/v1"
api_key_env = "BACKUP_KEY"
model = "m"

[plugins.qq]
access_token = "SECRET-2"
admins = [1]
env = { NAPCAT_PASSWORD = "SECRET-3", LOG_LEVEL = "debug" }
pass_env = ["GITHUB_TOKEN"]
""",
        encoding="utf-8",
    )
    (tmp_path / "settings.toml").chmod(0o600)
    settings = load_settings(tmp_path)
    whole = json.dumps(settings_view(settings))
    assert "SECRET" not in whole
    view = settings_view(settings)["settings"]
    assert view["agent"]["max_steps"] == 5
    assert view["providers"][0]["api_key"] == {"set": True}
    assert view["providers"][1]["api_key_env"] == "BACKUP_KEY"
    assert view["plugins"]["qq"]["access_token"] == {"set": True}
    assert view["plugins"]["qq"]["env"] == {"NAPCAT_PASSWORD": {"set": True}, "LOG_LEVEL": {"set": True}}
    assert view["plugins"]["qq"]["pass_env"] == ["GITHUB_TOKEN"] and view["plugins"]["qq"]["admins"] == [1]
    assert settings_view(settings, "plugins.qq")["settings"]["admins"] == [1]
    with pytest.raises(KeyError, match=r"section 'plugins.web': plugins has no 'web' \(it has: qq\)"):
        settings_view(settings, "plugins.web")


def test_the_conformance_kit_passes() -> None:
    kernel = Kernel()
    report = check_conformance(
        MANIFESTS / "admin.toml",
        provide={
            "kernel.plugins": {"list": kernel.list, "restart": kernel.restart},
            "kernel.settings": {"get": kernel.settings},
        },
    )
    assert report.ok, report.render()
