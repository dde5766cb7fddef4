"""The plugin's ``[config]`` (settings.toml ``[plugins.a2a]``): how the agent presents itself, and the peer
agents its tools may delegate to (URL and token: the token lives in the settings file only, 0600, and is never
logged or shown to the model)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, HttpUrl, SecretStr, StringConstraints

PeerName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_-]{1,40}$")]


class Peer(BaseModel):
    """Another A2A agent the model may ask (``a2a_send``)."""

    model_config = ConfigDict(extra="forbid")

    url: HttpUrl = Field(description="The agent's base URL (its card is at URL/.well-known/agent-card.json).")
    token: SecretStr | None = Field(None, description="Sent as 'Authorization: Bearer TOKEN'; never logged.")
    description: str = Field("", max_length=500, description="What it is good at, as the model reads it.")
    timeout_s: float = Field(300, gt=0, le=3600, description="How long one a2a_send may take.")


class A2aConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field("Hologram", min_length=1, max_length=100, description="The agent card's name.")
    description: str = Field(
        "A self-hosted agent with long-term memory and tools (files, notes, shell, web, …).",
        max_length=1000,
        description="The agent card's description.",
    )
    peers: dict[PeerName, Peer] = Field(
        default_factory=dict,
        description="Peer agents for a2a_send: [plugins.a2a.peers.NAME] url, token, description, timeout_s.",
    )
