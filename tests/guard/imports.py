"""What a CLI command imports, from ``python -X importtime``: the modules of the command's run minus the
interpreter's own start-up (site, sitecustomize, encodings), so only what the command pulls in is counted."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def imported(argv: list[str], cwd: Path | None = None) -> set[str]:
    """Every module name ``python -X importtime ARGV`` reports importing."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", *argv], capture_output=True, text=True, cwd=cwd, timeout=60
    )
    if result.returncode != 0:
        raise AssertionError(f"python {' '.join(argv)} failed ({result.returncode}):\n{result.stderr[-2000:]}")
    names = set()
    for line in result.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            if name != "imported package":  # the header line
                names.add(name)
    return names


def guarded(names: set[str]) -> set[str]:
    """The names the allow-list speaks about: every ``hologram`` module by its full name, other packages by
    their top-level name; the standard library is left out (its module set differs between Python versions),
    and so are mypyc's generated helper modules (named by a hash of their package)."""
    out = set()
    for name in names:
        top = name.split(".")[0]
        if top in sys.stdlib_module_names or top.endswith("__mypyc") or top.startswith("_sysconfigdata"):
            continue
        out.add(name if top == "hologram" else top)
    return out


def command_imports(argv: list[str], cwd: Path | None = None) -> set[str]:
    """The guarded names ``python ARGV`` imports beyond a bare interpreter start."""
    return guarded(imported(argv, cwd) - imported(["-c", "pass"], cwd))
