from dataclasses import dataclass

from hologram.sdk import BeforeOutputView, Change, Plugin, StartContext


@dataclass
class Weather:
    units: str


def start(ctx: StartContext) -> Weather:
    # the plugin's state, built at each start from that start's [config] and data dir
    # (open files under ctx.data_dir, connect to services, ...); reach it as plugin.state
    return Weather(units=ctx.config["units"])


plugin = Plugin("weather", state=start)


@plugin.on_start
async def started(ctx: StartContext) -> None:
    # runs after `state=`; facilities listed in `provides` are announced ready when
    # on_start returns; call `await plugin.ready("weather.forecast")` earlier if you want,
    # and set `plugin.auto_ready = False` to announce them yourself later.
    if plugin.state.units not in ("metric", "imperial"):
        raise ValueError(f"config.units is {plugin.state.units!r}; set it to 'metric' or 'imperial'")


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
