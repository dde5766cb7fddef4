"""Resolve manifests into the start-up graph: who provides each required facility, and in what order.

Resolution collects every problem before failing (a user fixing a broken tree wants the whole list), then
finds cycles with Tarjan's algorithm so that each independent cycle is reported, and finally orders the
plugins with `graphlib`, breaking ties by name so identical inputs always give the identical order.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from graphlib import TopologicalSorter

from hologram.base.errors import HologramError, Problem
from hologram.manifest import STAGE_NAMES, LoadedManifest, StageHook
from hologram.manifest.facility import KERNEL, KERNEL_FACILITIES, Provided, Required, kernel_provides


@dataclass(frozen=True)
class Edge:
    """`consumer` waits for `facility` from `provider`, because of the manifest entry `declared`."""

    consumer: str
    provider: str
    facility: str
    declared: str
    optional: bool = False

    @property
    def kind(self) -> str:
        return "after_if_present" if self.optional else "requires"


@dataclass
class Node:
    name: str
    version: str
    provides: tuple[Provided, ...]
    loaded: LoadedManifest | None  # None for the kernel
    edges: list[Edge] = field(default_factory=list)

    @property
    def file(self) -> str:
        return str(self.loaded.path) if self.loaded else "<kernel>"

    @property
    def predecessors(self) -> list[str]:
        return sorted({e.provider for e in self.edges})


@dataclass
class Graph:
    nodes: dict[str, Node]
    order: list[str]
    stages: dict[str, list[tuple[str, StageHook]]]

    def providers_of(self, facility: str) -> list[str]:
        return sorted(n.name for n in self.nodes.values() if any(p.name == facility for p in n.provides))

    def consumers_of(self, facility: str) -> list[Edge]:
        return sorted(
            (e for n in self.nodes.values() for e in n.edges if e.facility == facility),
            key=lambda e: e.consumer,
        )


def _kernel_node() -> Node:
    from hologram._version import __version__

    return Node(KERNEL, __version__, kernel_provides(), None)


def _describe_offer(node: Node, offer: Provided) -> str:
    return f"{node.name} ({offer}, {node.file})"


class _Resolver:
    def __init__(self, manifests: Sequence[LoadedManifest], broken: Mapping[str, str], opaque: Sequence[str]) -> None:
        self.broken = broken
        self.opaque = opaque
        self.problems: list[Problem] = []
        self.nodes: dict[str, Node] = {KERNEL: _kernel_node()}
        for loaded in sorted(manifests, key=lambda m: (m.name, str(m.path))):
            existing = self.nodes.get(loaded.name)
            if existing is not None:
                self.problems.append(
                    Problem(
                        f"plugin name {loaded.name!r} is defined twice: in {existing.file} and {loaded.path}",
                        file=str(loaded.path),
                        hint="plugin names must be unique; rename one of them or remove the duplicate source",
                    )
                )
                continue
            facilities = loaded.manifest.facilities
            self.nodes[loaded.name] = Node(
                loaded.name, loaded.manifest.plugin.version, tuple(facilities.provided()), loaded
            )
        self.offers: dict[str, list[tuple[Node, Provided]]] = defaultdict(list)
        for node in self.nodes.values():
            for offer in node.provides:
                self.offers[offer.name].append((node, offer))

    def resolve(self) -> None:
        missing: dict[str, list[Node]] = defaultdict(list)
        for node in self.nodes.values():
            if node.loaded is None:
                continue
            facilities = node.loaded.manifest.facilities
            for text, req in zip(facilities.requires, facilities.required(), strict=True):
                provider = self._choose(node, text, req, missing)
                if provider is not None:
                    node.edges.append(Edge(node.name, provider, req.name, text))
            for text, req in zip(facilities.after_if_present, facilities.optional(), strict=True):
                for candidate, offer in self.offers.get(req.name, []):
                    if candidate is not node and req.accepts(offer) and req.provider in (None, candidate.name):
                        node.edges.append(Edge(node.name, candidate.name, req.name, text, optional=True))
        for facility, consumers in sorted(missing.items()):
            if facility in self.broken:  # its provider failed to load: that error says it, not a cascade
                continue
            names = ", ".join(f"{c.name} ({c.file})" for c in consumers)
            hint = "install or add (-m DIR) a plugin that provides it, or remove the requirement"
            if facility.startswith(f"{KERNEL}."):
                hint = f"the kernel provides {', '.join(f'{KERNEL}.{f}' for f in KERNEL_FACILITIES)}"
            elif self.opaque:
                hint += f"; or fix {', '.join(self.opaque)}, which failed to load and may provide it"
            self.problems.append(
                Problem(
                    f"facility {facility!r} is required by {names}, but no plugin provides it",
                    file=consumers[0].file,
                    hint=hint,
                )
            )

    def _choose(self, node: Node, text: str, req: Required, missing: dict[str, list[Node]]) -> str | None:
        offers = self.offers.get(req.name, [])
        if not offers:
            missing[req.name].append(node)
            return None
        if req.provider is not None:
            offers = [(n, o) for n, o in offers if n.name == req.provider]
            if not offers:
                providers = ", ".join(n.name for n, _ in self.offers[req.name])
                self._problem(
                    node,
                    f"requires {text!r}, but {req.provider!r} does not provide {req.name!r}",
                    f"providers of {req.name!r}: {providers}",
                )
                return None
        matching = [(n, o) for n, o in offers if req.accepts(o)]
        if not matching:
            found = ", ".join(_describe_offer(n, o) for n, o in offers)
            self._problem(
                node,
                f"requires {text!r}, but no provider offers a matching version: {found}",
                "widen the version range or upgrade the provider",
            )
            return None
        if len(matching) > 1:
            found = ", ".join(_describe_offer(n, o) for n, o in matching)
            choices = " or ".join(f"'{req.name}:{n.name}'" for n, _ in matching)
            self._problem(
                node,
                f"requires {text!r}, which is ambiguous: {len(matching)} providers: {found}",
                f"choose one in facilities.requires: {choices}",
            )
            return None
        return matching[0][0].name

    def _problem(self, node: Node, message: str, hint: str | None) -> None:
        self.problems.append(Problem(message, file=node.file, key="facilities.requires", hint=hint))

    def cycles(self) -> list[Problem]:
        problems = []
        for component in _strongly_connected(self.nodes):
            path = _cycle_path(component, self.nodes)
            steps = []
            for consumer, edge in path:
                steps.append(
                    f"  {consumer} → {edge.provider}: {edge.kind} {edge.declared!r} ({self.nodes[consumer].file})"
                )
            chain = " → ".join([p[0] for p in path] + [path[0][0]])
            problems.append(
                Problem(
                    f"dependency cycle: {chain}\n" + "\n".join(steps),
                    file=self.nodes[path[0][0]].file,
                    hint="break the cycle: drop one requirement or turn it into after_if_present elsewhere",
                )
            )
        return problems


def _strongly_connected(nodes: dict[str, Node]) -> list[list[str]]:
    """Tarjan's algorithm, iterative (5,000-plugin graphs must not hit the recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    result: list[list[str]] = []
    counter = 0
    for root in sorted(nodes):
        if root in index:
            continue
        work: list[tuple[str, Iterable[str]]] = [(root, iter(nodes[root].predecessors))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            current, successors = work[-1]
            advanced = False
            for nxt in successors:
                if nxt not in nodes:
                    continue
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(nodes[nxt].predecessors)))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[current] = min(low[current], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[current])
            if low[current] == index[current]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == current:
                        break
                if len(component) > 1:
                    result.append(sorted(component))
    return sorted(result)


def _cycle_path(component: list[str], nodes: dict[str, Node]) -> list[tuple[str, Edge]]:
    """One simple cycle through the component, starting at its smallest name, as (consumer, edge) steps."""
    members = set(component)
    start = component[0]
    # Breadth-first search back to `start` inside the component gives the shortest cycle through it.
    parents: dict[str, tuple[str, Edge]] = {}
    frontier = [start]
    while frontier:
        following = []
        for current in frontier:
            for edge in sorted(nodes[current].edges, key=lambda e: (e.provider, e.declared)):
                if edge.provider not in members:
                    continue
                if edge.provider == start:
                    path = [(current, edge)]
                    while current != start:
                        current, step = parents[current]
                        path.append((current, step))
                    return list(reversed(path))
                if edge.provider not in parents:
                    parents[edge.provider] = (current, edge)
                    following.append(edge.provider)
        frontier = following
    raise AssertionError("a strongly connected component always contains a cycle")


def _order(nodes: dict[str, Node]) -> list[str]:
    sorter: TopologicalSorter[str] = TopologicalSorter()
    for name in sorted(nodes):
        # Every plugin starts after the kernel, whether or not it names a kernel facility.
        implicit = [KERNEL] if name != KERNEL else []
        sorter.add(name, *implicit, *nodes[name].predecessors)
    sorter.prepare()
    order: list[str] = []
    while sorter.is_active():
        ready = sorted(sorter.get_ready())
        order.extend(ready)
        sorter.done(*ready)
    return order


def _stage_order(nodes: dict[str, Node]) -> dict[str, list[tuple[str, StageHook]]]:
    stages: dict[str, list[tuple[str, StageHook]]] = {}
    for stage in STAGE_NAMES:
        hooks = [
            (node.name, hook)
            for node in nodes.values()
            if node.loaded is not None and (hook := node.loaded.manifest.stages.hooked().get(stage))
        ]
        if hooks:
            stages[stage] = sorted(hooks, key=lambda item: (item[1].order, item[0]))
    return stages


def resolve(
    manifests: Sequence[LoadedManifest], *, broken: Mapping[str, str] | None = None, opaque: Sequence[str] = ()
) -> Graph:
    """Resolve every requirement to its provider and order the plugins; raise with every problem found.

    ``broken`` (facility → file) and ``opaque`` (files) describe manifests that failed to load: a facility
    only a broken manifest provides is not reported missing again (discovery reports that manifest)."""
    resolver = _Resolver(manifests, broken or {}, opaque)
    resolver.resolve()
    problems = resolver.problems + resolver.cycles()
    if problems:
        raise HologramError(problems)
    return Graph(resolver.nodes, _order(resolver.nodes), _stage_order(resolver.nodes))
