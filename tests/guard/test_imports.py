"""Guard: `hologram --version` imports nothing beyond its documented list (docs/guards.md).

Each CLI run pays for its imports before it does anything; a command that starts importing the kernel,
the LLM stack or a model runtime gets slower for every user, unnoticed. This counts modules, not time:
`python -X importtime -m hologram --version`, minus a bare interpreter's start, compared with the allow-list.
The list was written from what main imported when the guard landed; as imports are cut, delete lines (the
test prints the ones no longer imported) so the guard tightens with them.

Mutation check (done): ``import onnxruntime`` at the top of hologram/cli/__init__.py (an eager heavy import)
turns this test red, naming onnxruntime.
"""

from __future__ import annotations

from pathlib import Path

from .documented import GUARDS_MD, allowed_imports
from .imports import command_imports

MEMORY_HEADING = "## Imports of `hologram memory` through a running kernel"


def test_version_imports_stay_within_the_documented_list(tmp_path: Path) -> None:
    allowed = allowed_imports()
    seen = command_imports(["-m", "hologram", "--version"], cwd=tmp_path)
    assert "hologram.cli" in seen, f"the measurement is broken: {sorted(seen)}"
    extra = sorted(seen - allowed)
    assert not extra, (
        f"`hologram --version` now imports {len(extra)} module(s) not in {GUARDS_MD} "
        f"(section 'Imports of `hologram --version`'): {extra}. Import them where the command that needs "
        f"them runs (lazily), or, if --version truly needs them, add them to that list in the same commit."
    )
    gone = sorted(allowed - seen)
    if gone:  # not a failure: a hint to tighten the list
        print(f"no longer imported by --version (delete from {GUARDS_MD.name} to tighten): {gone}")


def test_memory_through_the_kernel_stays_within_its_documented_list(tmp_path: Path) -> None:
    """What `hologram memory` imports to ask a running kernel (its offline path is the only one that loads
    memory). Mutation check (done): a module-level ``from hologram.memory.inspection import MemoryInspector`` in
    memory_source.py turns this red, naming numpy and hologram.memory.*."""
    allowed = allowed_imports() | allowed_imports(MEMORY_HEADING)
    seen = command_imports(["-c", "import hologram.cli.memory_source, hologram.cli.memory_render"], cwd=tmp_path)
    assert "hologram.cli.memory_source" in seen, f"the measurement is broken: {sorted(seen)}"
    extra = sorted(seen - allowed)
    assert not extra, (
        f"`hologram memory` (through a running kernel) now imports {len(extra)} module(s) not in {GUARDS_MD} "
        f"(sections 'Imports of `hologram --version`' and {MEMORY_HEADING[3:]!r}): {extra}. Import them in "
        f"the offline path (memory_source._offline), or add them to the list in the same commit."
    )
