"""A command imports only what it runs: `hologram --version` and every `--help` build the whole parser, and
`hologram ask` is a new process per turn, so neither may pull in the kernel, the agent, the LLM stack or
pydantic (CLI start ≤ 0.15 s, warm ask ≤ 0.3 s: tools/bench/cli_start.py measures them).

Mutation check (done): a top-level `from hologram.lock import read_lock` in cli/inspect_cmd.py turns the
first test red; `from pydantic import BaseModel` back in turn_api.py turns the second red.
"""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("asyncio", "pydantic", "httpx", "numpy", "hologram.lock", "hologram.agent", "hologram.kernel.core")


def imported_after(code: str) -> set[str]:
    probe = f"import sys, json\n{code}\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True).stdout
    return set(json.loads(out.splitlines()[-1]))


def test_building_the_parser_imports_nothing_heavy() -> None:
    modules = imported_after("from hologram.cli import make_parser; make_parser()")
    assert not modules & set(HEAVY), sorted(modules & set(HEAVY))


def test_the_turn_client_imports_no_kernel_and_no_pydantic() -> None:
    modules = imported_after("import hologram.client, hologram.cli.ask_cmd")
    heavy = set(HEAVY) - {"asyncio"}
    assert not modules & heavy, sorted(modules & heavy)
