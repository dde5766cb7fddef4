"""Resolution: facilities to providers, ordering, and every error class with its exact message shape."""

from __future__ import annotations

from pathlib import Path

import pytest

from hologram.base.errors import HologramError
from hologram.manifest.discovery import discover
from hologram.plan.graph import Graph, resolve
from tests.kit.manifests import write_manifest


def resolve_dir(directory: Path) -> Graph:
    return resolve(discover([directory], builtins=False, installed=False).manifests)


def problems(directory: Path) -> list[str]:
    with pytest.raises(HologramError) as caught:
        resolve_dir(directory)
    return [p.render() for p in caught.value.problems]


def test_kernel_node_is_always_first_and_provides_kernel_facilities(tmp_path: Path) -> None:
    graph = resolve_dir(tmp_path)
    assert graph.order == ["kernel"]
    assert {str(p) for p in graph.nodes["kernel"].provides} == {
        f"kernel.{f}@1"
        for f in ("sessions", "memory", "plugins", "tools", "llm", "events", "settings", "turns", "observe")
    }


def test_requires_imply_order_and_ties_break_by_name(tmp_path: Path) -> None:
    write_manifest(tmp_path, "zeta", requires=["kernel.tools"])
    write_manifest(tmp_path, "notes", provides=["notes.store"], requires=["kernel.memory"])
    write_manifest(tmp_path, "alpha", requires=["notes.store"])
    write_manifest(tmp_path, "beta")
    graph = resolve_dir(tmp_path)
    assert graph.order == ["kernel", "beta", "notes", "zeta", "alpha"]
    assert [(e.provider, e.facility) for e in graph.nodes["alpha"].edges] == [("notes", "notes.store")]


def test_missing_facility_names_every_plugin_that_requires_it(tmp_path: Path) -> None:
    a = write_manifest(tmp_path, "a", requires=["search.index"])
    b = write_manifest(tmp_path, "b", requires=["search.index"])
    (error,) = problems(tmp_path)
    assert error.startswith(
        f"{a}: error: facility 'search.index' is required by a ({a}), b ({b}), but no plugin provides it"
    )
    assert "hint: install or add (-m DIR) a plugin that provides it" in error


def test_cycle_prints_full_path_with_manifest_and_facility_per_edge(tmp_path: Path) -> None:
    a = write_manifest(tmp_path, "a", provides=["x.a"], requires=["x.b"])
    b = write_manifest(tmp_path, "b", provides=["x.b"], requires=["x.c"])
    c = write_manifest(tmp_path, "c", provides=["x.c"], after_if_present=["x.a"])
    write_manifest(tmp_path, "d", provides=["x.d"], requires=["x.a"])  # depends on the cycle, not in it
    (error,) = problems(tmp_path)
    assert error.splitlines()[:4] == [
        f"{a}: error: dependency cycle: a → b → c → a",
        f"  a → b: requires 'x.b' ({a})",
        f"  b → c: requires 'x.c' ({b})",
        f"  c → a: after_if_present 'x.a' ({c})",
    ]


def test_independent_cycles_and_errors_are_all_reported(tmp_path: Path) -> None:
    write_manifest(tmp_path, "a", provides=["x.a"], requires=["x.b"])
    write_manifest(tmp_path, "b", provides=["x.b"], requires=["x.a"])
    write_manifest(tmp_path, "c", provides=["x.c"], requires=["x.d"])
    write_manifest(tmp_path, "d", provides=["x.d"], requires=["x.c"])
    write_manifest(tmp_path, "e", requires=["nowhere.to-be-found"])
    errors = problems(tmp_path)
    assert len(errors) == 3
    assert sum("dependency cycle: a → b → a" in e for e in errors) == 1
    assert sum("dependency cycle: c → d → c" in e for e in errors) == 1
    assert sum("'nowhere.to-be-found' is required by e" in e for e in errors) == 1


def test_duplicate_plugin_names_name_both_files(tmp_path: Path) -> None:
    first = write_manifest(tmp_path / "one", "notes")
    second = write_manifest(tmp_path / "two", "notes")
    with pytest.raises(HologramError) as caught:
        resolve(discover([tmp_path / "one", tmp_path / "two"], builtins=False, installed=False).manifests)
    (error,) = [p.render() for p in caught.value.problems]
    assert f"plugin name 'notes' is defined twice: in {first} and {second}" in error


def test_ambiguous_provider_lists_candidates_and_consumer_can_choose(tmp_path: Path) -> None:
    ds = write_manifest(tmp_path, "deepseek", provides=["llm.provider"])
    oa = write_manifest(tmp_path, "openai", provides=["llm.provider"])
    agent = write_manifest(tmp_path, "agent", requires=["llm.provider"])
    (error,) = problems(tmp_path)
    assert error == (
        f"{agent}: error: facilities.requires: requires 'llm.provider', which is ambiguous: 2 providers: "
        f"deepseek (llm.provider, {ds}), openai (llm.provider, {oa})\n"
        "  hint: choose one in facilities.requires: 'llm.provider:deepseek' or 'llm.provider:openai'"
    )
    write_manifest(tmp_path, "agent", requires=["llm.provider:openai"])
    graph = resolve_dir(tmp_path)
    assert [e.provider for e in graph.nodes["agent"].edges] == ["openai"]


def test_named_provider_must_provide_the_facility(tmp_path: Path) -> None:
    write_manifest(tmp_path, "openai", provides=["llm.provider"])
    write_manifest(tmp_path, "agent", requires=["llm.provider:deepseek"])
    (error,) = problems(tmp_path)
    assert "requires 'llm.provider:deepseek', but 'deepseek' does not provide 'llm.provider'" in error


def test_versioned_facilities(tmp_path: Path) -> None:
    write_manifest(tmp_path, "old", provides=["store@1.2"])
    write_manifest(tmp_path, "new", provides=["store@2"])
    write_manifest(tmp_path, "user1", requires=["store@1"])
    write_manifest(tmp_path, "user2", requires=["store@>=2,<3"])
    graph = resolve_dir(tmp_path)
    assert graph.nodes["user1"].edges[0].provider == "old"
    assert graph.nodes["user2"].edges[0].provider == "new"
    write_manifest(tmp_path, "user3", requires=["store@>=3"])
    (error,) = problems(tmp_path)
    assert "requires 'store@>=3', but no provider offers a matching version: new (store@2" in error


def test_after_if_present_orders_only_when_provided(tmp_path: Path) -> None:
    write_manifest(tmp_path, "aaa", after_if_present=["search.index"])
    graph = resolve_dir(tmp_path)
    assert graph.nodes["aaa"].edges == []
    write_manifest(tmp_path, "zzz", provides=["search.index"])
    graph = resolve_dir(tmp_path)
    assert graph.order.index("zzz") < graph.order.index("aaa")
    assert graph.nodes["aaa"].edges[0].optional


def test_stage_order_by_order_then_name(tmp_path: Path) -> None:
    write_manifest(tmp_path, "b", extra="[stages]\nbefore_output = { order = 10 }\n")
    write_manifest(tmp_path, "a", extra="[stages]\nbefore_output = { order = 10 }\n")
    write_manifest(tmp_path, "c", extra="[stages]\nbefore_output = { order = 5 }\non_input = {}\n")
    graph = resolve_dir(tmp_path)
    assert [name for name, _ in graph.stages["before_output"]] == ["c", "a", "b"]
    assert [name for name, _ in graph.stages["on_input"]] == ["c"]


def test_invalid_manifests_in_several_files_all_reported(tmp_path: Path) -> None:
    (tmp_path / "x.toml").write_text("[plugin\n", encoding="utf-8")
    write_manifest(tmp_path, "y", requires=["BAD"])
    with pytest.raises(HologramError) as caught:
        discover([tmp_path], builtins=False, installed=False)
    rendered = [p.render() for p in caught.value.problems]
    assert len(rendered) == 2
    assert any("x.toml:1: error: invalid TOML" in r for r in rendered)
    assert any("y.toml" in r and "'BAD' is not a valid facility name" in r for r in rendered)
