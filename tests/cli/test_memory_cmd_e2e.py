"""`hologram memory` against a real `hologram up`: the data directory is seeded with the real stores first
(sessions, an L2 event, a scene, an L3 graph written through `GraphStore.move`), then the kernel starts and
every sub-command goes through its control socket (`admin/<method>`).

Proven here: the answers come from the kernel (the text header says so, and the graph is locked by the
kernel, so an offline read could not have answered); stats --json, search with an L3 triple and its source,
graph with sources and as DOT, scenes; distill through the kernel moves the L2 event into L3; a refused
parameter names the field; and a kernel that fails the call (the graph is held by another process) is
reported as the kernel's failure, with nothing read offline.

Mutation checks (done, memory_source.py copied aside and back): making `answer` fall back to offline
whenever the kernel's reply is an error turns test_a_failing_kernel_is_reported_not_bypassed red (the
command then exits 1 with the graph-locked error of its own offline open, not the kernel's, or exits 0
with a stale answer); making `kernel_runs` always False turns test_stats_and_graph_through_the_kernel red
(the header says offline, and the graph is locked).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from hologram.memory.graph import GraphLockedError, open_graph_store
from mock_llm import MockLLM
from tests.cli.dot_parse import parse_dot
from tests.cli.memory_seed import SOURCE_TEXT, TRIPLES, seed, seed_graph
from tests.e2e.kernel import E2EKernel

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory, mock: MockLLM) -> Iterator[tuple[E2EKernel, dict[str, str]]]:
    kernel = E2EKernel(tmp_path_factory.mktemp("memcli"), [mock])
    rules_extractor(kernel)
    ids = seed(kernel.data)
    seed_graph(kernel.data, ids["en"])
    kernel.start()
    try:
        yield kernel, ids
    finally:
        kernel.stop()


def rules_extractor(kernel: E2EKernel) -> None:
    """Distillation by the deterministic extractor: the mock provider is there for turns, not for triples."""
    settings = kernel.data / "settings.toml"
    settings.write_text(settings.read_text() + '\n[memory.cooling]\nextractor = "rules"\n')


def memory(kernel: E2EKernel, *args: str) -> tuple[int, str, str]:
    done = kernel.hologram("memory", *args, "--data", str(kernel.data), timeout=300)
    return done.returncode, done.stdout, done.stderr


def test_stats_and_graph_through_the_kernel(seeded: tuple[E2EKernel, dict[str, str]]) -> None:
    kernel, ids = seeded
    code, out, err = memory(kernel, "stats", "--json")
    assert code == 0, err
    stats = json.loads(out)
    assert {"l1": 3, "l2": 1, "l3_triples": 3, "scenes": 1}.items() <= stats.items(), stats
    code, out, err = memory(kernel, "stats")
    assert code == 0 and "from the running kernel" in out.splitlines()[0], out
    with pytest.raises(GraphLockedError):  # the kernel holds the graph: no offline read could have answered
        open_graph_store(kernel.data / "graph.kz")

    code, out, err = memory(kernel, "graph", "Caroline", "--hops", "2", "--json")
    assert code == 0, err
    triples = json.loads(out)["triples"]
    assert {(t["subject"], t["predicate"], t["value"]) for t in triples} == TRIPLES
    assert all(t["source"]["text"] == SOURCE_TEXT and t["source"]["session"] == ids["en"] for t in triples)
    code, out, err = memory(kernel, "graph", "Caroline", "--hops", "2", "--dot")
    graph = parse_dot(out)
    assert {(graph.labels[a], label, graph.labels[b]) for a, b, label in graph.edges} == TRIPLES
    code, out, err = memory(kernel, "graph", "Caroline")
    assert code == 0 and "likes" in out and "pottery" in out and "I love pottery" in out, out


def test_search_and_scenes_through_the_kernel(seeded: tuple[E2EKernel, dict[str, str]]) -> None:
    kernel, ids = seeded
    code, out, err = memory(kernel, "search", "Caroline pottery", "--json")
    assert code == 0, err
    hits = json.loads(out)["hits"]
    triple = next(h for h in hits if h["layer"] == "L3" and h["kind"] == "triple" and "pottery" in h["text"])
    assert (
        triple["text"] == "Caroline | likes | pottery"
        and triple["source_text"] == SOURCE_TEXT
        and triple["session"] == ids["en"]
    )
    code, out, err = memory(kernel, "search", "小橘子")
    assert code == 0 and any(line.startswith("L1 ") and "小橘子" in line for line in out.splitlines()), out
    code, out, err = memory(kernel, "scenes", "--json")
    assert code == 0 and json.loads(out)["scenes"][0]["features"]["channel"] == "qq", out


def test_a_refused_parameter_names_the_field(seeded: tuple[E2EKernel, dict[str, str]]) -> None:
    kernel, _ = seeded
    code, _, err = memory(kernel, "graph", "Caroline", "--limit", "0")
    assert code == 1 and "hologram memory graph: limit: a whole number from 1 to 200" in err, err
    assert "could not answer" not in err and "Traceback" not in err


def test_distill_through_the_kernel(seeded: tuple[E2EKernel, dict[str, str]]) -> None:
    kernel, _ = seeded
    code, out, err = memory(kernel, "distill", "--idle-hours", "0", "--json")
    assert code == 0, err
    assert json.loads(out)["moved"] == 1, out
    code, out, err = memory(kernel, "stats", "--json")
    stats = json.loads(out)
    assert (stats["l2"], stats["l3_events"], stats["l3_blocks"]) == (0, 1, 2), stats


@pytest.fixture
def unlocked(tmp_path: Path, mock: MockLLM) -> Iterator[E2EKernel]:
    """A kernel whose data directory has an L2 event and no graph yet (the kernel has not opened one)."""
    kernel = E2EKernel(tmp_path, [mock])
    seed(kernel.data)
    kernel.start()
    try:
        yield kernel
    finally:
        kernel.stop()


def test_a_failing_kernel_is_reported_not_bypassed(unlocked: E2EKernel) -> None:
    """Another process holds the graph (here: this test), so the kernel's distillation cannot open it and
    fails; the command says the kernel failed and what to do, and reads nothing offline."""
    kernel = unlocked
    with open_graph_store(kernel.data / "graph.kz"):
        code, out, err = memory(kernel, "distill", "--idle-hours", "0")
        graph_code, _, graph_err = memory(kernel, "graph", "Caroline")
    assert code == 1, (out, err)
    assert "the running kernel could not answer `hologram memory distill`" in err, err
    assert "nothing was read offline" in err and "open in another process" in err, err
    assert "Traceback" not in err
    assert graph_code == 1 and "the memory graph (L3) is unavailable" in graph_err, graph_err  # not "nothing known"
    code, out, err = memory(kernel, "stats", "--json")
    assert code == 0 and json.loads(out)["l2"] == 1, (out, err)  # nothing moved
