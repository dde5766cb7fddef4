"""Guard: a channel is written as a third party would write it — with the public modules only.

Every channel (ACP now; A2A, MCP, QQ as they come) is a thin adapter over the turn API (docs/channels.md,
shared/DESIGN.md "Channels"). What keeps it thin is that it cannot reach past the public surface: if a channel
imports the agent, the kernel, memory or the supervisor, it can keep turn state or take shortcuts no third
party has, and the SDK stops being proven by the channels built on it. This reads every module of every channel
with `ast` (every import, inside functions too; not those under ``if TYPE_CHECKING:``, which never run) and
fails naming the module, the line and the import that is not public.

Public: `hologram` itself (its version), `hologram.clients` (the turn API's clients and their errors),
`hologram.api` (the turn API's names, events and params), `hologram.sdk` (what plugins import; not its
``_private`` modules), and the channel's own package.

Mutation check (done): ``from hologram.kernel.control import connect`` added to
hologram/channels/acp/kernel.py turns this red, naming that line; so does ``import hologram.agent`` inside a
function of hologram/channels/acp/agent.py, and ``from hologram.kernel.control import socket_path`` in
hologram/clients/mcp_server.py; and ``from hologram.rpc import RpcError`` in plugins/hologram_plugins/a2a/server.py
(the A2A plugin, whose errors come from hologram.sdk), naming that line.
"""

from __future__ import annotations

from pathlib import Path

from .test_layers import FRAMEWORK, PACKAGE, Arrow, imports_of, modules

REPO = FRAMEWORK.parent
PLUGINS = REPO / "plugins" / "hologram_plugins"
# channel plugins of the protocols issue (37) and the QQ issue (38), held to the same rule once they exist
CHANNEL_PLUGINS = ("a2a", "mcp", "acp", "qq")
PUBLIC = ("hologram.clients", "hologram.api", "hologram.sdk", "hologram.channels")
# channel modules that live elsewhere in the framework (extend this list for a new one)
CHANNEL_MODULES = ("hologram.clients.mcp_server",)  # hologram mcp: the MCP server (its command line is the CLI's)


def public(target: str) -> bool:
    if target == "hologram" or target == "hologram._version":
        return True
    if not any(target == p or target.startswith(p + ".") for p in PUBLIC):
        return False
    return not any(part.startswith("_") for part in target.split(".")[2:])  # hologram.sdk._runtime is not


def channel_modules() -> dict[str, Path]:
    """Every module of a channel: the framework's `hologram.channels`, and the channel plugins present."""
    found = {
        name: path
        for name, path in modules().items()
        if name.startswith("hologram.channels") or name in CHANNEL_MODULES
    }
    for plugin in CHANNEL_PLUGINS:
        for path in sorted((PLUGINS / plugin).rglob("*.py")) if (PLUGINS / plugin).is_dir() else []:
            parts = list(path.relative_to(PLUGINS.parent).with_suffix("").parts)
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def arrows() -> list[Arrow]:
    known = modules()
    return [arrow for name, path in channel_modules().items() for arrow in imports_of(name, path, known)]


def test_channels_import_only_public_modules() -> None:
    found = arrows()
    read = channel_modules()
    for expected in ("hologram.channels.acp.agent", "hologram.clients.mcp_server", "hologram_plugins.mcp"):
        assert expected in read, f"the measurement is broken: {expected} not read"
    assert any(a.target.startswith("hologram.clients") for a in found), "the measurement is broken: no import seen"
    private = [a for a in found if not public(a.target)]
    assert not private, (
        "a channel imports a private module of the kernel:\n"
        + "\n".join(f"  {a.path.relative_to(REPO)}:{a.line}: {a.target}" for a in private)
        + (
            "\nA channel is written with hologram.clients, hologram.api and hologram.sdk only (docs/channels.md): "
            "what it needs from the kernel belongs in the turn API, for every client."
        )
    )


def test_the_rule_catches_what_it_is_for() -> None:
    """The rule itself, on the names it must refuse and allow (the file test above reads real modules)."""
    for target in ("hologram.agent.service", "hologram.kernel.control", "hologram.memory", "hologram.supervisor",
                   "hologram.rpc", "hologram.sessions.store", "hologram.base.errors", "hologram.sdk._runtime"):  # fmt: skip
        assert not public(target), target
    for target in ("hologram", "hologram.clients", "hologram.clients.errors", "hologram.api.turn", "hologram.sdk"):
        assert public(target), target
    assert PACKAGE.is_dir()


# what reaches the kernel's control socket: a process of its own (hologram mcp, hologram acp) may; a plugin may not
CONTROL_SOCKET = ("TurnClient", "ControlSocket", "hologram.clients.control")


def socket_uses(path: Path) -> list[tuple[int, str]]:
    """Where a module names the control socket's client (a name, an attribute, an import)."""
    import ast

    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Name) and node.id in CONTROL_SOCKET:
            found.append((node.lineno, node.id))
        elif isinstance(node, ast.Attribute) and node.attr in CONTROL_SOCKET:
            found.append((node.lineno, node.attr))
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or "", *(a.name for a in node.names)]
            found.extend((node.lineno, n) for n in names if n in CONTROL_SOCKET)
    return found


def test_channel_plugins_reach_the_kernel_through_their_facilities() -> None:
    """A channel plugin (a2a, mcp's /mcp, qq) is a plugin: it reaches the kernel through ``kernel.turns`` and the
    facilities its manifest requires, never through the control socket it would have to find from its data
    directory (a seam no manifest declares, and turns no ``hologram why`` shows). Mutation check (done):
    /mcp's server built on ``ControlSocket`` again (hologram_plugins/mcp/http_server.py) turns this red."""
    read = [path for name, path in channel_modules().items() if name.startswith("hologram_plugins.")]
    assert any(p.name == "turns_access.py" for p in read), "the measurement is broken: the mcp plugin not read"
    uses = [f"{p.relative_to(REPO)}:{line}: {what}" for p in read for line, what in socket_uses(p)]
    assert not uses, "a channel plugin reaches for the control socket:\n  " + "\n  ".join(uses)
