"""The agent card: who this agent is, where it listens, which skills it has, and that it needs the token.

Served at ``/.well-known/agent-card.json`` (A2A 1.0 and 0.3) and ``/.well-known/agent.json`` (older clients)
behind the web port's token like every other route: the A2A specification does not require the card to be
public (it tells servers to protect a card that says more than a public one should), and this one lists the
tools of the machine it runs on. A client sends the token on the card request as on every other (docs/
channels.md, "A2A"). The card holds no secret: no token, no path of the data directory.

One card carries both versions: ``supportedInterfaces`` (1.0) and, merged in by the ``a2a-sdk``, ``url``,
``preferredTransport`` and ``protocolVersion`` (0.3); its URL is the one the client used (scheme and ``Host``).
The skills are the tools present, one skill per plugin (``tools_list`` of the turn API), so the card follows
what is installed.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.types import a2a_pb2 as pb

from hologram import __version__

SCHEME = "hologram_token"
RPC_PATH = "/a2a"
SKILL_DESCRIPTION_CHARS = 300


def base_url(scope: dict[str, Any]) -> str:
    host = ""
    for name, value in scope.get("headers") or []:
        if name == b"host":
            host = value.decode("latin-1")
    return f"{scope.get('scheme', 'http')}://{host or '127.0.0.1'}"


def skills_of(tools: list[dict[str, Any]]) -> list[pb.AgentSkill]:
    """One skill per plugin with tools: its tools' names as tags, their descriptions as its description."""
    by_plugin: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for tool in tools:
        by_plugin[str(tool.get("plugin") or "kernel")].append(tool)
    skills = [
        pb.AgentSkill(
            id="conversation",
            name="conversation",
            description="Talk with the agent: it remembers earlier messages of the same context, across sessions.",
            tags=["chat", "memory"],
        )
    ]
    for plugin, found in sorted(by_plugin.items()):
        names = sorted(str(t.get("name")) for t in found)
        described = "; ".join(f"{t.get('name')}: {str(t.get('description') or '').strip()}" for t in found)
        skills.append(
            pb.AgentSkill(
                id=plugin,
                name=plugin,
                description=described[:SKILL_DESCRIPTION_CHARS],
                tags=names,
                input_modes=["text/plain"],
                output_modes=["text/plain"],
            )
        )
    return skills


def card(name: str, description: str, url: str, tools: list[dict[str, Any]]) -> dict[str, Any]:
    """The card as JSON: A2A 1.0's fields and 0.3's merged in (`agent_card_to_dict`)."""
    rpc = url.rstrip("/") + RPC_PATH
    built = pb.AgentCard(
        name=name,
        description=description,
        version=__version__,
        supported_interfaces=[
            pb.AgentInterface(url=rpc, protocol_binding="JSONRPC", protocol_version="1.0"),
            pb.AgentInterface(url=rpc, protocol_binding="JSONRPC", protocol_version="0.3"),
        ],
        capabilities=pb.AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=["text/plain", "application/json", "application/octet-stream", "image/png"],
        default_output_modes=["text/plain"],
        skills=skills_of(tools),
    )
    built.provider.organization = "Hologram (self-hosted)"
    built.provider.url = url
    scheme = built.security_schemes[SCHEME]
    scheme.http_auth_security_scheme.scheme = "bearer"
    scheme.http_auth_security_scheme.description = (
        "The access token of this Hologram (<data>/http-token; `hologram open --print` shows the link that "
        "carries it), as 'Authorization: Bearer TOKEN' on every request, the card's included."
    )
    requirement = built.security_requirements.add()
    requirement.schemes[SCHEME].SetInParent()
    return agent_card_to_dict(built)
