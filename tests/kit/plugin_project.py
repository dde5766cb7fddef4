"""A plugin repository as `hologram new` lays it out, for tests that install one (`hologram plugin add`, the
web page's Plugins tab): `pyproject.toml` with the `hologram.plugins` entry point, the package with an SDK
plugin (one tool that answers with its name), the manifest inside the package.

Options a test may need: the tool needing approval (the preview then says so), a start that waits for a gate
file the test creates (so the plugin is seen `starting` before it is `ready`), and `[start]`'s values.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.kit.manifests import write_manifest

SDK_PLUGIN = """\
from hologram.sdk import Plugin

plugin = Plugin({name!r})


@plugin.tool({tool!r})
async def {tool}(text: str) -> str:
    return {name!r} + ": " + text
"""
GATED_START = """

@plugin.on_start
async def wait_for_the_gate(ctx: object) -> None:
    # starting until the test creates the gate file: the test sees the plugin `starting`, then `ready`
    import asyncio
    import os

    while not os.path.exists({gate!r}):
        await asyncio.sleep(0.05)
"""
TOOL_TOML = """\
[[tools]]
name = "{tool}"
description = "answers with its name"
needs_approval = {approval}
parameters = {{ type = "object", properties = {{ text = {{ type = "string" }} }}, required = ["text"] }}
"""


def sdk_package(directory: Path, package: str, name: str, tool: str, *, gate: Path | None = None) -> None:
    """An SDK plugin as a package: the plugin in __init__.py, `python -m package` runs it."""
    directory.mkdir(parents=True, exist_ok=True)
    source = SDK_PLUGIN.format(name=name, tool=tool)
    if gate is not None:
        source += GATED_START.format(gate=str(gate))
    (directory / "__init__.py").write_text(source)
    (directory / "__main__.py").write_text(f"from {package} import plugin\n\nplugin.run()\n")


def tool_toml(tool: str, *, approval: bool = False) -> str:
    """The `[[tools]]` entry of `sdk_package`'s tool."""
    return TOOL_TOML.format(tool=tool, approval="true" if approval else "false")


def plugin_project(
    root: Path,
    name: str,
    requires: list[str],
    *,
    approval: bool = False,
    gate: Path | None = None,
    start: Mapping[str, Any] | None = None,
) -> Path:
    """``root/name``: a project whose distribution is ``NAME-plugin``, package ``name``, plugin ``name``
    providing ``NAME.svc`` and requiring `requires`, with the tool ``NAME_ping``; returns its directory."""
    project = root / name
    sdk_package(project / name, name, name, f"{name}_ping", gate=gate)
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["hatchling"]\nbuild-backend = "hatchling.build"\n\n'
        f'[project]\nname = "{name}-plugin"\nversion = "0.1.0"\ndependencies = ["hologram"]\n\n'
        f'[project.entry-points."hologram.plugins"]\n{name} = "{name}"\n\n'
        f'[tool.hatch.build.targets.wheel]\npackages = ["{name}"]\n'
    )
    write_manifest(
        project / name,
        name,
        run={"module": name},
        provides=[f"{name}.svc"],
        requires=requires,
        start=start,
        extra=tool_toml(f"{name}_ping", approval=approval),
    ).rename(project / name / "plugin.toml")
    return project
