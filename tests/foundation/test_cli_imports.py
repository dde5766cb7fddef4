"""A command imports only what it runs: `hologram --version` and every `--help` build the whole parser, and
`hologram ask` is a new process per turn, so neither may pull in the kernel, the agent or the LLM stack (CLI
start ≤ 0.15 s, warm ask ≤ 0.3 s: tools/bench/cli_start.py measures them), nor pydantic: the kernel validates
the turn API's params with pydantic models (hologram.api.params); the client sends plain dicts of their fields
and reads events as dataclasses (hologram.api.turn), so `ask` is spared pydantic's ~0.1 s import.

Mutation check (done): a top-level `from hologram.plan.lock import read_lock` in cli/inspect_cmd.py turns the
first test red; `from hologram.api import params` at the top of hologram/clients/control.py turns the second red.
"""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("asyncio", "pydantic", "httpx", "numpy", "hologram.plan.lock", "hologram.agent", "hologram.kernel.core")


def imported_after(code: str) -> set[str]:
    probe = f"import sys, json\n{code}\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True).stdout
    return set(json.loads(out.splitlines()[-1]))


def test_building_the_parser_imports_nothing_heavy() -> None:
    modules = imported_after("from hologram.cli import make_parser; make_parser()")
    assert not modules & set(HEAVY), sorted(modules & set(HEAVY))


def test_the_turn_client_imports_no_kernel_and_no_pydantic() -> None:
    modules = imported_after("import hologram.clients.control, hologram.cli.ask_cmd")
    heavy = set(HEAVY) - {"asyncio"}
    assert not modules & heavy, sorted(modules & heavy)
