"""Guard: what `hologram up` does with tool schemas before its first answer does not import `jsonschema`.

Reading the lock, the staleness check of the manifests it names, and the first turn's tool registry each
checked every tool schema against the 2020-12 meta-schema; with `jsonschema` that cost ~60-110 ms of import
on the kernel's critical path to its first answer (docs/performance.md, "Where `up`'s time to the first
answer goes"). `hologram.manifest.schema_check` passes the common subset without it; this runs those three steps on
the default graph (the shipped manifests) in a fresh interpreter and fails if `jsonschema` got imported — a
shipped tool with a schema outside the subset, or an eager import, would bring it back.

Mutation check (done): an eager ``from jsonschema import Draft202012Validator`` at the top of
hologram/agent/tools.py turns this test red.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

STEPS = """
import sys
from pathlib import Path
from hologram.agent.tools import ToolRegistry
from hologram.plan.lock import changed_manifests, read_lock

lock = read_lock(Path(sys.argv[1]))
assert changed_manifests(lock) == []
catalog = [
    {"name": t.name, "plugin": p.name, "parameters": t.parameters, "description": t.description}
    for p in lock.plugins for t in p.tools
]
assert len(catalog) >= 10, catalog
tools = ToolRegistry(lambda: catalog).snapshot("s")
assert len(tools.tools) >= len(catalog)
print("jsonschema" in sys.modules)
"""


def test_start_checks_tool_schemas_without_jsonschema(tmp_path: Path) -> None:
    lock = tmp_path / "hologram.lock"
    subprocess.run([sys.executable, "-m", "hologram", "build", "-o", str(lock)], check=True, cwd=tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", STEPS, str(lock)], check=True, capture_output=True, text=True, cwd=tmp_path
    )
    assert done.stdout.strip() == "False", "the start-up schema checks imported jsonschema"
