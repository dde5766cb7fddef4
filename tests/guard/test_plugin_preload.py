"""Guard: a shipped plugin forked from the zygote finds its modules already imported (docs/guards.md).

A plugin's first import in a forked child costs ~2.5 MB of copied pages whatever the module's size — the
import system's own objects, the names it interns, the dicts it writes (tools/bench/footprint.py --turns:
notes 8.0 MB with its two modules imported in the child, 6.4 MB with them preloaded). Nothing says so when a
new shipped plugin, or a new module of one, is left out of the zygote's preload: this counts the modules.

A fresh interpreter does what the zygote and a forked child do: the preload, then importing the manifest's
`run.module` (its ``__main__`` does that first, then ``plugin.run()``, whose modules the preload holds too).
The plugins that are not preloaded, on purpose, are listed under "Shipped plugins the zygote does not preload".

Mutation check (done): dropping ``"hologram_plugins.notes"`` from PRELOAD_OPTIONAL turns this red naming
hologram_plugins.notes and hologram_plugins.notes.store.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import tomli

from .documented import GUARDS_MD, allowed_imports

ROOT = Path(__file__).resolve().parents[2]
HEADING = "## Shipped plugins the zygote does not preload"

PROBE = """
import importlib, json, sys
from hologram.base._unused_imports import allow_unused_imports, refuse_unused_imports
from hologram.zygote.main import preload

refuse_unused_imports()
preload()
allow_unused_imports()  # as the zygote does in a child before the plugin's code runs
added = {}
for module in sys.argv[1:]:
    before = set(sys.modules)
    importlib.import_module(module)
    importlib.import_module("hologram.sdk._runtime")  # what plugin.run() imports
    added[module] = sorted(set(sys.modules) - before)
print(json.dumps(added))
"""


def shipped_modules() -> list[str]:
    modules = []
    for path in sorted((ROOT / "manifests").glob("*.toml")):
        run = tomli.loads(path.read_text(encoding="utf-8")).get("plugin", {}).get("run", {})
        if isinstance(run, dict) and str(run.get("module", "")).startswith("hologram_plugins."):
            modules.append(str(run["module"]))
    return modules


def test_every_shipped_plugin_but_the_listed_ones_imports_nothing_in_its_child() -> None:
    exempt = allowed_imports(HEADING)
    modules = [m for m in shipped_modules() if m not in exempt]
    assert len(modules) >= 7, f"the measurement is broken: manifests/ names {modules}"
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *modules], capture_output=True, text=True, cwd=ROOT, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    added = {m: names for m, names in json.loads(done.stdout.strip().splitlines()[-1]).items() if names}
    assert not added, (
        f"these shipped plugins import modules in their forked child: {added}. Add them to PRELOAD_OPTIONAL in "
        f"framework/hologram/zygote/main.py (if importing them has no side effect), or list the plugin in "
        f"{GUARDS_MD} under {HEADING[3:]!r} and say why."
    )
