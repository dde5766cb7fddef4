"""The CLI as a user runs it: exit codes, stdout/stderr, and never a traceback for a user error."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hologram.cli import main
from tests.kit.manifests import write_manifest


def hologram(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hologram", *args], cwd=cwd, capture_output=True, text=True, timeout=60
    )


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    write_manifest(tmp_path / "plugins", "notes", provides=["notes.store"], requires=["kernel.memory"])
    write_manifest(tmp_path / "plugins", "search", provides=["search.index"], requires=["notes.store"])
    return tmp_path


def test_build_then_check_then_stale(
    tree: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tree)
    assert main(["build", "--check", "--no-discover", "-m", "plugins"]) == 1
    assert "hologram.lock: missing; run `hologram build`" in capsys.readouterr().err
    assert main(["build", "--no-discover", "-m", "plugins"]) == 0
    assert "hologram.lock: written (3 plugins" in capsys.readouterr().out
    assert main(["build", "--no-discover", "-m", "plugins"]) == 0
    assert "hologram.lock: unchanged" in capsys.readouterr().out
    assert main(["build", "--check", "--no-discover", "-m", "plugins"]) == 0
    # A description edit is not a change; a requires edit is.
    write_manifest(tree / "plugins", "search", provides=["search.index"], requires=["notes.store"], description="new")
    assert main(["build", "--check", "--no-discover", "-m", "plugins"]) == 0
    before = (tree / "hologram.lock").read_bytes()
    write_manifest(tree / "plugins", "search", provides=["search.index"], requires=["notes.store", "kernel.llm"])
    assert main(["build", "--check", "--no-discover", "-m", "plugins"]) == 1
    assert "stale (the manifests changed); run `hologram build`" in capsys.readouterr().err
    assert (tree / "hologram.lock").read_bytes() == before, "--check must not write"


def test_user_errors_exit_1_without_traceback(tree: Path) -> None:
    write_manifest(tree / "plugins", "broken", requires=["nobody.provides-this"])
    result = hologram("build", "--no-discover", "-m", "plugins", cwd=tree)
    assert result.returncode == 1
    assert "error: facility 'nobody.provides-this' is required by broken" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tree / "hologram.lock").exists()
    missing = hologram("graph", "--lock", "nope.lock", cwd=tree)
    assert missing.returncode == 1 and "nope.lock: error: lock file not found" in missing.stderr
    assert "Traceback" not in missing.stderr


def test_graph_formats_and_why(tree: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tree)
    assert main(["build", "--no-discover", "-m", "plugins"]) == 0
    capsys.readouterr()
    assert main(["graph", "--format", "mermaid"]) == 0
    mermaid = capsys.readouterr().out
    assert mermaid.startswith("flowchart LR\n")
    assert "p_notes -->|notes.store| p_search" in mermaid
    assert main(["graph", "--format", "dot"]) == 0
    assert '"kernel" -> "notes" [label="kernel.memory"];' in capsys.readouterr().out
    assert main(["graph"]) == 0
    assert "  2. notes 0.1.0  provides notes.store" in capsys.readouterr().out
    assert main(["why", "search"]) == 0
    why = capsys.readouterr().out
    assert "notes.store from notes" in why
    assert "longest chain before it: kernel → notes (needs kernel.memory) → search (needs notes.store)" in why
    assert main(["why", "notes.store"]) == 0
    facility = capsys.readouterr().out
    assert "provided by notes as notes.store" in facility and "needed by search (requires 'notes.store')" in facility
    assert main(["why", "nothing.here"]) == 1
    assert "'nothing.here' is neither a plugin nor a facility" in capsys.readouterr().err


def test_check_lints_files_and_repos(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = write_manifest(
        tmp_path,
        "good",
        extra=(
            '[[tools]]\nname = "t"\ndescription = "d"\n'
            'parameters = { type = "object", additionalProperties = false, properties = { a = { type = "string" } } }\n'
        ),
    )
    assert main(["check", str(good)]) == 0
    output = capsys.readouterr()
    assert "warning: tools[0].parameters: parameters without a description: a" in output.err
    # its run.module does not exist, so its handlers' signatures cannot be compared with the schema
    assert "warning: plugin.run: cannot compare the tool schemas with tests_plugins.good" in output.err
    assert "checked 1 manifest(s): 0 error(s), 2 warning(s)" in output.out
    repo = tmp_path / "repo"
    (repo / "src" / "hologram_weather").mkdir(parents=True)
    (repo / "pyproject.toml").write_text(
        '[project]\nname = "hologram-weather"\nversion = "0.1.0"\n'
        '[project.entry-points."hologram.plugins"]\nweather = "hologram_weather"\n',
        encoding="utf-8",
    )
    assert main(["check", str(repo)]) == 1
    assert "the package has no manifest at src/hologram_weather/plugin.toml" in capsys.readouterr().err
    (repo / "src" / "hologram_weather" / "plugin.toml").write_text("[plugin]\nname = 'weather'\n", encoding="utf-8")
    assert main(["check", str(repo)]) == 1
    err = capsys.readouterr().err
    assert "plugin.toml" in err and "plugin.version: required key is missing" in err


def test_help_teaches(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["build", "--help"])
    text = capsys.readouterr().out
    assert "examples:" in text and "hologram build --check" in text


def test_build_reports_broken_manifests_and_the_others_resolution_errors_in_one_run(tmp_path: Path) -> None:
    """A manifest that fails to load no longer stops the build before the rest is checked (issue 10), and
    a facility only the broken manifest provides is not reported missing as well (no cascade).
    Mutation check (done): `build_graph` raising discovery problems before resolving turns this red (the
    missing `other.thing` goes unreported); `resolve` ignoring `broken` adds the cascade error."""
    plugins = tmp_path / "plugins"
    write_manifest(plugins, "store", provides=["x.store"], extra="colour = 'red'\n")  # unknown key: fails to load
    write_manifest(plugins, "reader", requires=["x.store"])  # needs what the broken one would provide
    write_manifest(plugins, "lonely", requires=["other.thing"])  # a real error elsewhere in the same run
    result = hologram("build", "--no-discover", "-m", "plugins", cwd=tmp_path)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "store.toml" in result.stderr and "unknown key" in result.stderr
    assert "facility 'other.thing' is required by lonely" in result.stderr
    assert "x.store" not in result.stderr, result.stderr
    assert "2 errors" in result.stderr


def test_a_manifest_that_is_not_toml_is_named_as_a_possible_provider(tmp_path: Path) -> None:
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "garbage.toml").write_text("this is [ not toml\n")
    write_manifest(plugins, "reader", requires=["x.store"])
    result = hologram("build", "--no-discover", "-m", "plugins", cwd=tmp_path)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "garbage.toml:1: error: invalid TOML" in result.stderr
    assert "facility 'x.store' is required by reader" in result.stderr
    assert "which failed to load and may provide it" in result.stderr


def test_a_full_disk_anywhere_is_one_line_with_the_file_and_the_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An ENOSPC no store turned into its own error (a log, a cache file) still ends a command with one
    line naming the file and the fix, never a traceback; any other error is not swallowed."""
    import errno

    from hologram.cli import build_cmd

    target = tmp_path / "hologram.lock"

    def full(args: object) -> int:
        raise OSError(errno.ENOSPC, "No space left on device", str(target))

    monkeypatch.setattr(build_cmd, "run", full)
    assert main(["build", "-o", str(target)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{target}: error: the disk is full (") and "free some space" in err, err

    def other(args: object) -> int:
        raise OSError(errno.EACCES, "Permission denied", str(target))

    monkeypatch.setattr(build_cmd, "run", other)
    with pytest.raises(PermissionError):
        main(["build", "-o", str(target)])
