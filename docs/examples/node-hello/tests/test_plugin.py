"""The plugin's tests, on a real `node main.js` process started from plugin.toml (the fixtures come with hologram)."""

from __future__ import annotations

from typing import Any

from hologram.testing import RunningPlugin


def test_conformance(hologram_conformance: Any) -> None:
    # every check the kernel relies on: manifest, handshake, readiness, tools, stdout, shutdown, processes
    hologram_conformance()


def test_greets(hologram_plugin: RunningPlugin) -> None:
    assert hologram_plugin.call_tool("hello_greet", {"name": "Ada", "times": 2}) == {
        "content": "Hello, Ada! Hello, Ada!"
    }


def test_the_facility_method(hologram_plugin: RunningPlugin) -> None:
    assert hologram_plugin.call_facility("hello.greetings", "greet", name="Ada") == {"text": "Hello, Ada!"}
