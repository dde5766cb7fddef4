"""The kit's own contract: what each helper returns, and what it says when the thing awaited never happens."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
import tomli

from hologram.config.settings import load_settings
from hologram.manifest import load_manifest
from mock_llm import MockLLM
from tests.kit.loop import run
from tests.kit.manifests import manifest_text, write_manifest
from tests.kit.mock_llm import MockProcess
from tests.kit.providers import provider, provider_toml, write_settings
from tests.kit.venv import make_wheel, offline_env, throwaway_venv
from tests.kit.wait import wait_until, wait_until_async


def test_wait_until_returns_the_first_truthy_value() -> None:
    values = iter([0, [], "", "found"])
    assert wait_until(lambda: next(values), timeout=5, what="a value", interval=0) == "found"


def test_wait_until_says_what_it_waited_for_and_the_last_value_seen() -> None:
    seen = iter(range(1000000))
    with pytest.raises(AssertionError, match=r"after 0\.05 s waiting for the count to be negative; last value seen: "):
        wait_until(lambda: next(seen) < 0 and "never", timeout=0.05, what="the count to be negative")
    states = iter(["starting", "starting", "crashed"] + ["crashed"] * 1000)
    with pytest.raises(AssertionError, match=r"waiting for ready; last value seen: False"):
        wait_until(lambda: next(states) == "ready", timeout=0.05, what="ready", interval=0.001)


def test_wait_until_retries_the_named_exceptions_only_and_reports_the_last() -> None:
    def refused() -> bool:
        raise ConnectionRefusedError("no socket yet")

    with pytest.raises(AssertionError, match=r"last value seen: ConnectionRefusedError\('no socket yet'\)"):
        wait_until(refused, timeout=0.05, what="the socket", retry_on=(OSError,))

    def exited() -> bool:
        raise RuntimeError("the process exited")

    with pytest.raises(RuntimeError, match="the process exited"):  # at once: not a timeout
        wait_until(exited, timeout=60, what="the socket", retry_on=(OSError,))


def test_wait_until_async_lets_the_loop_run_while_it_waits() -> None:
    async def main() -> str:
        event = asyncio.Event()
        asyncio.get_running_loop().call_soon(event.set)
        await wait_until_async(event.is_set, timeout=5, what="the event")
        with pytest.raises(AssertionError, match=r"waiting for never; last value seen: False"):
            await wait_until_async(lambda: False, timeout=0.05, what="never")
        return "done"

    assert run(main()) == "done"


def test_run_fails_a_coroutine_that_outlives_its_deadline_with_its_name() -> None:
    async def hangs() -> None:
        await asyncio.Event().wait()

    with pytest.raises(AssertionError, match=r"hangs.* did not finish within 0\.05 s"):
        run(hangs(), timeout=0.05)


def test_manifests_are_valid_and_say_what_was_asked(tmp_path: Path) -> None:
    path = write_manifest(
        tmp_path,
        "alpha-beta",
        provides=["alpha.store"],
        requires=["kernel.memory"],
        run={"command": ["python3", "x.py"], "env": {"A_B": "1"}},
        start={"timeout_s": 3, "restart": "never"},
        extra="[stages]\non_input = { order = 5 }\n",
        config={"greeting": "hi", "limits": {"n": 2}, "tags": ["a"]},
    )
    manifest = load_manifest(path).manifest
    assert manifest.plugin.name == "alpha-beta" and manifest.facilities.provides == ["alpha.store"]
    assert manifest.plugin.run.command == ["python3", "x.py"] and manifest.plugin.run.env == {"A_B": "1"}
    assert manifest.start.timeout_s == 3 and manifest.start.restart == "never"
    assert manifest.config == {"greeting": "hi", "limits": {"n": 2}, "tags": ["a"]}
    assert manifest.stages.on_input is not None and manifest.stages.on_input.order == 5
    default = tomli.loads(manifest_text("my-plug", description=None))
    assert default["plugin"]["run"] == {"module": "tests_plugins.my_plug"} and "description" not in default["plugin"]
    assert "[start]" not in manifest_text("x") and "[config]" not in manifest_text("x")


def test_provider_settings_point_at_the_mock(tmp_path: Path, mock_llm: MockLLM, deepseek: MockLLM) -> None:
    assert provider(mock_llm).model == "gpt-4o-mini" and provider(deepseek, "d", timeout_s=2.0).timeout_s == 2.0
    text = "[agent]\nmax_steps = 3\n\n" + provider_toml(deepseek, "p1", context_window=9000)
    path = write_settings(tmp_path / "settings.toml", text)
    assert path.stat().st_mode & 0o777 == 0o600
    (loaded,) = load_settings(tmp_path).providers
    assert (loaded.name, loaded.kind, loaded.base_url, loaded.model) == (
        "p1",
        "deepseek",
        deepseek.base_url,
        "deepseek-chat",
    )
    assert loaded.thinking is True and loaded.max_retries == 0 and loaded.timeout_s == 10
    assert loaded.context_window == 9000


def test_the_mock_factories_start_independent_mocks(mock_llms: Callable[..., MockLLM]) -> None:
    first, second = mock_llms(), mock_llms("deepseek", api_key="sk-x")
    assert first.port != second.port and second.state.vendor == "deepseek" and second.state.api_key == "sk-x"


@pytest.mark.slow
def test_the_mock_process_is_known_once_it_listens(mock_llm_process: Callable[..., MockProcess]) -> None:
    served = mock_llm_process("--vendor", "openai")
    assert served.base_url.startswith("http://127.0.0.1:") and served.base_url.endswith("/v1")
    assert httpx.get(served.root + "/_mock/requests").json() == []
    with pytest.raises(AssertionError, match="instead of listening"):
        MockProcess("--vendor", "nope").start()


def test_accept_reports_the_whole_value_and_an_async_predicate_is_awaited() -> None:
    status = {"state": "starting"}
    with pytest.raises(AssertionError, match=r"last value seen: \{'state': 'starting'\}"):
        wait_until(lambda: status, accept=lambda s: s["state"] == "ready", timeout=0.05, what="ready")

    async def main() -> dict[str, int]:
        counts = iter([{"n": 0}, {"n": 1}, {"n": 2}])

        async def ask() -> dict[str, int]:
            await asyncio.sleep(0)
            return next(counts)

        return await wait_until_async(ask, accept=lambda c: c["n"] >= 2, timeout=5, what="n to reach 2", interval=0)

    assert run(main()) == {"n": 2}


@pytest.mark.slow
def test_a_throwaway_venv_imports_this_hologram_and_installs_into_itself_only(tmp_path: Path) -> None:
    import subprocess
    import sys

    import hologram

    python = throwaway_venv(tmp_path / "env")
    where = subprocess.run(
        [str(python), "-c", "import hologram, sys; print(hologram.__file__); print(sys.prefix)"],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    assert where == [hologram.__file__, str(tmp_path / "env")]
    wheel = make_wheel(tmp_path, "kit-probe", "kit_probe", {"__init__.py": ""}, "", "1.0")
    install = [str(python), "-m", "pip", "install", "-q", str(wheel)]
    subprocess.run(install, check=True, capture_output=True, env=offline_env())
    listed = [str(python), "-c", "import importlib.metadata as m; print(m.version('kit-probe'))"]
    assert subprocess.run(listed, capture_output=True, text=True, check=True).stdout.strip() == "1.0"
    mine = subprocess.run([sys.executable, "-c", listed[-1]], capture_output=True, text=True)
    assert mine.returncode != 0, "the wheel went into the throwaway venv, not the one running the tests"


def test_a_plugin_project_is_a_plugin_repository_with_the_options_asked(tmp_path: Path) -> None:
    from tests.kit.plugin_project import plugin_project

    gate = tmp_path / "gate"
    project = plugin_project(tmp_path, "acme", ["kernel.sessions"], approval=True, gate=gate, start={"timeout_s": 90})
    pyproject = tomli.loads((project / "pyproject.toml").read_text())
    assert pyproject["project"]["name"] == "acme-plugin"
    assert pyproject["project"]["entry-points"]["hologram.plugins"] == {"acme": "acme"}
    manifest = load_manifest(project / "acme" / "plugin.toml").manifest
    assert manifest.plugin.run.module == "acme" and manifest.facilities.provides == ["acme.svc"]
    assert manifest.facilities.requires == ["kernel.sessions"] and manifest.start.timeout_s == 90
    assert [(t.name, t.needs_approval) for t in manifest.tools] == [("acme_ping", True)]
    source = (project / "acme" / "__init__.py").read_text()
    compile(source, "acme/__init__.py", "exec")
    assert "wait_for_the_gate" in source and repr(str(gate)) in source
    plain = plugin_project(tmp_path / "plain", "beta", [])
    assert "on_start" not in (plain / "beta" / "__init__.py").read_text()
    assert not load_manifest(plain / "beta" / "plugin.toml").manifest.tools[0].needs_approval
