"""What a plugin inherits, and who can read the data directory, through a real `hologram up` (issue 10 §5).

* Plugins get a scrubbed environment: the kernel runs with a provider key and a token in its environment;
  a plugin — forked from the zygote (`run.module`) or spawned (`run.command`) — sees neither, in
  `os.environ` or in `/proc/self/environ`, unless settings pass it by name (`pass_env`); `env` values and
  the manifest's `run.env` arrive.
* Data files are 0600 and directories 0700, also what an older version left 0644/0755.

Mutation checks (done): `plugin_env` starting from `os.environ` again turns the first test red; so does
the zygote started with the unscrubbed environment (the forked plugin reads the key in its
/proc/self/environ, which is the zygote's); `hologram up` without its umask turns the second test red
(the log file 0644, the plugin directories 0755).
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

import pytest

from mock_llm import MockLLM

from .kernel import E2EKernel, as_json

pytestmark = pytest.mark.slow

PROBE = """
import json, os
from hologram.sdk import Plugin

plugin = Plugin("{name}")  # the module name; the manifest's name is what the kernel uses


@plugin.tool("{name}_env")
def environ() -> str:
    with open("/proc/self/environ", "rb") as handle:
        raw = handle.read().decode(errors="replace")
    return json.dumps({{"env": dict(os.environ), "proc": raw}})


if __name__ == "__main__":
    plugin.run()
"""

MANIFEST = """\
[plugin]
name = "{plugin}"
version = "0.1.0"
description = "prints its environment"
run = {run}

[[tools]]
name = "{name}_env"
description = "environment"
parallel_safe = true
parameters = {{ type = "object", properties = {{}} }}
"""

SECRET = "sk-the-provider-key-0123456789"
TOKEN = "ght-a-token-the-user-passes"
HIDDEN = "hidden-token-nobody-passes"


class ProbeKernel(E2EKernel):
    def __init__(self, root: Path, mock: MockLLM) -> None:
        code = root / "code"
        code.mkdir(parents=True)
        manifests = root / "extra"
        manifests.mkdir()
        for name, run in (
            ("probe-module", f'{{ module = "probe_module", env = {{ PYTHONPATH = "{code}", FROM_MANIFEST = "m" }} }}'),
            ("probe-command", f'{{ command = ["{sys.executable}", "{code / "probe_command.py"}"] }}'),
        ):
            module = name.replace("-", "_")
            (code / f"{module}.py").write_text(PROBE.format(name=module))
            (manifests / f"{name}.toml").write_text(MANIFEST.format(plugin=name, name=module, run=run))
        self.extra = manifests
        super().__init__(root, [mock])
        self.hologram(
            "build", "--no-discover", "-m", str(root / "manifests"), "-m", str(manifests), "-o", str(self.lock),
            check=True,
        )  # fmt: skip
        settings = self.data / "settings.toml"
        text = settings.read_text().replace(
            "thinking = true\n", 'thinking = true\napi_key_env = "PROBE_PROVIDER_KEY"\n', 1
        )
        text += '\n[plugins.probe-module]\npass_env = ["PROBE_TOKEN"]\nenv = { FROM_SETTINGS = "s" }\n'
        text += '\n[plugins.probe-command]\npass_env = ["PROBE_TOKEN"]\n'
        settings.write_text(text)


@pytest.fixture
def probe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("PROBE_PROVIDER_KEY", SECRET)
    monkeypatch.setenv("PROBE_TOKEN", TOKEN)
    monkeypatch.setenv("PROBE_HIDDEN_TOKEN", HIDDEN)
    with MockLLM("deepseek", api_key=SECRET) as mock:
        kernel = ProbeKernel(tmp_path, mock)
        kernel.start()
        try:
            yield kernel, mock
        finally:
            kernel.stop()


def seen_by(kernel: E2EKernel, mock: MockLLM, tool: str) -> dict[str, Any]:
    mock.reset()
    mock.script(
        [
            {"reasoning_content": "r", "tool_calls": [{"id": "e", "name": tool, "arguments": "{}"}]},
            {"reasoning_content": "r", "content": "ok"},
        ]
    )
    assert as_json(kernel.ask("env?", "--json"))["output"] == "ok"
    result = next(m["content"] for m in mock.requests[-1].body["messages"] if m["role"] == "tool")
    data: dict[str, Any] = json.loads(result)
    return data


def test_plugins_get_a_scrubbed_environment(probe: Any) -> None:
    kernel, mock = probe
    states = {p["name"]: p["state"] for p in kernel.status()["plugins"]}
    assert states["probe-module"] == states["probe-command"] == "ready"
    for tool in ("probe_module_env", "probe_command_env"):
        seen = seen_by(kernel, mock, tool)
        env, proc = seen["env"], seen["proc"]
        assert "PROBE_PROVIDER_KEY" not in env and SECRET not in proc, f"{tool} sees the provider key"
        assert "PROBE_HIDDEN_TOKEN" not in env and HIDDEN not in proc, f"{tool} sees a token nobody passed"
        assert env.get("PROBE_TOKEN") == TOKEN, f"{tool}: pass_env did not pass PROBE_TOKEN"
        assert env.get("PATH") == os.environ["PATH"]  # what a program needs to run is there
        assert env.get("HOLOGRAM_PLUGIN", "").startswith("probe-")
    module = seen_by(kernel, mock, "probe_module_env")["env"]
    assert module.get("FROM_MANIFEST") == "m" and module.get("FROM_SETTINGS") == "s"
    assert all(r.status == 200 for r in mock.requests)  # the kernel itself still has the key


def test_data_files_are_0600_and_directories_0700(probe: Any, tmp_path: Path) -> None:
    kernel, mock = probe
    seen_by(kernel, mock, "probe_module_env")  # a turn: sessions, cold store, plugin dirs all exist
    loose = tmp_path / "data" / "from-an-older-version.txt"
    loose.write_text("x")
    loose.chmod(0o644)
    kernel.stop()
    kernel.start()  # the second start tightens what it finds
    data = tmp_path / "data"
    wrong = []
    for path in [data, *data.rglob("*")]:
        if path.is_symlink() or path.is_socket():
            continue
        mode = stat.S_IMODE(path.stat().st_mode)
        if (path.is_dir() and mode != 0o700) or (path.is_file() and mode != 0o600):
            wrong.append(f"{path.relative_to(data)}: {mode:o}")
    assert wrong == [], wrong
    assert (data / "sessions.db").exists() and any((data / "logs").iterdir())
