from hologram.testing import RunningPlugin


def test_conformance(hologram_conformance) -> None:
    hologram_conformance()  # every check the kernel relies on; a failure says what the plugin did and the fix


def test_weather_today(hologram_plugin: RunningPlugin) -> None:
    # hologram_plugin: the plugin of this repository's manifest, running as a real process
    result = hologram_plugin.call_tool("weather_today", {"city": "Oslo"})
    assert result == {"content": "Sunny in Oslo (metric)"}
    forecast = hologram_plugin.call_facility("weather.forecast", "today", city="Oslo")
    assert forecast == {"city": "Oslo", "sky": "sunny"}
    signed = hologram_plugin.call_stage("before_output", {"input": "weather?", "output": "Sunny"})
    assert signed == {"output": "Sunny ☀"}
