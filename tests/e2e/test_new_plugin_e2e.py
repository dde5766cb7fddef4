"""From `hologram new plugin acme` to a turn that calls its tool, as a plugin author gets there (issue 36).

Real processes, offline: the repository is generated into a temporary directory; a fresh venv gets this checkout
with docs/install.md's one `pip install` line (hologram-sdk and hologram editable, hologram-use-model built) and
the plugin (editable), their dependencies from this venv's site-packages (tests/kit/venv.py); the
plugin's own tests pass in that venv — the conformance kit comes from hologram's pytest11 entry point there —;
`hologram build` discovers the plugin through its entry point (no -m); `hologram up` starts it beside the built-in
plugins; and a turn through the strict mock calls its tool, whose result (from the plugin's process, with the
greeting configured in settings.toml) reaches the model. That last part follows docs/authoring.md's "Try it
under a real kernel" word for word: the mock started from the author's venv with the page's command (the kit's
copy, `python -m hologram.testing.mock_llm`), the page's steps.json and settings snippet, its `hologram ask`, and
what the page says the terminal shows and the model was sent (`GET /_mock/requests`).

Mutation checks (done): the template's Greeter ignoring the configured greeting (always "Hello") passed the
generated repository's own tests (they use the default) and turned this test red at the tool result the model
got; the page's settings snippet with `kind = "deepseek"` (which the mock, run as the page says, refuses)
turned it red at the ask.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import textwrap
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kit.mock_llm import MockProcess
from tests.kit.providers import write_settings
from tests.kit.venv import OFFLINE_PIP, fresh_venv, pip_install

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


def install_as_the_docs_say(python: Path) -> None:
    """docs/install.md, "From a checkout, into your own venv": its one `pip install` line, with this checkout for
    the page's, offline (the dependencies are this environment's, the model file this venv's installed copy)."""
    page = (CHECKOUT / "docs" / "install.md").read_text(encoding="utf-8")
    section = page[page.index("## From a checkout, into your own venv") :]
    line = next(x for x in section.splitlines() if x.startswith("pip install -e $HOME/src/hologram/"))
    words = line.replace("$HOME/src/hologram", str(CHECKOUT)).split()
    assert words[:2] == ["pip", "install"], line
    from hologram.memory.embed.embedder import model_file

    env = {**os.environ, **OFFLINE_PIP, "HOLOGRAM_USE_MODEL_FROM": str(model_file())}
    offline = ["--no-deps", "--no-index", "--no-build-isolation", "-q"]
    done = subprocess.run(
        [str(python), "-m", "pip", "install", *offline, *words[2:]],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    where = subprocess.run(
        [str(python), "-c", "import hologram, hologram_plugins, hologram_use_model; print(hologram.__file__)"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    assert where == str(CHECKOUT / "framework" / "hologram" / "__init__.py"), where  # editable: the checkout runs


@pytest.fixture
def author(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """(the generated repository, the venv's bin) with hologram and the plugin installed there."""
    repo = tmp_path / "hologram-acme"
    python = fresh_venv(tmp_path)
    install_as_the_docs_say(python)
    bin_dir = python.parent
    made = subprocess.run(
        [str(bin_dir / "hologram"), "new", "plugin", "acme", "--dir", str(repo)],
        capture_output=True, text=True, env=clean_env(bin_dir), cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert made.returncode == 0, made.stdout + made.stderr
    pip_install(python, str(repo), editable=True)
    yield repo, bin_dir


def test_new_plugin_from_scaffold_to_a_turn_that_calls_its_tool(author: tuple[Path, Path], tmp_path: Path) -> None:
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

    # docs/authoring.md, "Try it under a real kernel": the strict mock from the kit, started from the author's venv
    # as the guide says, the guide's settings snippet, its scripted tool call, and what the model was sent
    guide = TryIt.read()
    (project / "steps.json").write_text(guide.steps, encoding="utf-8")
    mock = MockProcess(*guide.mock_args(), cwd=project, python=str(bin_dir / "python")).start()
    try:
        data = project / ".hologram"
        data.mkdir(mode=0o700)
        write_settings(data / "settings.toml", "[agent]\nmax_steps = 4\n\n" + guide.settings(mock.base_url))
        up = subprocess.Popen(
            [str(bin_dir / "hologram"), "up", "--port", "0"],
            cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        try:
            wait_for_graph(up, data, timeout=120)
            asked = subprocess.run(
                [str(bin_dir / "hologram"), "ask", guide.question],
                cwd=project, env=env, capture_output=True, text=True, timeout=120,
            )  # fmt: skip
        finally:
            up.send_signal(signal.SIGINT)
            try:
                up.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                up.kill()
                up.communicate()
        requests = json.loads(urllib.request.urlopen(mock.root + "/_mock/requests", timeout=30).read())
    finally:
        mock.stop()

    assert asked.returncode == 0, asked.stdout + asked.stderr
    assert asked.stdout == guide.answer + "\n", asked.stdout
    assert guide.tool_line in asked.stderr.splitlines(), asked.stderr
    assert [r["rejected"] for r in requests] == [False, False], requests
    second = requests[1]["body"]
    # the tool's result as the model reads it, from the plugin's process, with the greeting of settings.toml
    assert second["messages"][-1] == guide.tool_message, second["messages"][-1]
    assert "acme_greet" in {t["function"]["name"] for t in requests[0]["body"].get("tools", [])}


class TryIt:
    """What docs/authoring.md's "Try it under a real kernel" tells an author to write and run, read from the page."""

    def __init__(self, section: str, plugin_table: str) -> None:
        blocks = re.findall(r"```(\w+)\n(.*?)\n *```", section, re.S)
        kinds = {kind: textwrap.dedent(body) for kind, body in blocks}
        self.steps = kinds["json"]
        self.command = kinds["sh"].strip()
        self.providers = kinds["toml"]
        self.plugin_table = plugin_table
        self.question = re.search(r'`hologram ask "([^"]+)"`', section)[1]  # type: ignore[index]
        self.tool_line = re.search(r"\(`(\[tool [^`]+\])`", section)[1]  # type: ignore[index]
        self.answer = re.search(r"and prints `([^`]+)`", section)[1]  # type: ignore[index]
        self.tool_message = json.loads(re.search(r'`(\{"role": "tool".*?\})`', section)[1])  # type: ignore[index]

    @classmethod
    def read(cls) -> TryIt:
        page = (CHECKOUT / "docs" / "authoring.md").read_text(encoding="utf-8")
        section = page[page.index("### Try it under a real kernel") : page.index("## 5. CI and publishing")]
        running = page[page.index("## 4. Running it in a kernel") : page.index("### Try it under")]
        (table,) = re.findall(r"```toml\n(\[plugins\.acme\].*?)\n```", running, re.S)
        return cls(section, table)

    def mock_args(self) -> list[str]:
        """The page's command after ``-m hologram.testing.mock_llm``, its fixed port left to MockProcess (0)."""
        words = self.command.split()
        assert words[:3] == ["python", "-m", "hologram.testing.mock_llm"], self.command
        args = words[3:]
        at = args.index("--port")
        return args[:at] + args[at + 2 :]

    def settings(self, base_url: str) -> str:
        """The page's [[providers]] snippet pointed at the running mock, and its [plugins.acme] table."""
        assert 'base_url = "http://127.0.0.1:8765/v1"' in self.providers, self.providers
        providers = self.providers.replace("http://127.0.0.1:8765/v1", base_url)
        return providers + "\n" + self.plugin_table + "\n"
