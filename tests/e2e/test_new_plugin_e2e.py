"""From `hologram new plugin acme` to a turn that calls its tool, as a plugin author gets there (issue 36).

Real processes, offline: the repository is generated into a temporary directory; a fresh venv gets this checkout
(hologram-sdk and hologram, editable) and the plugin (editable), their dependencies from this venv's site-packages (tests/kit/venv.py); the
plugin's own tests pass in that venv — the conformance kit comes from hologram's pytest11 entry point there —;
`hologram build` discovers the plugin through its entry point (no -m); `hologram up` starts it beside the built-in
plugins; and a turn through the strict mock calls its tool, whose result (from the plugin's process, with the
greeting configured in settings.toml) reaches the model.

Mutation check (done): the template's Greeter ignoring the configured greeting (always "Hello") passed the
generated repository's own tests (they use the default) and turned this test red at the tool result the model got.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mock_llm import MockLLM
from tests.kit.providers import provider_toml, write_settings
from tests.kit.venv import fresh_venv, pip_install

from .kernel import wait_for_graph

pytestmark = pytest.mark.slow

CHECKOUT = Path(__file__).resolve().parents[2]


def clean_env(venv_bin: Path) -> dict[str, str]:
    """The environment of a person in that venv: its bin first, nothing of this test run's pytest or path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHONPATH", "VIRTUAL_ENV"))}
    env["PATH"] = f"{venv_bin}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(venv_bin.parent)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


@pytest.fixture
def author(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """(the generated repository, the venv's bin) with hologram and the plugin installed there."""
    repo = tmp_path / "hologram-acme"
    python = fresh_venv(tmp_path)
    # the hologram package comes with hologram-sdk (the same framework/ source), the kernel and plugins with the root
    pip_install(python, str(CHECKOUT / "distributions" / "hologram-sdk"), str(CHECKOUT), editable=True)
    bin_dir = python.parent
    made = subprocess.run(
        [str(bin_dir / "hologram"), "new", "plugin", "acme", "--dir", str(repo)],
        capture_output=True, text=True, env=clean_env(bin_dir), cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert made.returncode == 0, made.stdout + made.stderr
    pip_install(python, str(repo), editable=True)
    yield repo, bin_dir


def test_new_plugin_from_scaffold_to_a_turn_that_calls_its_tool(
    author: tuple[Path, Path], tmp_path: Path, deepseek: MockLLM
) -> None:
    repo, bin_dir = author
    env = clean_env(bin_dir)

    # the plugin's own tests, conformance included, in the author's venv
    tests = subprocess.run(
        [str(bin_dir / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=repo, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert "4 passed" in tests.stdout, tests.stdout  # hologram_conformance among them: the pytest11 fixtures are there

    # hologram check, as its CI runs it
    checked = subprocess.run(
        [str(bin_dir / "hologram"), "check", "."], cwd=repo, env=env, capture_output=True, text=True, timeout=120
    )
    assert checked.returncode == 0 and "0 error(s), 0 warning(s)" in checked.stdout, checked.stdout + checked.stderr

    # a project that uses it: build discovers it through its entry point
    project = tmp_path / "project"
    project.mkdir()
    built = subprocess.run(
        [str(bin_dir / "hologram"), "build"], cwd=project, env=env, capture_output=True, text=True, timeout=120
    )
    assert built.returncode == 0, built.stderr
    lock = (project / "hologram.lock").read_text(encoding="utf-8")
    assert 'name = "acme"' in lock and 'source = "entry-point:hologram-acme"' in lock, lock[:2000]

    data = project / ".hologram"
    data.mkdir(mode=0o700)
    write_settings(
        data / "settings.toml",
        "[agent]\nmax_steps = 4\n\n" + provider_toml(deepseek) + '\n[plugins.acme]\ngreeting = "Hei"\n',
    )
    call = {"id": "call_acme", "name": "acme_greet", "arguments": json.dumps({"name": "Ada", "times": 2})}
    deepseek.script(
        [{"reasoning_content": "r", "tool_calls": [call]}, {"reasoning_content": "r", "content": "I greeted Ada."}]
    )

    up = subprocess.Popen(
        [str(bin_dir / "hologram"), "up", "--port", "0"],
        cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        wait_for_graph(up, data, timeout=120)
        asked = subprocess.run(
            [str(bin_dir / "hologram"), "ask", "--json", "greet Ada twice"],
            cwd=project, env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert asked.returncode == 0, asked.stdout + asked.stderr
        answer: dict[str, Any] = json.loads(asked.stdout)
    finally:
        up.send_signal(signal.SIGINT)
        try:
            up.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            up.kill()
            up.communicate()

    tool_messages = [m for m in deepseek.requests[-1].body["messages"] if m["role"] == "tool"]
    assert [(m["tool_call_id"], m["content"]) for m in tool_messages] == [("call_acme", "Hei, Ada! Hei, Ada!")]
    assert "I greeted Ada." in json.dumps(answer, ensure_ascii=False)
    tools_offered = {t["function"]["name"] for t in deepseek.requests[0].body.get("tools", [])}
    assert "acme_greet" in tools_offered
