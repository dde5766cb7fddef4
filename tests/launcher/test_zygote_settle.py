"""The zygote settles its heap before forking (hologram/zygote/settle.py): a child's new objects then land on
pages of its own instead of in the holes of pages it shares with the zygote, each such page copied whole.

Measured in real forks, in a fresh interpreter per test: pages are counted from /proc (Private_Dirty of the
child), never timed. Mutation-checked: with `fill_pool_holes` returning 0 before allocating, both tests fail
(the free blocks stay scattered; the settled child copies as much as the unsettled one).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts pages from /proc")

HOLES = """
import sys
from hologram.zygote.settle import free_blocks
kept = [bytes(15) for _ in range(60_000)]  # 48-byte blocks: ~180 pools, ~700 pages
del kept[::2]  # a hole in every page
"""

FORK = """
import json, os
def private_dirty_kb():
    with open("/proc/self/smaps_rollup") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("Private_Dirty:"))
def child_cost():
    \"\"\"What 30,000 new objects (as many as there are holes) cost a forked child: the growth of its private
    dirty memory, read by the child itself before and after; the least of three forks.\"\"\"
    costs = []
    for _ in range(3):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            before = private_dirty_kb()
            fresh = [bytes(15) for _ in range(30_000)]
            os.write(w, str(private_dirty_kb() - before).encode())
            os._exit(0)
        os.close(w)
        costs.append(int(os.read(r, 100)))
        os.close(r)
        os.waitpid(pid, 0)
    return min(costs)
"""


def run(code: str) -> dict[str, int]:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, int] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_settling_leaves_no_class_with_more_free_blocks_than_one_fresh_pool() -> None:
    """Free blocks left after `settle` are those of at most one newly started pool per size class."""
    found = run(
        HOLES
        + """
import json
from hologram.zygote.settle import settle
before = free_blocks()
settled = settle()
after = free_blocks()
print(json.dumps({"before48": before[48], "after48": after[48], "filled": settled.filled,
                  "over": sum(1 for size, n in after.items() if n > 16384 // size)}))
"""
    )
    assert found["before48"] >= 30_000, f"the test made no holes: {found}"
    assert found["filled"] >= 30_000, found
    assert found["after48"] <= 16384 // 48 and found["over"] == 0, found


def test_a_child_of_a_settled_parent_copies_fewer_pages_for_the_same_new_objects() -> None:
    """The same 30,000 new objects (as many as the holes): 3.1 MB of the child's memory when they fill the holes
    of ~700 pages shared with the parent, each copied, against 1.7 MB in fresh pages once the parent settled."""
    found = run(
        HOLES
        + FORK
        + """
from hologram.zygote.settle import settle
unsettled = child_cost()
settle()
settled = child_cost()
print(json.dumps({"unsettled": unsettled, "settled": settled}))
"""
    )
    assert found["unsettled"] >= 2000, f"the unsettled child should have copied the holes' pages: {found}"
    assert found["settled"] < 0.75 * found["unsettled"], found
