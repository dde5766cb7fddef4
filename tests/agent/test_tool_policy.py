"""Which policy a turn gets (hologram/agent/tool_policy.py) and the policy grammar, on real settings files and a
real lock: settings' peer table, then the channel's table, then the channel manifest's ``[channel] tools``, then
every tool; effects read from the lock, never from what a plugin registers. A bad entry is an error naming the
file, line and key.

Mutation check (done): `ChannelPolicies.for_turn` looking the peer up by the partner only (not the scene's peer)
turns ``test_the_first_policy_found_wins`` red.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hologram.agent.tool_policy import ChannelPolicies, peer_of
from hologram.base.errors import HologramError
from hologram.config.settings import load_settings
from hologram.manifest import load_manifest
from hologram.manifest.discovery import builtin_manifest_dir
from hologram.plan.lock import Lock, read_lock
from hologram.tools.policy import ToolPolicy
from tests.kit.manifests import write_manifest
from tests.kit.providers import write_settings

CHANNEL_MANIFEST_EXTRA = """
[channel]
tools = ["@read"]

[[tools]]
name = "peek"
effect = "read"
description = "reads"

[[tools]]
name = "poke"
effect = "write"
description = "writes"

[[tools]]
name = "mystery"
description = "says nothing of its effect"
"""


def build_lock(tmp_path: Path) -> Lock:
    import subprocess
    import sys

    manifests = tmp_path / "manifests"
    write_manifest(manifests, "chat", extra=CHANNEL_MANIFEST_EXTRA)
    out = tmp_path / "hologram.lock"
    subprocess.run(
        [sys.executable, "-m", "hologram", "build", "--no-discover", "-m", str(manifests), "-o", str(out)], check=True
    )
    return read_lock(out)


def test_the_first_policy_found_wins(tmp_path: Path) -> None:
    lock = build_lock(tmp_path)
    write_settings(
        tmp_path / "settings.toml",
        '[channels.chat]\ntools = ["peek", "notes_*"]\n[channels.chat.peers.group_1]\ntools = ["*"]\n'
        '[channels.web]\ntools = ["@write"]\n',
    )
    settings = load_settings(tmp_path)
    policies = ChannelPolicies(settings.channels, lambda: lock)

    peer = policies.for_turn("chat", scene="chan:chat/peer:group_1", partner="10001")
    assert peer is not None and peer.entries == ("*",) and "peers.group_1" in peer.source
    channel = policies.for_turn("chat", scene="chan:chat/peer:group_2", partner="10001")
    assert channel is not None and channel.entries == ("peek", "notes_*")
    assert channel.allows("notes_search", None) and not channel.allows("poke", "write")
    assert policies.for_turn("other") is None  # no table, no manifest default: every tool
    web = policies.for_turn("web")
    assert web is not None and web.allows("poke", policies.effect("chat", "poke")) and not web.allows("peek", "read")

    default = ChannelPolicies({}, lambda: lock).for_turn("chat", partner="10001")  # the manifest's [channel] tools
    assert default is not None and default.entries == ("@read",) and "plugin's default" in default.source
    effect = ChannelPolicies({}, lambda: lock).effect
    assert default.allows("peek", effect("chat", "peek"))
    assert not default.allows("poke", effect("chat", "poke"))
    assert not default.allows("mystery", effect("chat", "mystery"))  # no effect said: not a reading tool
    assert default.allows("coldcontext_query", effect("kernel", "coldcontext_query"))
    assert "poke is not allowed in turns from chat" in default.refusal("poke", "chat")


def test_peer_of() -> None:
    assert peer_of("chan:qq/peer:group_1", "10001") == "group_1"
    assert peer_of("chan:mail", "bob") == "bob"
    assert peer_of(None, None) is None


@pytest.mark.parametrize(
    ("entry", "says"),
    [("@reed", "is not an effect"), ("files read", "is not a policy entry"), ("", "is not a policy entry")],
)
def test_a_bad_entry_names_the_line(tmp_path: Path, entry: str, says: str) -> None:
    write_settings(tmp_path / "settings.toml", f'[agent]\n\n[channels.qq]\ntools = ["@read", "{entry}"]\n')
    with pytest.raises(HologramError) as caught:
        load_settings(tmp_path)
    problem = caught.value.problems[0]
    assert problem.line == 4 and problem.key == "channels.qq.tools" and says in problem.message, problem


def test_a_read_only_channel_gets_no_tool_that_acts_as_the_owner() -> None:
    """QQ groups get ``@read`` by default: of the built-ins, nothing that runs commands or pages in the owner's
    browser profile (where the owner is logged in) may be offered there, and the read tools still are."""
    policy = ToolPolicy(("@read",), "test")
    offered = {
        tool.name
        for path in sorted(builtin_manifest_dir().glob("*.toml"))
        for tool in load_manifest(path, "builtin").manifest.tools
        if policy.allows(tool.name, tool.effect)
    }
    assert {"files_read", "web_fetch", "browser_read", "term_read"} <= offered, offered
    acting = {"browser_open", "shell_run", "code_run", "term_open", "term_send", "agent_delegate", "plugin_restart"}
    assert not offered & acting, offered & acting
