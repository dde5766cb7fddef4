"""The pieces of MCP support that are rules: tool names, the approvals pattern, run-time tool registration.

Mutation checks (done): `tool_name` without the hash for a cleaned name turns
``test_names_that_clean_up_alike_still_differ`` red; `rule_for` preferring the shortest pattern turns
``test_an_approvals_pattern_covers_a_server_and_the_tool_s_own_rule_wins`` red.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from hologram.agent.approvals import rule_for
from hologram.config.settings import ApprovalSettings
from hologram.rpc import RpcError
from hologram.sdk.testing import PluginHarness
from hologram.supervisor.runtime_tools import RuntimeTools
from hologram_plugins.mcp.config import McpConfig
from hologram_plugins.mcp.naming import tool_name
from tests.kit.manifests import write_manifest

MANIFEST = Path(__file__).resolve().parents[2] / "manifests" / "mcp.toml"
VALID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def test_a_short_plain_name_is_kept() -> None:
    assert tool_name("fs", "read_file") == "mcp_fs_read_file"


def test_a_long_or_dotted_name_is_cut_and_hashed_deterministically() -> None:
    long_tool = "a" * 80
    name = tool_name("fs", long_tool)
    digest = hashlib.sha256(f"mcp_fs_{long_tool}".encode()).hexdigest()[:8]
    assert name == f"mcp_fs_{'a' * 48}_{digest}" and len(name) == 64
    dotted = tool_name("git", "repo.status/all")
    assert VALID.match(dotted) and dotted.startswith("mcp_git_repo_status_all_") and len(dotted) == 24 + 8
    assert tool_name("git", "repo.status/all") == dotted  # stable
    assert VALID.match(tool_name("wiki", "页面读取"))


def test_names_that_clean_up_alike_still_differ() -> None:
    assert tool_name("x", "a.b") != tool_name("x", "a_b") == "mcp_x_a_b"


def test_an_approvals_pattern_covers_a_server_and_the_tool_s_own_rule_wins() -> None:
    policy = ApprovalSettings.model_validate(
        {"tools": {"mcp_*": {"mode": "deny"}, "mcp_fs_*": {"mode": "allow"}, "mcp_fs_write": {"mode": "ask"}}}
    )
    assert rule_for(policy, "mcp_fs_read").mode == "allow"  # the longest pattern
    assert rule_for(policy, "mcp_fs_write").mode == "ask"  # the tool's own table
    assert rule_for(policy, "mcp_web_get").mode == "deny"
    assert rule_for(policy, "shell_run") is None  # the default applies


def test_a_server_needs_exactly_one_transport_and_a_valid_name() -> None:
    with pytest.raises(ValidationError, match="exactly one"):
        McpConfig.model_validate({"servers": {"x": {"command": "a", "url": "http://h/mcp"}}})
    with pytest.raises(ValidationError, match="exactly one"):
        McpConfig.model_validate({"servers": {"x": {}}})
    with pytest.raises(ValidationError, match=r"servers\.a b"):
        McpConfig.model_validate({"servers": {"a b": {"command": "x"}}})
    with pytest.raises(ValidationError, match="not http"):
        McpConfig.model_validate({"servers": {"x": {"url": "ftp://h"}}})


def test_registration_is_checked_and_all_or_nothing() -> None:
    """Against the real mcp plugin under the SDK's harness (no servers configured): what the kernel accepts."""

    async def go() -> tuple[list[str], dict[str, Any], list[str]]:
        async with PluginHarness.from_manifest(MANIFEST) as harness:
            tools = RuntimeTools(harness.supervisor)
            problems = []
            for bad in (
                [{"name": "a b", "parameters": {"type": "object"}}],
                [{"name": "ok", "parameters": {"type": "string"}}],
                [{"name": "ok", "parameters": {"type": "object", "properties": {"x": {"type": "nonsense"}}}}],
                [{"name": "ok", "needs_approval": False}],
                [{"name": "ok"}, {"name": "ok"}],
            ):
                with pytest.raises(RpcError) as caught:
                    tools.register("mcp", bad)
                problems.append(caught.value.message)
            assert not harness.tools  # nothing of a refused call was kept
            tools.register("mcp", [{"name": "ok", "description": "d", "parameters": {"type": "object"}}])
            registered = dict(harness.tools["ok"])
            removed = tools.unregister("mcp", ["ok", "not-mine"])["tools"]
            return problems, registered, removed

    problems, registered, removed = asyncio.run(go())
    assert "tools[0].name: 'a b' is not a tool name" in problems[0]
    assert "expected a JSON Schema of type object" in problems[1]
    assert "not a valid JSON Schema" in problems[2]
    assert "unknown keys ['needs_approval']" in problems[3]
    assert "a name is given twice" in problems[4]
    assert registered["needs_approval"] is True and registered["deferred"] is True  # the kernel's word
    assert removed == ["ok"]


def test_a_session_s_tools_are_offered_in_that_session_alone() -> None:
    """``kernel.tools.register`` with ``session`` (what the mcp plugin does for ``sessions/mcp``): two sessions
    hold tools of one name; a snapshot of a session has its own only, of another session or none neither; a
    name every session has cannot also be a session's (nor the reverse); unregister removes that session's.
    Mutation check (done): the registry without the session filter turns this red (s3 is offered ``look``)."""
    from hologram.agent.tools import ToolRegistry

    schema = {"type": "object", "properties": {}}

    async def go() -> tuple[dict[str, list[str]], list[str], list[str], list[str]]:
        async with PluginHarness.from_manifest(MANIFEST) as harness:
            tools = RuntimeTools(harness.supervisor)
            registry = ToolRegistry(harness.supervisor.tool_catalog)
            tools.register("mcp", [{"name": "look", "description": "one", "parameters": schema}], session="s1")
            tools.register("mcp", [{"name": "look", "description": "two", "parameters": schema}], session="s2")
            tools.register("mcp", [{"name": "everywhere", "parameters": schema}])
            seen = {
                s or "none": sorted(n for n in registry.snapshot(s).tools if n != "tools_load")
                for s in ("s1", "s2", "s3", None)
            }
            problems = []
            for bad, session in ((["everywhere"], "s1"), (["look"], None)):
                with pytest.raises(RpcError) as caught:
                    tools.register("mcp", [{"name": n, "parameters": schema} for n in bad], session=session)
                problems.append(caught.value.message)
            with pytest.raises(RpcError) as caught:
                tools.register("mcp", [], session="a/b" * 100)
            problems.append(caught.value.message)
            removed = tools.unregister("mcp", ["look"], session="s1")["tools"]
            left = sorted(n for n in registry.snapshot("s1").tools if n != "tools_load")
            status = sorted(harness.supervisor.snapshot()["plugins"][0]["tools"])
            return seen, problems, removed + left, status

    seen, problems, after, status = asyncio.run(go())
    assert seen == {"s1": ["everywhere", "look"], "s2": ["everywhere", "look"], "s3": ["everywhere"],
                    "none": ["everywhere"]}  # fmt: skip
    assert "'everywhere' is already mcp's tool in every session" in problems[0]
    assert "'look' is already mcp's tool in a session" in problems[1]
    assert "session: expected a session id" in problems[2]
    assert after == ["look", "everywhere"], "s1's look removed, s2's kept"
    assert status == ["everywhere"], "hologram status lists the tools of every session only"


BRIDGE = """\
import sys
from hologram.sdk import Plugin, RuntimeTool

plugin = Plugin("bridge")


async def forward(arguments, ctx):
    return f"forwarded {arguments['q']} for {ctx.call_id}"


@plugin.on_start
async def start(ctx):
    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    await plugin.register_tools([RuntimeTool("bridge_search", "search", schema, forward)])
    await plugin.set_status("connected")


if __name__ == "__main__":
    plugin.run()
"""


def test_tools_registered_during_start_survive_the_handshake_and_are_called(tmp_path: Path) -> None:
    """A plugin that registers from ``on_start`` — before it answers ``initialize`` — keeps its tools (the
    kernel resets a plugin's tools when it spawns it, not at the handshake), and a call reaches the handler
    with the arguments as one dict. Mutation check (done): resetting ``tools`` in ``_accept_handshake`` (as
    before) turns this red: the tool is gone."""
    (tmp_path / "bridge.py").write_text(BRIDGE)
    manifest = write_manifest(
        tmp_path, "bridge", run={"command": [sys.executable, str(tmp_path / "bridge.py")]}, requires=["kernel.tools"]
    )

    async def go() -> tuple[dict[str, Any], dict[str, Any], str]:
        async with PluginHarness.from_manifest(manifest) as harness:
            registered = dict(harness.tools.get("bridge_search", {}))
            result = await harness.call_tool("bridge_search", {"q": "cats"}, call_id="c7")
            return registered, result, harness.plugin.status

    registered, result, status = asyncio.run(go())
    assert registered["needs_approval"] is True and registered["runtime"] is True
    assert result == {"content": "forwarded cats for c7"}
    assert status == "connected"
