"""The kernel layer sits on top: the supervisor, the transport, the stage layer and the SDK never import it
(`hologram.kernel`), so the kernel assembles them and not the other way round (docs/architecture.md).

Mutation check (done): an `from hologram.kernel import control` in supervisor/core.py turns this red.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "framework" / "hologram"
BELOW_THE_KERNEL = ("supervisor", "rpc", "stages", "sdk", "zygote")


def imported(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


@pytest.mark.parametrize("package", BELOW_THE_KERNEL)
def test_nothing_below_the_kernel_imports_it(package: str) -> None:
    offenders = {
        f"{path.relative_to(PACKAGE)}: {name}"
        for path in sorted((PACKAGE / package).rglob("*.py"))
        for name in imported(path)
        if name == "hologram.kernel" or name.startswith("hologram.kernel.")
    }
    assert not offenders, "import the kernel layer only from above it (cli, agent): " + ", ".join(sorted(offenders))
