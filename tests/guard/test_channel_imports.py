"""Guard: a channel (an adapter of another protocol onto the turn API) imports no private module of the kernel.

shared/DESIGN.md: every channel is a thin adapter written only with what a third party has — `hologram.sdk`,
the turn API (`hologram.api`, `hologram.clients`) and the protocol's own package —, so the channels prove the
SDK and the turn API. A shortcut into the kernel's packages (`hologram.agent`, `hologram.kernel`,
`hologram.memory`, `hologram.supervisor` …) would work today and hide what the turn API lacks.

Each entry of ``CHANNELS`` is a module or a package folder (every ``.py`` under it); every import in them —
module level, inside functions, under ``if TYPE_CHECKING:`` too — is parsed with `ast` and must not name a
package of ``PRIVATE``. Add your channel's modules to ``CHANNELS`` (one list for every channel: MCP, ACP …).

Mutation check (done): ``from hologram.kernel.control import socket_path`` added to
hologram/clients/mcp_server.py turns this red, naming the file, the line and the module.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# channel modules or package folders, relative to the repository (extend this list for a new channel)
CHANNELS: list[str] = [
    "plugins/hologram_plugins/mcp",  # the MCP client plugin
    "framework/hologram/clients/mcp_server.py",  # hologram mcp: the MCP server
    "framework/hologram/cli/mcp_cmd.py",  # hologram mcp: its command line
]

# the kernel's own packages: no channel imports them
PRIVATE = (
    "hologram.agent",
    "hologram.config",
    "hologram.doctor",
    "hologram.kernel",
    "hologram.llm",
    "hologram.manifest",
    "hologram.memory",
    "hologram.plan",
    "hologram.sessions",
    "hologram.stages",
    "hologram.storage",
    "hologram.supervisor",
    "hologram.tools",
    "hologram.zygote",
)


def files_of(entry: str) -> list[Path]:
    path = ROOT / entry
    if not path.exists():
        raise AssertionError(f"tests/guard/test_channel_imports.py: CHANNELS names {entry}, which does not exist")
    return sorted(path.rglob("*.py")) if path.is_dir() else [path]


def imported(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import statement in ``path`` (``from a import b`` also as ``a.b``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return found


def private(module: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in PRIVATE)


@pytest.mark.parametrize("entry", CHANNELS)
def test_a_channel_imports_no_private_kernel_module(entry: str) -> None:
    wrong = [
        f"{path.relative_to(ROOT)}:{line}: imports {module}"
        for path in files_of(entry)
        for line, module in imported(path)
        if private(module)
    ]
    assert not wrong, (
        "a channel reaches into the kernel (use hologram.sdk, hologram.api, hologram.clients; what the turn API "
        "lacks is added to it for every client):\n" + "\n".join(wrong)
    )


def test_the_guard_sees_an_import_inside_a_function(tmp_path: Path) -> None:
    """The parser finds what the guard must refuse, wherever it is written (so the test above can fail)."""
    source = tmp_path / "channel.py"
    source.write_text("def f():\n    from hologram.kernel.control import call\n    import hologram.agent.hub\n")
    assert [m for _, m in imported(source) if private(m)] == [
        "hologram.kernel.control",
        "hologram.kernel.control.call",
        "hologram.agent.hub",
    ]
