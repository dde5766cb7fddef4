"""The conformance kit runs on the SDK-only install of hologram (issue 36): a whole conformance run imports the
SDK, the contracts and the plan, the kernel's supervisor and the stage contract — and of the third-party
libraries only those the SDK-only distribution must carry. Never the memory stack (numpy, onnxruntime, kuzu,
jieba), the HTTP stack or the agent.

Run in a child process (a fresh interpreter: the suite has imported everything by now). If the kit needs a new
library or package, it goes into these lists in the same commit, and into the SDK-only install's dependencies.

Mutation check (done): ``import numpy`` at the top of hologram/testing/arguments.py turned it red naming numpy.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WEATHER = ROOT / "docs" / "examples" / "hologram-weather" / "src" / "hologram_weather" / "plugin.toml"

HOLOGRAM_PACKAGES = {
    "hologram._version", "hologram.base", "hologram.manifest", "hologram.plan", "hologram.rpc", "hologram.sdk",
    "hologram.stages", "hologram.supervisor", "hologram.testing", "hologram.tools", "hologram.zygote",
}  # fmt: skip
THIRD_PARTY = {
    "annotated_types", "attr", "attrs", "idna", "jsonschema", "jsonschema_specifications", "orjson", "packaging",
    "pluggy", "pydantic", "pydantic_core", "referencing", "rpds", "tomli", "typing_extensions", "typing_inspection",
}  # fmt: skip

PROBE = f"""
import json, sys
from hologram.testing import check_conformance
report = check_conformance({str(WEATHER)!r})
assert report.ok, report.render()
top = {{m.split(".")[0] for m in sys.modules}} - set(sys.stdlib_module_names)
top = {{m for m in top if not m.startswith("_") and m != "hologram"}}
packages = {{m for m in sys.modules if m.startswith("hologram.") and m.count(".") == 1}}
print(json.dumps({{"third": sorted(top), "hologram": sorted(packages)}}))
"""


@pytest.mark.slow
def test_a_conformance_run_imports_only_what_the_sdk_install_has() -> None:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(found["hologram"]) <= HOLOGRAM_PACKAGES, sorted(set(found["hologram"]) - HOLOGRAM_PACKAGES)
    extra = sorted(m for m in set(found["third"]) - THIRD_PARTY if not m.endswith("__mypyc"))
    assert not extra, f"the kit now imports {extra}: not in the SDK-only install"
