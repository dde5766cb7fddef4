"""A process and everything below it, read from /proc: what the benchmarks and the CI guards measure as one
product (the kernel, the zygote, every plugin; a peer and the helpers it started)."""

from __future__ import annotations

from pathlib import Path


def tree(root: int) -> list[int]:
    """`root` and its descendants alive now, parents first (siblings by pid)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):  # gone meanwhile
            continue
        children.setdefault(ppid, []).append(int(stat.parent.name))
    out, todo = [], [root]
    while todo:
        pid = todo.pop(0)
        out.append(pid)
        todo += sorted(children.get(pid, []))
    return out
