"""The framework's packages import each other in one direction: no circle, and no arrow back up the layers.

The layout shows the architecture only while it holds (docs/architecture.md, "Layers"): every module of
framework/hologram is parsed with `ast` — every static import, inside functions too, except those under
``if TYPE_CHECKING:`` (annotations only, never executed) — and folded into a graph of packages (the first
component under ``hologram``; the top-level ``hologram``, ``_version`` and ``__main__`` are units of their
own). The test then asserts that the graph has no cycle and that no package imports one of a higher layer.
A failure names the module, the line and the arrow.

Mutation checks (done): ``from hologram.agent.tools import KernelTool`` put back into
memory/session_memory.py fails both tests (memory → agent runs back up; memory ⇄ agent is a circle), naming
``hologram/memory/session_memory.py:LINE``; the same import under ``if TYPE_CHECKING:`` passes.
"""

from __future__ import annotations

import ast
import graphlib
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

FRAMEWORK = Path(__file__).resolve().parents[2] / "framework"
PACKAGE = FRAMEWORK / "hologram"

# bottom → top; a package may import its own layer's packages (no circle) and any layer below
LAYERS: list[tuple[str, set[str]]] = [
    ("base", {"_version", "hologram", "base"}),
    ("transport and storage", {"rpc", "storage", "tools", "zygote"}),
    ("contracts", {"manifest", "llm"}),
    ("build and config", {"plan", "config", "sessions", "stages"}),
    ("runtime", {"supervisor", "memory", "install"}),
    ("sdk and turn API", {"sdk", "api", "testing"}),
    ("kernel", {"kernel"}),
    ("agent", {"agent"}),
    ("clients and tools of the operator", {"clients", "doctor", "scaffold"}),
    ("channels that are programs (ACP over stdio)", {"channels"}),
    ("cli", {"cli", "__main__"}),
]


@dataclass(frozen=True)
class Arrow:
    """One import of a hologram module by another, with where it is written."""

    source: str  # importing module, dotted
    target: str  # imported module, dotted
    path: Path
    line: int

    def where(self) -> str:
        return f"{self.path.relative_to(FRAMEWORK)}:{self.line}"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(FRAMEWORK).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_of(name: str, path: Path, known: dict[str, Path]) -> list[Arrow]:
    """Every hologram module `name` imports at run time (module level or inside functions), resolved to a
    module of the framework (``from hologram.x import y`` is ``hologram.x.y`` when that is a module)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"
    found: list[Arrow] = []

    def resolve(target: str) -> str:
        while target not in known and "." in target:
            target = target.rsplit(".", 1)[0]
        return target

    def add(target: str | None, line: int) -> None:
        if target and (target == "hologram" or target.startswith("hologram.")):
            found.append(Arrow(name, resolve(target), path, line))

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for other in child.orelse:
                    visit_node(other)
                continue
            visit_node(child)

    def visit_node(node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                parent = ".".join([*base, *([node.module] if node.module else [])])
            else:
                parent = node.module or ""
            submodules = [f"{parent}.{a.name}" for a in node.names if f"{parent}.{a.name}" in known]
            for sub in submodules:
                add(sub, node.lineno)
            if len(submodules) < len(node.names):
                add(parent, node.lineno)  # names defined in the parent itself
        visit(node)

    visit(tree)
    return found


def unit(module: str) -> str:
    """The package a module belongs to in the graph: ``hologram.memory.graph.store`` → ``memory``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "hologram"


def package_arrows() -> dict[tuple[str, str], list[Arrow]]:
    known = modules()
    arrows: dict[tuple[str, str], list[Arrow]] = defaultdict(list)
    for name, path in known.items():
        for arrow in imports_of(name, path, known):
            source, target = unit(arrow.source), unit(arrow.target)
            if source != target:
                arrows[(source, target)].append(arrow)
    return arrows


def cycles(edges: set[tuple[str, str]]) -> list[list[str]]:
    """An import circle among the packages, if there is one (graphlib's, the sorter `hologram build` uses)."""
    graph: dict[str, set[str]] = defaultdict(set)
    for a, b in edges:
        graph[a].add(b)
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as exc:
        return [list(exc.args[1])]
    return []


def layer_of() -> dict[str, int]:
    where: dict[str, int] = {}
    for number, (_, packages) in enumerate(LAYERS):
        for package in packages:
            assert package not in where, f"{package} is in two layers of LAYERS"
            where[package] = number
    return where


def test_every_package_is_in_one_layer() -> None:
    """A new package must be placed (here and in docs/architecture.md) before the layer test can judge it."""
    units = {unit(m) for m in modules()}
    missing = sorted(units - set(layer_of()))
    assert not missing, f"packages in no layer of LAYERS (tests/guard/test_layers.py): {missing}"
    assert units >= {"base", "cli", "kernel"}, f"the measurement is broken: {sorted(units)}"


def test_no_circle_among_the_packages() -> None:
    arrows = package_arrows()
    assert ("cli", "kernel") in arrows, f"the measurement is broken: {sorted(arrows)}"
    found = cycles(set(arrows))
    lines = []
    for component in found:
        members = set(component)
        for (a, b), where in sorted(arrows.items()):
            if a in members and b in members:
                lines.append(f"  {a} → {b}: {where[0].where()} (import {where[0].target})")
    assert not found, f"import circles among the packages {found}:\n" + "\n".join(lines)


def test_no_arrow_back_up_the_layers() -> None:
    where = layer_of()
    back = [
        f"  {arrow.where()}: {a} ({LAYERS[where[a]][0]}) → {b} ({LAYERS[where[b]][0]}), import {arrow.target}"
        for (a, b), found in sorted(package_arrows().items())
        if a in where and b in where and where[a] < where[b]
        for arrow in found
    ]
    assert not back, "imports that run back up the layers (docs/architecture.md, Layers):\n" + "\n".join(back)


def test_type_checking_imports_are_left_out(tmp_path: Path) -> None:
    """The rule the graph is built by: an import under ``if TYPE_CHECKING:`` is an annotation, not an arrow;
    one inside a function is an arrow (it runs when the function does)."""
    module = PACKAGE / "memory" / "fake.py"
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from hologram.agent import Agent\n"
        "def f():\n    from hologram.cli import main\n"
    )
    fake = tmp_path / "fake.py"
    fake.write_text(source)
    known = {**modules(), "hologram.memory.fake": module}
    found = {a.target for a in imports_of("hologram.memory.fake", fake, known)}
    assert found == {"hologram.cli"}, found


def test_the_documented_layers_are_the_tested_ones() -> None:
    """docs/architecture.md ("Layers") shows people the order this test holds; the two stay one list."""
    text = (FRAMEWORK.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]
    documented = [
        (match.group(1).strip(), set(re.findall(r"`([\w]+)`", match.group(2))))
        for match in re.finditer(r"^\| \d+ \| ([^|]+) \| ([^|]+) \|$", section, re.M)
    ]
    tested = [(name, packages - {"hologram"}) for name, packages in LAYERS]
    assert documented == tested, f"docs/architecture.md's Layers table differs from LAYERS: {documented} != {tested}"
