"""The plugin's ``[config]`` (settings.toml ``[plugins.qq]``): where NapCat is, its access token, who may talk to
the agent and how much. Checked when the plugin starts: a value that does not fit stops the start with the file,
line and key (the token itself is never echoed)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator
from typing_extensions import Self


class QqConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    listen: str | None = Field(
        None,
        description="Reverse WebSocket: HOST:PORT this plugin listens on; NapCat's 'WebSocket client' connects to "
        "ws://HOST:PORT/onebot/v11/ws",
    )
    connect: str | None = Field(
        None, description="Forward WebSocket: NapCat's 'WebSocket server' URL (ws://127.0.0.1:3001) this plugin dials"
    )
    access_token: SecretStr | None = Field(
        None, description="NapCat's token (Authorization: Bearer …); required with listen or connect; never logged"
    )
    path: str = Field("/onebot/v11/ws", description="The reverse WebSocket's path (listen)")
    groups: list[int] = Field(default_factory=list, description="Groups it takes part in; others are ignored")
    users: list[int] = Field(default_factory=list, description="Who may talk to it in private (admins always may)")
    admins: list[int] = Field(
        default_factory=list, description="Who approves tool calls (/approve ID, /deny ID in a private chat)"
    )
    keywords: list[str] = Field(
        default_factory=list, description="Words that call it in a group, besides an @-mention or a reply to it"
    )
    language: Literal["zh", "en"] = Field("zh", description="The language of its own notices (rate limit, approvals)")
    max_chars: int = Field(1500, ge=100, le=4500, description="An answer longer than this is sent in several messages")
    group_rate: int = Field(20, ge=1, description="Answers per group within rate_window_s")
    user_rate: int = Field(5, ge=1, description="Answers per person within rate_window_s")
    rate_window_s: float = Field(60.0, gt=0, description="The rate limits' window")
    reconnect_max_s: float = Field(30.0, gt=0, le=600, description="Forward mode: the longest wait between tries")
    action_timeout_s: float = Field(30.0, gt=0, description="How long an action (send_group_msg …) may take")
    deliver_wait_s: float = Field(
        300.0, gt=0, description="How long an answer waits for NapCat to be connected again before it is dropped"
    )
    seen_ids: int = Field(10_000, ge=100, le=1_000_000, description="Message ids remembered to handle each once")

    @field_validator("listen")
    @classmethod
    def _host_port(cls, value: str | None) -> str | None:
        if value is None:
            return None
        host, _, port = value.rpartition(":")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"{value!r} is not HOST:PORT; write e.g. 127.0.0.1:6199")
        return value

    @field_validator("connect")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("ws://", "wss://")):
            raise ValueError("write NapCat's WebSocket server URL, starting with ws:// or wss://")
        return value

    @model_validator(mode="after")
    def _one_transport_with_its_token(self) -> Self:
        if self.listen is not None and self.connect is not None:
            raise ValueError("set listen (reverse WebSocket) or connect (forward), not both")
        if (self.listen or self.connect) and not (self.access_token and self.access_token.get_secret_value()):
            raise ValueError(
                "access_token is required with listen or connect: set the same token here and in NapCat's network "
                "settings (docs/channels/qq.md)"
            )
        return self

    @property
    def configured(self) -> bool:
        return self.listen is not None or self.connect is not None
