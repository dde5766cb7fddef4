"""Hologram installed as a tool, as a user installs it: the three wheels built from this tree, `uv tool
install`ed into a clean HOME from a local wheelhouse (no index, --offline), then `hologram up` in a directory
that holds only a settings file answers `hologram ask` through the strict mock; the per-user locations, the
systemd user unit of that install, and hologram-sdk alone in a fresh venv (it checks a plugin, runs it under its
test harness, runs a plugin repository's tests with the conformance kit — the guide's example and one `hologram
new` writes —, runs the strict mock LLM, and has none of the kernel's heavy dependencies).

Nothing here imports the checkout into the installed programs: they run with a scrubbed environment (PATH,
HOME, no PYTHONPATH), and the installed interpreter is asked where `hologram` comes from. The wheelhouse is
made once from this venv's versions (tools/wheelhouse.py); the wheels are built fresh each run.

Mutation checks (done): dropping the built-in manifests from the hologram wheel (the force-include in
pyproject.toml) fails the first test (the lock has no built-ins, `up` waits on no http plugin and `ask` gets
no answer it expects); making `hologram up` refuse a missing lock again fails it at `up`; leaving
hologram-use-model out of hologram's dependencies fails the embedder check (the install has no model); adding
numpy to hologram-sdk's dependencies fails the SDK test; Type=bogus in service_unit.py fails the systemd test
(systemd-analyze exits 0 but prints that it ignores the line); removing the no-pip check of
hologram/install/environment.py fails the plugin-add test (pip's "No module named pip" instead); the mock
importing httpx fails the SDK test at the mock (no module named httpx there).
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hologram._version import __version__
from hologram.kernel.control import call
from mock_llm import MockLLM
from tests.e2e.kernel import NOT_YET, wait_for_graph
from tests.kit.providers import provider_toml, write_settings
from tests.kit.wait import wait_until
from wheelhouse import build_wheels, dependency_wheelhouse

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
UV = Path(sys.executable).parent / "uv"
WEATHER = ROOT / "docs" / "examples" / "hologram-weather"
HARNESS = """\
import asyncio
from hologram.sdk.testing import PluginHarness

async def main():
    async with PluginHarness.from_manifest("src/hologram_weather/plugin.toml") as harness:
        print((await harness.call_tool("weather_today", {"city": "Oslo"}))["content"])

asyncio.run(main())
"""  # the plugin as a real process through the SDK's harness (docs/authoring.md), no kernel
HEAVY = ("numpy", "onnxruntime", "kuzu", "jieba", "httpx", "hologram_plugins", "hologram_use_model")


@dataclass
class Install:
    home: Path
    env: dict[str, str]
    wheels: tuple[Path, Path]  # the dependency wheelhouse, the three wheels

    @property
    def hologram(self) -> Path:
        return self.home / ".local" / "bin" / "hologram"

    @property
    def tool(self) -> Path:
        return self.home / ".local" / "share" / "uv" / "tools" / "hologram"

    def run(self, *args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.hologram), *args], cwd=cwd, env=env or self.env, capture_output=True, text=True, timeout=120
        )


def base_python() -> str:
    """The interpreter this venv was made from: uv makes its own venvs from it (never downloads one)."""
    return getattr(sys, "_base_executable", sys.executable)


def clean_env(home: Path) -> dict[str, str]:
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "UV_PYTHON_DOWNLOADS": "never",
        "UV_NO_CONFIG": "1",
    }


def uv(*args: str, python: str, env: dict[str, str], wheels: tuple[Path, Path]) -> None:
    """`uv ARGS` from the wheelhouse alone, with `python`: the base interpreter for `uv tool install` (its
    venv is made from it), the target venv's for `uv pip install` (never the base: that would install there)."""
    finds = [f"--find-links={w}" for w in wheels]
    result = subprocess.run(
        [str(UV), *args, "--offline", "--no-index", *finds, "--python", python],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, f"uv {' '.join(args)}:\n{result.stdout}\n{result.stderr}"


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    dist = tmp_path_factory.mktemp("dist")
    build_wheels(dist)
    yield dependency_wheelhouse(), dist
    shutil.rmtree(dist, ignore_errors=True)  # 45 MB of model: not kept with pytest's last three runs


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory, wheels: tuple[Path, Path]) -> Iterator[Install]:
    home = tmp_path_factory.mktemp("home")
    install = Install(home, clean_env(home), wheels)
    uv("tool", "install", f"hologram=={__version__}", python=base_python(), env=install.env, wheels=wheels)
    assert install.hologram.is_file(), sorted(p.name for p in (home / ".local" / "bin").glob("*"))
    where = subprocess.run(
        [str(install.tool / "bin" / "python"), "-c", "import hologram, hologram_plugins; print(hologram.__file__)"],
        env=install.env, capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    assert where.startswith(str(install.tool)), f"the installed hologram imports {where}"
    yield install
    shutil.rmtree(home, ignore_errors=True)  # the tool's venv and uv's cache, ~0.5 GB


class Up:
    """`hologram up --port 0` of the installed tool in `directory`, stopped with SIGTERM (as systemd does)."""

    def __init__(self, install: Install, directory: Path) -> None:
        self.data = directory / ".hologram"
        self.process = subprocess.Popen(
            [str(install.hologram), "up", "--port", "0"],
            cwd=directory, env=install.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip

    def stop(self) -> tuple[int, str]:
        self.process.send_signal(signal.SIGTERM)
        try:
            out, _ = self.process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            out, _ = self.process.communicate()
        return self.process.returncode, out


@pytest.fixture
def up(installed: Install, mock: MockLLM, tmp_path: Path) -> Iterator[Up]:
    directory = tmp_path / "agent"
    write_settings(directory / ".hologram" / "settings.toml", provider_toml(mock))  # the only file there
    mock.reset()
    kernel = Up(installed, directory)
    yield kernel
    if kernel.process.poll() is None:
        kernel.stop()


def test_the_tool_install_builds_its_lock_and_answers_ask_through_the_strict_mock(
    installed: Install, up: Up, mock: MockLLM
) -> None:
    directory = up.data.parent
    wait_for_graph(up.process, up.data, timeout=120)  # a failure bound: the first start builds the model's cache
    lock = (directory / "hologram.lock").read_text()
    assert 'manifest = "<builtin>/http.toml"' in lock, lock  # the built-ins came with the wheel
    plugins = {p["name"]: p for p in call(up.data, "status", timeout=5)["plugins"]}
    assert {"http", "files", "shell", "notes"} <= set(plugins), sorted(plugins)
    kernel_pid = call(up.data, "status", timeout=5)["kernel"]["pid"]
    assert str(installed.tool) in Path(f"/proc/{kernel_pid}/cmdline").read_text(), "not the installed interpreter"

    mock.script([{"reasoning_content": "r", "content": "hello from the tool install"}])
    answer = installed.run("ask", "--json", "hello", cwd=directory)
    assert answer.returncode == 0, answer.stderr
    assert json.loads(answer.stdout)["output"] == "hello from the tool install"
    assert len(mock.requests) == 1 and mock.rejections == []

    def memory() -> dict[str, Any]:
        status: dict[str, Any] = call(up.data, "status", timeout=5)
        return dict(status["memory"])

    loaded = wait_until(
        memory, accept=lambda m: m.get("embedder_ready"), timeout=120, what="the embedding model loaded",
        retry_on=NOT_YET,
    )  # fmt: skip
    assert loaded["embedder"] == "use-multilingual-v3/int8-numpy", loaded  # hologram-use-model, in numpy
    onnx = subprocess.run([str(installed.tool / "bin" / "python"), "-c", "import onnxruntime"], capture_output=True)
    assert onnx.returncode != 0, "onnxruntime is an extra ([onnx]), not a dependency"

    code, out = up.stop()  # SIGTERM, as `systemctl --user stop hologram` sends it (KillMode=mixed)
    assert code == 0 and "Hologram stopped." in out, out


def test_user_puts_the_lock_and_the_data_under_xdg_data_home(installed: Install, tmp_path: Path) -> None:
    xdg = tmp_path / "xdg"
    built = installed.run("build", "--user", cwd=tmp_path, env={**installed.env, "XDG_DATA_HOME": str(xdg)})
    assert built.returncode == 0, built.stderr
    assert (xdg / "hologram" / "hologram.lock").is_file()
    assert not (tmp_path / "hologram.lock").exists()
    default = installed.run("build", "--user", cwd=tmp_path)  # XDG_DATA_HOME unset: ~/.local/share
    assert default.returncode == 0, default.stderr
    assert (installed.home / ".local" / "share" / "hologram" / "hologram.lock").is_file()


def test_plugin_add_in_a_uv_tool_install_says_how_the_tool_manager_adds_one(installed: Install, tmp_path: Path) -> None:
    """A uv tool venv has no pip: `hologram plugin add` says what to run instead of pip's own error."""
    added = installed.run("plugin", "add", "hologram-weather", "--yes", cwd=tmp_path)
    assert added.returncode == 1 and "Traceback" not in added.stderr, added.stderr
    assert "has no pip" in added.stderr and "uv tool install hologram --with PACKAGE" in added.stderr, added.stderr


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed (apt systemd)")
def test_the_service_unit_of_the_tool_install_passes_systemd_analyze_verify(installed: Install, tmp_path: Path) -> None:
    written = installed.run("service", "install", "--user", cwd=tmp_path)
    assert written.returncode == 0, written.stderr
    assert "systemctl --user enable --now hologram" in written.stdout and "loginctl enable-linger" in written.stdout
    unit = installed.home / ".config" / "systemd" / "user" / "hologram.service"
    text = unit.read_text()
    data = installed.home / ".local" / "share" / "hologram"
    exec_start = f"ExecStart={installed.tool / 'bin' / 'hologram'} up --lock {data / 'hologram.lock'} --data {data}"
    assert exec_start in text.splitlines(), text
    assert "KillMode=mixed" in text and "Restart=on-failure" in text
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    verify = subprocess.run(
        ["systemd-analyze", "--user", "verify", str(unit)],
        env={**installed.env, "XDG_RUNTIME_DIR": str(runtime)}, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert verify.returncode == 0 and verify.stdout + verify.stderr == "", verify.stdout + verify.stderr
    removed = installed.run("service", "uninstall", cwd=tmp_path)
    assert removed.returncode == 0 and not unit.exists(), removed.stderr


def test_hologram_sdk_alone_checks_a_plugin_without_the_kernels_dependencies(
    wheels: tuple[Path, Path], tmp_path: Path
) -> None:
    env = clean_env(tmp_path / "home")
    venv = tmp_path / "sdk"
    subprocess.run([str(UV), "venv", "--quiet", "--python", base_python(), str(venv)], env=env, check=True)
    python = venv / "bin" / "python"
    assert python.is_file()
    uv("pip", "install", f"hologram-sdk=={__version__}", "pytest", python=str(python), env=env, wheels=wheels)
    probe = f"import importlib.util as u; print([n for n in {HEAVY!r} if u.find_spec(n)])"
    present = subprocess.run([str(python), "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert present.stdout.strip() == "[]", present.stdout

    hologram = str(venv / "bin" / "hologram")
    checked = subprocess.run([hologram, "check", str(WEATHER)], env=env, capture_output=True, text=True, cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr
    assert "checked 1 manifest(s): 0 error(s), 0 warning(s)" in checked.stdout
    harness = subprocess.run(
        [str(python), "-c", HARNESS], env={**env, "PYTHONPATH": str(WEATHER / "src")}, cwd=WEATHER,
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert harness.returncode == 0 and harness.stdout.strip() == "Sunny in Oslo (metric)", harness.stderr

    # a plugin repository's tests with the conformance kit, as its CI runs them (docs/install.md, "The SDK alone"):
    # the example of docs/authoring.md, and a repository `hologram new` writes here, both with pytest and the SDK
    weather = shutil.copytree(WEATHER, tmp_path / "hologram-weather")
    made = subprocess.run([hologram, "new", "plugin", "acme"], env=env, capture_output=True, text=True, cwd=tmp_path)
    assert made.returncode == 0, made.stdout + made.stderr
    for repo, passed in ((weather, "2 passed"), (tmp_path / "hologram-acme", "4 passed")):
        tests = subprocess.run(
            [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider"],
            env=env, cwd=repo, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert tests.returncode == 0 and passed in tests.stdout, tests.stdout + tests.stderr

    # the strict mock LLM of the kit runs there too (the standard library only)
    mock = subprocess.Popen(
        [str(python), "-m", "hologram.testing.mock_llm", "--port", "0"], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert mock.stdout is not None
        assert mock.stdout.readline().startswith("mock_llm listening on http://127.0.0.1:")
    finally:
        mock.terminate()
        mock.communicate(timeout=30)

    empty = tmp_path / "empty"
    empty.mkdir()
    refused = subprocess.run([hologram, "up"], env=env, capture_output=True, text=True, cwd=empty)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr, refused.stderr
    assert "runs the kernel" in refused.stderr and "pip install hologram" in refused.stderr, refused.stderr
    assert list(empty.iterdir()) == [], "a refused up must create nothing"
    built = subprocess.run([hologram, "build"], env=env, capture_output=True, text=True, cwd=empty)
    assert built.returncode == 0, built.stderr  # the kernel alone: no built-ins here, a warning says why
    assert "warning: no built-in plugins" in built.stderr and "(1 plugins," in built.stdout, built
