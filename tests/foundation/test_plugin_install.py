"""hologram.install in-process, without pip: what `plugin add` accepts, the record, the lock's changes, and
add/remove of a manifest directory as prepare → apply → finish (tests/e2e/test_plugin_add_e2e.py runs the
whole thing with pip and a running kernel)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from hologram.base.errors import HologramError
from hologram.install import record
from hologram.install.summary import summarise
from hologram.install.target import parse_target
from hologram.install.transaction import Project, apply, finish, prepare_add, prepare_remove
from hologram.manifest import load_manifest
from hologram.plan import diff
from hologram.plan.lock import Sources, build, read_lock
from tests.kit.manifests import write_manifest


def test_a_path_is_a_project_or_a_manifest_directory_and_a_word_is_a_package(tmp_path: Path) -> None:
    project = tmp_path / "acme"
    project.mkdir()
    (project / "pyproject.toml").write_text('[project]\nname = "Acme_Plugin"\nversion = "1"\n')
    editable = parse_target("./acme", tmp_path)
    assert (editable.kind, editable.path, editable.distribution) == ("editable", project, "acme-plugin")
    assert editable.pip_args() == ["-e", str(project)]
    write_manifest(tmp_path / "manifests", "gamma")
    assert parse_target(str(tmp_path / "manifests")).kind == "path"
    package = parse_target("Acme_Plugin==1.2")
    assert (package.kind, package.requirement, package.distribution) == ("package", "Acme_Plugin==1.2", "acme-plugin")
    # a bare word is a package even when a directory of that name is here (as pip reads it)
    assert parse_target("acme", tmp_path).kind == "package"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("./nowhere", "no such directory"),
        ("./file.toml", "a plugin is added by its directory, not a file"),
        ("./empty", "neither a Python project (pyproject.toml) nor a directory of plugin manifests"),
        ("acme @ https://example.invalid/acme.whl", "a URL or an environment marker is not taken here"),
        ("not a name!", "is not a package name"),
        ("", "give a path or a package name"),
    ],
)
def test_what_add_cannot_take_is_one_line_saying_what_it_takes(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "file.toml").write_text("")
    (tmp_path / "empty").mkdir()
    with pytest.raises(HologramError) as caught:
        parse_target(text, tmp_path)
    assert message in caught.value.render()
    assert "Traceback" not in caught.value.render()


def test_the_record_is_private_and_a_damaged_one_is_named_and_kept(tmp_path: Path) -> None:
    entry = record.Entry(("acme",), "editable", "/src/acme", (("acme-plugin", "0.1.0"),), "/p/hologram.lock")
    record.write(tmp_path, [entry])
    assert record.read(tmp_path) == [entry]
    assert stat.S_IMODE(os.stat(record.path(tmp_path)).st_mode) == 0o600
    assert record.find([entry], "acme") == entry and record.find([entry], "other") is None
    record.path(tmp_path).write_text("{ not json")
    with pytest.raises(HologramError) as caught:
        record.read(tmp_path)
    assert str(record.path(tmp_path)) in caught.value.render() and "fix or delete" in caught.value.render()
    assert record.path(tmp_path).read_text() == "{ not json"


def test_one_add_or_remove_at_a_time_per_data_directory(tmp_path: Path) -> None:
    with (
        record.exclusive(tmp_path),
        pytest.raises(HologramError, match=f"pid {os.getpid()}"),
        record.exclusive(tmp_path),
    ):
        pass
    with record.exclusive(tmp_path):  # released: free again
        pass


def _lock_of(root: Path) -> Project:
    write_manifest(root / "base", "alpha", provides=["alpha.svc"])
    write_manifest(root / "base", "beta", requires=["alpha.svc"])
    lock = root / "hologram.lock"
    build(lock, Sources(builtins=False, installed=False, paths=("base",)))
    return Project(lock, root / "data")


def test_changes_restart_what_waits_for_a_changed_plugin(tmp_path: Path) -> None:
    project = _lock_of(tmp_path)
    old = read_lock(project.lock_path).file
    write_manifest(tmp_path / "base", "alpha", provides=["alpha.svc"], version="0.2.0")
    write_manifest(tmp_path / "base", "gamma")
    new = diff.parse(build(project.lock_path, old.sources, write=False).text)
    assert new is not None
    changes = diff.changes(old, new)
    assert (changes.added, changes.removed, changes.restarted) == (("gamma",), (), ("alpha", "beta"))


def test_a_manifest_directory_with_a_missing_facility_is_refused_and_the_lock_untouched(tmp_path: Path) -> None:
    project = _lock_of(tmp_path)
    before = project.lock_path.read_bytes()
    write_manifest(tmp_path / "extra", "gamma", requires=["missing.facility"])
    with pytest.raises(HologramError) as caught:
        prepare_add(parse_target(str(tmp_path / "extra")), project)
    text = caught.value.render()
    assert "facility 'missing.facility' is required by gamma" in text
    assert "was not added: nothing changed" in text
    assert project.lock_path.read_bytes() == before
    assert record.read(project.data_dir) == []


def test_add_then_remove_of_a_manifest_directory_gives_back_the_same_lock(tmp_path: Path) -> None:
    project = _lock_of(tmp_path)
    before = project.lock_path.read_bytes()
    write_manifest(tmp_path / "extra", "gamma", requires=["alpha.svc"])
    pending = prepare_add(parse_target(str(tmp_path / "extra")), project)
    assert pending.plugins == ("gamma",) and pending.changes.added == ("gamma",) and not pending.changes.restarted
    assert '+    "extra",' in pending.diff
    assert project.lock_path.read_bytes() == before, "prepare writes nothing"
    apply(pending)
    assert read_lock(project.lock_path).plugin("gamma") is not None
    assert [e.plugins for e in record.read(project.data_dir)] == [("gamma",)]

    removing = prepare_remove("gamma", project)
    assert removing.changes.removed == ("gamma",)
    apply(removing)
    assert finish(removing) == []
    assert project.lock_path.read_bytes() == before
    assert record.read(project.data_dir) == []


def test_remove_refuses_what_add_did_not_bring_and_what_others_require(tmp_path: Path) -> None:
    project = _lock_of(tmp_path)
    with pytest.raises(HologramError, match="alpha was not added with `hologram plugin add`"):
        prepare_remove("alpha", project)
    write_manifest(tmp_path / "extra", "gamma", provides=["gamma.svc"])
    apply(prepare_add(parse_target(str(tmp_path / "extra")), project))
    write_manifest(tmp_path / "base", "delta", requires=["gamma.svc"])
    build(project.lock_path, read_lock(project.lock_path).sources)
    before = project.lock_path.read_bytes()
    with pytest.raises(HologramError) as caught:
        prepare_remove("gamma", project)
    assert "facility 'gamma.svc' is required by delta" in caught.value.render()
    assert "gamma was not removed: nothing changed" in caught.value.render()
    assert project.lock_path.read_bytes() == before


def test_apply_refuses_a_lock_that_changed_since_prepare(tmp_path: Path) -> None:
    project = _lock_of(tmp_path)
    write_manifest(tmp_path / "extra", "gamma")
    pending = prepare_add(parse_target(str(tmp_path / "extra")), project)
    project.lock_path.write_text(project.lock_path.read_text() + "\n# edited meanwhile\n")
    with pytest.raises(HologramError, match="the lock changed while this ran"):
        apply(pending)
    assert record.read(project.data_dir) == []


def test_the_summary_says_what_the_plugin_may_do(tmp_path: Path) -> None:
    tools = (
        '[[tools]]\nname = "zap"\ndescription = "d"\nneeds_approval = true\n\n'
        '[[tools]]\nname = "look"\ndescription = "d"\n'
    )
    path = write_manifest(tmp_path, "zapper", run={"inproc": "zapper"}, requires=["kernel.turns"], extra=tools)
    summary = summarise(load_manifest(path, source="path"))
    assert summary.tools == ("zap", "look") and summary.approval_tools == ("zap",)
    assert summary.runs == "inside the kernel process (in-process module zapper)"
    text = "\n".join(summary.lines())
    assert "run code inside the kernel" in text
    assert "call tools that need your approval each time: zap" in text
    assert "start turns with the model on your behalf (kernel.turns)" in text
    data = summary.to_json()  # the same, as data a client words in its own language (the web page)
    assert data["inproc"] is True and data["command"] == "zapper"
    assert [(a["kind"], a["names"], a["facility"]) for a in data["may"]] == [
        ("inproc", [], None),
        ("approval", ["zap"], None),
        ("grant", [], "kernel.turns"),
    ]
    assert [a["text"] for a in data["may"]] == data["asks"]
