"""Guard: what the http plugin imports on top of the zygote stays within its documented list (docs/guards.md).

The idle http plugin was twice the size of every other plugin (16.6 vs 6.7-8.2 MB PSS,
tools/bench/footprint.py --turns), nearly all of it imports: uvicorn's package ``__init__`` pulled in its CLI
(click), its reloader (watchfiles) and its worker supervisor (multiprocessing), and Starlette brought anyio,
typing_extensions, the email package, http.client and mimetypes. A dependency update or an innocent
``import uvicorn`` would bring them back unseen; this counts modules, not bytes.

A fresh interpreter imports what the zygote preloads for every other plugin (the baseline), then does the
http plugin's own start — import the package, build the app and the server, start it on a loopback port. The
zygote preloads the http plugin too (hologram/zygote/main.py), so what this counts sits in the zygote, a
share of it in every plugin's PSS. What it added is checked against the list under "Imports of the http
plugin" (non-standard-library modules: hologram's by full name, others by top-level name) and against the
standard-library modules that list forbids by name (the standard library is not listed otherwise, its module
set differs between Python versions).

Mutation checks (done): ``import uvicorn`` at the top of hologram_plugins/http/server.py turns this red naming
click and watchfiles (and multiprocessing); ``import starlette.requests`` in app.py turns it red naming
starlette, anyio and typing_extensions.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from .documented import GUARDS_MD, allowed_imports
from .imports import guarded

HEADING = "## Imports of the http plugin"
FORBIDDEN_HEADING = "## Standard-library modules the http plugin must not import"

START = """
import asyncio, json, sys, tempfile
from pathlib import Path
import contextlib, importlib
from hologram.base._unused_imports import allow_unused_imports, refuse_unused_imports
from hologram.zygote.main import PRELOAD, PRELOAD_OPTIONAL

refuse_unused_imports()
for name in PRELOAD:  # the zygote's preload less the http plugin: what every other plugin needs
    importlib.import_module(name)
for name in PRELOAD_OPTIONAL:
    if not name.startswith("hologram_plugins.http"):
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
allow_unused_imports()  # as the zygote does in a child before the plugin's code runs
before = set(sys.modules)

from hologram_plugins.http import plugin  # noqa: F401 - the plugin's module, as `run.module` imports it
from hologram_plugins.http.access import AccessControl
from hologram_plugins.http.app import build_app
from hologram_plugins.http.channel import Channel
from hologram_plugins.http.config import HttpConfig
from hologram_plugins.http.server import HttpServer


async def call(facility, method, params):
    return {}


async def main():
    config = HttpConfig.from_config({"port": 0})
    access = AccessControl(build_app(Channel(call)), "token", tls=False)
    server = HttpServer(access, config, Path(tempfile.mkdtemp()))
    access.bind(config.host, server.port)
    await server.start()
    started = server.server.started
    await server.stop()
    return started


started = asyncio.run(main())
print(json.dumps({"started": started, "modules": sorted(set(sys.modules) - before)}))
"""


def names(modules: set[str]) -> set[str]:
    """`guarded` names, with the shipped plugins' modules by full name too (so a lazy one is held lazy)."""
    plugins = {m for m in modules if m.split(".")[0] == "hologram_plugins"}
    return (guarded(modules) - {"hologram_plugins"}) | plugins


def test_the_http_plugin_imports_stay_within_the_documented_list(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", START], capture_output=True, text=True, cwd=tmp_path, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    added = set(result["modules"])
    assert result["started"] and "hologram_plugins.http.server" in added, f"the measurement is broken: {result}"
    extra = sorted(names(added) - allowed_imports(HEADING))
    forbidden = sorted(added & allowed_imports(FORBIDDEN_HEADING))
    assert not extra and not forbidden, (
        f"the http plugin now imports, beyond the zygote's preload: {extra} not in {GUARDS_MD} (section "
        f"{HEADING[3:]!r}), and {forbidden} which its section {FORBIDDEN_HEADING[3:]!r} forbids. Each idle "
        "plugin holds what it imports: import it where a request needs it, or, if the plugin truly needs it at "
        "start, add it to the list in the same commit and say what it costs."
    )
    gone = sorted(allowed_imports(HEADING) - names(added))
    if gone:  # not a failure: a hint to tighten the list
        print(f"no longer imported by the http plugin (delete from {GUARDS_MD.name} to tighten): {gone}")
