from typing import Any

from hologram.sdk import Plugin, StartContext

plugin = Plugin("weather")
state: dict[str, str] = {}


@plugin.on_start
async def start(ctx: StartContext) -> None:
    state["units"] = ctx.config["units"]  # [config] from the manifest
    # open files under ctx.data_dir, connect to services, ...
    # facilities listed in `provides` are announced ready when on_start returns;
    # call `await plugin.ready("weather.forecast")` earlier if you want, and set
    # `plugin.auto_ready = False` to announce them yourself later.


@plugin.tool("weather_today")
async def weather_today(city: str) -> str:
    return f"Sunny in {city} ({state['units']})"


@plugin.method("weather.forecast", "today")  # other plugins call this through the kernel
async def today(city: str) -> dict[str, str]:
    return {"city": city, "sky": "sunny"}


@plugin.stage("before_output")  # declared in the manifest's [stages]
async def sign(context: dict[str, Any]) -> dict[str, Any]:
    # the stage's view: {"input": ..., "output": ...}; return the fields to change
    return {"output": context["output"] + " ☀"}


if __name__ == "__main__":
    plugin.run()
