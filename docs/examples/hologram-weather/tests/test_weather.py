import asyncio

from hologram.sdk.testing import PluginHarness


def test_weather_today() -> None:
    async def scenario() -> None:
        async with PluginHarness.from_manifest("src/hologram_weather/plugin.toml") as harness:
            result = await harness.call_tool("weather_today", {"city": "Oslo"})
            assert result == {"content": "Sunny in Oslo (metric)"}
            forecast = await harness.call_facility("weather.forecast", "today", city="Oslo")
            assert forecast == {"city": "Oslo", "sky": "sunny"}
            signed = await harness.call_stage("before_output", {"input": "weather?", "output": "Sunny"})
            assert signed == {"output": "Sunny ☀"}

    asyncio.run(scenario())
