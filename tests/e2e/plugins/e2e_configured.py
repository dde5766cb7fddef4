"""Test plugin (out of process), written as a third party would: its configuration is a pydantic model."""

from __future__ import annotations

import json
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from hologram.sdk import Plugin, StartContext


class Config(BaseModel):
    """What settings.toml's [plugins.e2e-configured] may say."""

    model_config = ConfigDict(extra="forbid")

    interval_s: float = Field(60, gt=0, description="Seconds between two polls.")
    city: str = Field("Berlin", description="The city to poll.")
    retries: int = Field(3, ge=0, description="How often a failed poll is retried.")


@dataclass
class State:
    config: Config
    started: bool = False


def build(ctx: StartContext[Config]) -> State:
    return State(ctx.config)


plugin = Plugin("e2e-configured", state=build, config=Config)


@plugin.on_start
def started(ctx: StartContext[Config]) -> None:
    plugin.state.started = isinstance(ctx.config, Config)


@plugin.tool("configured_show")
def show() -> str:
    """The configuration as the plugin sees it: values and their Python types."""
    config = plugin.state.config
    return json.dumps(
        {
            "started": plugin.state.started,
            "values": config.model_dump(),
            "types": {k: type(v).__name__ for k, v in config.model_dump().items()},
        }
    )


if __name__ == "__main__":
    plugin.run()
