"""`hologram new plugin`: a repository that passes its own tests as generated, offline; one-line errors.

The generated repositories' tests run in a pytest process of their own (the fixtures through hologram's pytest11
entry point), from the repository's directory, with the plugin not installed (its ``src/`` is on the path through
its pyproject's pytest settings, and the kit runs the plugin from source): exactly what `pytest` does right after
`hologram new plugin`. tests/e2e/test_new_plugin_e2e.py then installs one into a fresh venv and runs it under
`hologram up`.

Mutation checks (done): the Python template's hook denying every name turned
``test_a_generated_python_plugin_passes_its_own_tests`` red (its own test and the conformance run); a
``console.log`` in the Node template's initialize turned ``test_a_generated_node_plugin_passes_its_own_tests`` and
``test_the_node_example_is_what_the_generator_writes`` red, and the same line in the example's main.js
``test_the_node_example_passes_the_conformance_suite`` (the stdout check).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import tomli

from hologram.cli import main
from hologram.plan.check import check
from hologram.scaffold import Names, render
from hologram.testing import check_conformance

ROOT = Path(__file__).resolve().parents[2]
NODE_EXAMPLE = ROOT / "docs" / "examples" / "node-hello"


def run_pytest(repo: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # nothing written into docs/examples
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=repo, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (
            "Acme",
            "error: 'Acme' is not a plugin name: use lowercase letters, digits, '-' and '_', starting with a letter, at most 64 characters (e.g. `hologram new plugin acme`)",
        ),
        (
            "9lives",
            "error: '9lives' is not a plugin name: use lowercase letters, digits, '-' and '_', starting with a letter, at most 64 characters (e.g. `hologram new plugin p-9lives`)",
        ),
        (
            "my plugin",
            "error: 'my plugin' is not a plugin name: use lowercase letters, digits, '-' and '_', starting with a letter, at most 64 characters (e.g. `hologram new plugin my-plugin`)",
        ),
        ("kernel", "error: 'kernel' is the kernel's own name: choose another plugin name"),
    ],
)
def test_a_bad_name_is_one_line_with_the_fix(
    name: str, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["new", "plugin", name]) == 1
    err = capsys.readouterr().err
    assert err == message + "\n"
    assert list(tmp_path.iterdir()) == [], "nothing written"


def test_an_existing_directory_that_is_not_empty_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "mine"
    target.mkdir()
    (target / "notes.txt").write_text("keep me", encoding="utf-8")
    assert main(["new", "plugin", "acme", "--dir", str(target)]) == 1
    assert capsys.readouterr().err == (
        f"error: {target} exists and is not empty: name a new or empty directory with --dir DIR (nothing written)\n"
    )
    assert [p.name for p in target.iterdir()] == ["notes.txt"]
    assert (target / "notes.txt").read_text(encoding="utf-8") == "keep me"


@pytest.mark.slow
def test_a_generated_python_plugin_passes_its_own_tests(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = tmp_path / "empty-dir-is-fine"
    repo.mkdir()
    assert main(["new", "plugin", "acme-tools", "--dir", str(repo)]) == 0
    files = sorted(str(p.relative_to(repo)) for p in repo.rglob("*") if p.is_file())
    assert files == [
        ".github/workflows/ci.yml",
        ".gitignore",
        "README.md",
        "pyproject.toml",
        "src/hologram_acme_tools/__init__.py",
        "src/hologram_acme_tools/__main__.py",
        "src/hologram_acme_tools/config.schema.json",
        "src/hologram_acme_tools/plugin.toml",
        "tests/test_plugin.py",
    ]
    assert "src/hologram_acme_tools/config.schema.json" in capsys.readouterr().out
    project = tomli.loads((repo / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["entry-points"]["hologram.plugins"] == {"acme-tools": "hologram_acme_tools"}
    workflow = (repo / ".github" / "workflows" / "ci.yml").read_text(encoding="utf-8")
    assert "hologram check ." in workflow and "pytest" in workflow
    report = check(repo)
    assert report.checked and not report.errors and not report.warnings, (report.errors, report.warnings)
    result = run_pytest(repo)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4 passed" in result.stdout


@pytest.mark.slow
def test_a_generated_node_plugin_passes_its_own_tests(tmp_path: Path) -> None:
    repo = tmp_path / "hello"
    assert main(["new", "plugin", "hello", "--lang", "node", "--dir", str(repo)]) == 0
    assert (repo / "main.js").is_file() and (repo / "plugin.toml").is_file()
    report = check(repo)
    assert report.checked and not report.errors and not report.warnings, (report.errors, report.warnings)
    result = run_pytest(repo)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 passed" in result.stdout


def test_the_node_example_is_what_the_generator_writes() -> None:
    """docs/examples/node-hello is `hologram new plugin hello --lang node`: one source, the templates."""
    wanted = render("node", Names.of("hello"))
    found = {
        str(p.relative_to(NODE_EXAMPLE)): p.read_text(encoding="utf-8")
        for p in NODE_EXAMPLE.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    assert found == wanted, (
        "regenerate it: rm -r docs/examples/node-hello && hologram new plugin hello --lang node --dir docs/examples/node-hello"
    )


@pytest.mark.slow
def test_the_node_example_passes_the_conformance_suite() -> None:
    report = check_conformance(NODE_EXAMPLE / "plugin.toml")
    assert report.ok, report.render()
    assert any(line.startswith("tools (hello_greet") for line in report.passed), report.render()
    result = run_pytest(NODE_EXAMPLE)
    assert result.returncode == 0, result.stdout + result.stderr
