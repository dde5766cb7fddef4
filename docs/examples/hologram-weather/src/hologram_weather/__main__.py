from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from hologram.sdk import BeforeOutputView, Change, Plugin, StartContext


class WeatherConfig(BaseModel):
    # [config] of plugin.toml, with settings.toml's [plugins.weather] over it; checked
    # before any start code runs: a wrong value fails the start naming file, line and key
    model_config = ConfigDict(extra="forbid")  # a misspelt key is an error, not ignored

    units: Literal["metric", "imperial"] = Field("metric", description="Units of the forecast")
    interval_s: float = Field(60, gt=0, description="Seconds between two refreshes")


@dataclass
class Weather:
    units: str


def start(ctx: StartContext[WeatherConfig]) -> Weather:
    # the plugin's state, built at each start from that start's config and data dir
    # (open files under ctx.data_dir, connect to services, ...); reach it as plugin.state
    return Weather(units=ctx.config.units)  # typed: ctx.config is a WeatherConfig


plugin = Plugin("weather", state=start, config=WeatherConfig)


@plugin.on_start
async def started(ctx: StartContext[WeatherConfig]) -> None:
    # runs after `state=`; facilities listed in `provides` are announced ready when
    # on_start returns; call `await plugin.ready("weather.forecast")` earlier if you want,
    # and set `plugin.auto_ready = False` to announce them yourself later.
    print(f"refreshing every {ctx.config.interval_s:g} s")  # print goes to the plugin's log


@plugin.tool("weather_today")
async def weather_today(city: str) -> str:
    return f"Sunny in {city} ({plugin.state.units})"


@plugin.method("weather.forecast", "today")  # other plugins call this through the kernel
async def today(city: str) -> dict[str, str]:
    return {"city": city, "sky": "sunny"}


@plugin.stage("before_output")  # declared in the manifest's [stages]
def sign(view: BeforeOutputView) -> Change:
    # the stage's view (input, output); its methods build the change to return
    return view.rewrite(view.output + " ☀")


if __name__ == "__main__":
    plugin.run()
