"""Explain a lock to a person: the graph as DOT, Mermaid or text, and `why` a plugin starts where it does.

Everything here reads the lock only, never the manifests: these commands show what `hologram up` will do.
"""

from __future__ import annotations

from hologram.base._defaults import GRAPH_FORMATS
from hologram.base.errors import HologramError, Problem
from hologram.manifest.facility import KERNEL
from hologram.plan.lock import Lock, LockedPlugin

FORMATS = GRAPH_FORMATS


def _edges(plugin: LockedPlugin) -> list[tuple[str, str, bool]]:
    """(provider, facility, optional) for every edge into `plugin`, sorted."""
    edges = [(provider, facility, False) for facility, provider in plugin.requires.items()]
    for facility, providers in plugin.after_if_present.items():
        edges.extend((p, facility, True) for p in providers)
    return sorted(edges)


def render_graph(lock: Lock, fmt: str) -> str:
    if fmt == "dot":
        return _dot(lock)
    if fmt == "mermaid":
        return _mermaid(lock)
    return _text(lock)


def _dot(lock: Lock) -> str:
    lines = ["digraph hologram {", "  rankdir=LR;", '  node [shape=box, fontname="Helvetica"];']
    for plugin in lock.plugins:
        lines.append(f'  "{plugin.name}";')
    for plugin in lock.plugins:
        for provider, facility, optional in _edges(plugin):
            style = ", style=dashed" if optional else ""
            lines.append(f'  "{provider}" -> "{plugin.name}" [label="{facility}"{style}];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def _mermaid_id(name: str) -> str:
    return "p_" + name.replace("-", "_")


def _mermaid(lock: Lock) -> str:
    lines = ["flowchart LR"]
    for plugin in lock.plugins:
        lines.append(f'  {_mermaid_id(plugin.name)}["{plugin.name}"]')
    for plugin in lock.plugins:
        for provider, facility, optional in _edges(plugin):
            arrow = "-.->" if optional else "-->"
            lines.append(f"  {_mermaid_id(provider)} {arrow}|{facility}| {_mermaid_id(plugin.name)}")
    return "\n".join(lines) + "\n"


def _text(lock: Lock) -> str:
    lines = []
    for position, plugin in enumerate(lock.plugins, start=1):
        provides = ", ".join(plugin.provides) or "nothing"
        lines.append(f"{position:>3}. {plugin.name} {plugin.version}  provides {provides}")
        for provider, facility, optional in _edges(plugin):
            how = "after, if present" if optional else "requires"
            lines.append(f"       {how} {facility} ← {provider}")
    return "\n".join(lines) + "\n"


def _chain(lock: Lock, name: str) -> list[tuple[str, str]]:
    """The longest chain of (plugin, facility it waited for) from the kernel to `name`: its critical path."""
    by_name = {p.name: p for p in lock.plugins}
    memo: dict[str, list[tuple[str, str]]] = {}
    for plugin in lock.plugins:  # the lock is in topological order
        best: list[tuple[str, str]] = []
        for provider, facility, _ in _edges(plugin):
            candidate = [*memo.get(provider, []), (plugin.name, facility)]
            if len(candidate) > len(best):
                best = candidate
        memo[plugin.name] = best
    if name not in by_name:
        return []
    return memo[name]


def explain(lock: Lock, name: str) -> str:
    """`hologram why NAME`: NAME may be a plugin or a facility."""
    plugin = lock.plugin(name)
    if plugin is not None:
        return _explain_plugin(lock, plugin)
    providers = [p for p in lock.plugins if any(f.split("@")[0] == name for f in p.provides)]
    if providers:
        return _explain_facility(lock, name, providers)
    known = sorted({p.name for p in lock.plugins})
    raise HologramError(
        Problem(
            f"{name!r} is neither a plugin nor a facility in {lock.path}",
            hint=f"plugins: {', '.join(known)}; `hologram graph` lists facilities",
        )
    )


def _explain_plugin(lock: Lock, plugin: LockedPlugin) -> str:
    name = plugin.name
    position = [p.name for p in lock.plugins].index(name) + 1
    lines = [f"plugin {name} {plugin.version} is #{position} of {len(lock.plugins)} in {lock.path}"]
    if name == KERNEL:
        lines.append("  it is the kernel: it starts first and provides " + ", ".join(plugin.provides))
        return "\n".join(lines) + "\n"
    edges = _edges(plugin)
    if edges:
        lines.append("  it waits for:")
        for provider, facility, optional in edges:
            note = " (ordering only: after_if_present)" if optional else ""
            lines.append(f"    {facility} from {provider}{note}")
    chain = _chain(lock, name)
    if chain:
        path = " → ".join([KERNEL] + [f"{p} (needs {f})" for p, f in chain])
        lines.append(f"  longest chain before it: {path}")
    dependents = sorted({p.name for p in lock.plugins if any(prov == name for prov, _, _ in _edges(p))})
    if dependents:
        lines.append("  plugins that wait for it: " + ", ".join(dependents))
    return "\n".join(lines) + "\n"


def _explain_facility(lock: Lock, facility: str, providers: list[LockedPlugin]) -> str:
    lines = [f"facility {facility}"]
    for provider in providers:
        offer = next(f for f in provider.provides if f.split("@")[0] == facility)
        lines.append(f"  provided by {provider.name} as {offer}")
        chain = _chain(lock, provider.name)
        if chain:
            path = " → ".join([KERNEL] + [f"{p} (needs {f})" for p, f in chain])
            lines.append(f"    which starts after: {path}")
    consumers = [
        (p.name, via, optional)
        for p in lock.plugins
        for prov, via, optional in _edges(p)
        if via == facility or via.split("@")[0].split(":")[0] == facility
        if prov in {x.name for x in providers}
    ]
    if consumers:
        for consumer, via, optional in consumers:
            kind = "after_if_present" if optional else "requires"
            lines.append(f"  needed by {consumer} ({kind} {via!r})")
    else:
        lines.append("  needed by no plugin")
    return "\n".join(lines) + "\n"
