"""settings.toml: created private, tightened, and errors that name file, line and key without values."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from hologram.base.errors import HologramError
from hologram.config.settings import load_settings, settings_path


def test_created_0600_with_a_template_and_no_provider_message(tmp_path: Path) -> None:
    settings = load_settings(tmp_path)
    path = settings_path(tmp_path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert settings.providers == []
    message = settings.no_provider_message()
    assert str(path) in message and "[[providers]]" in message and "base_url" in message


def test_loose_mode_is_tightened(tmp_path: Path) -> None:
    path = settings_path(tmp_path)
    path.write_text("[agent]\nmax_steps = 3\n")
    path.chmod(0o644)
    assert load_settings(tmp_path).agent.max_steps == 3
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_errors_name_line_and_key_and_never_the_secret(tmp_path: Path) -> None:
    path = settings_path(tmp_path)
    path.write_text(
        '[agent]\nmax_steps = 4\n\n[[providers]]\nname = "a"\nbase_url = "http://x"\nmodel = "m"\n\n'
        '[[providers]]\nname = "b"\nbase_url = "ftp://nope"\nmodel = "m"\napi_key = "sk-SECRET"\n'
        'api_key_env = "K"\ncolour = "red"\n'
    )
    with pytest.raises(HologramError) as info:
        load_settings(tmp_path)
    text = info.value.render()
    assert f"{path}:11: error: providers.1.base_url: " in text
    assert f"{path}:15: error: providers.1.colour: unknown key" in text
    assert "sk-SECRET" not in text


def test_toml_syntax_error_has_the_line(tmp_path: Path) -> None:
    settings_path(tmp_path).write_text("[agent]\nmax_steps = = 3\n")
    with pytest.raises(HologramError, match=r"settings.toml:2: error: not valid TOML"):
        load_settings(tmp_path)


def test_an_unknown_provider_kind_is_an_error_with_its_line(tmp_path: Path) -> None:
    """It used to start the kernel with a warning and no provider (issue 10).
    Mutation check (done): `load_settings` not calling `_unknown_kinds` turns this red."""
    path = settings_path(tmp_path)
    path.write_text('[[providers]]\nname = "a"\nkind = "anthropic"\nbase_url = "http://x"\nmodel = "m"\n')
    with pytest.raises(HologramError) as info:
        load_settings(tmp_path)
    text = info.value.render()
    assert f"{path}:3: error: providers.0.kind: unknown provider kind 'anthropic'" in text
    assert "deepseek" in text and "openai" in text  # the kinds that exist


@pytest.mark.parametrize("line", ['api_key = ""', 'api_key = "   "', 'api_key_env = ""'])
def test_an_empty_key_is_an_error_with_its_line(tmp_path: Path, line: str) -> None:
    path = settings_path(tmp_path)
    path.write_text(f'[[providers]]\nname = "a"\nbase_url = "http://x"\nmodel = "m"\n{line}\n')
    with pytest.raises(HologramError) as info:
        load_settings(tmp_path)
    text = info.value.render()
    assert f"{path}:5: error: providers.0.{line.split()[0]}: " in text and "empty" in text, text


def test_plugin_environment_keys_are_checked(tmp_path: Path) -> None:
    path = settings_path(tmp_path)
    path.write_text('[plugins.web]\npass_env = "GITHUB_TOKEN"\n')
    with pytest.raises(HologramError, match=r"pass_env must be a list of variable names"):
        load_settings(tmp_path)
    path.write_text('[plugins.web]\npass_env = ["GITHUB_TOKEN"]\nenv = { LEVEL = "debug" }\nmode = "x"\n')
    assert load_settings(tmp_path).plugins["web"]["mode"] == "x"


def test_hologram_up_refuses_bad_settings_with_one_line_and_no_traceback(tmp_path: Path) -> None:
    import subprocess
    import sys

    data = tmp_path / "data"
    data.mkdir()
    settings_path(data).write_text('[[providers]]\nname = "a"\nkind = "nope"\nbase_url = "http://x"\nmodel = "m"\n')
    lock = tmp_path / "hologram.lock"
    hologram = [sys.executable, "-m", "hologram"]
    subprocess.run([*hologram, "build", "--no-discover", "-o", str(lock)], check=True, capture_output=True)
    done = subprocess.run(
        [*hologram, "up", "--port", "0", "--lock", str(lock), "--data", str(data)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1, done
    assert "Traceback" not in done.stderr
    assert f"{settings_path(data)}:3: error: providers.0.kind: unknown provider kind 'nope'" in done.stderr


def test_a_file_that_is_not_utf8_is_one_error_with_its_line(tmp_path: Path) -> None:
    """Mutation check (done): reading with ``path.read_text(encoding="utf-8")`` again turns this red
    (UnicodeDecodeError)."""
    settings_path(tmp_path).write_bytes(b'[agent]\nmax_steps = 4\nsystem_prompt = "sk-caf\xe9"\n')
    with pytest.raises(HologramError) as info:
        load_settings(tmp_path)
    text = info.value.render()
    assert text.startswith(f"{settings_path(tmp_path)}:3: error: not UTF-8 text")
    assert "hint: save it as UTF-8" in text
    assert "sk-caf" not in text  # never the content: the file holds keys
    assert len(info.value.problems) == 1


def test_a_toml_error_says_how_to_fix_it(tmp_path: Path) -> None:
    settings_path(tmp_path).write_text("[agent]\nmax_steps = = 3\n")
    with pytest.raises(HologramError) as info:
        load_settings(tmp_path)
    assert "hint: correct that line (docs/settings.md), or move the file away" in info.value.render()


def test_values_that_loaded_under_pydantic_still_load(tmp_path: Path) -> None:
    """settings.toml keeps the lax coercions it had when pydantic read it (hologram/base/_fields.py): a quoted
    number, a whole float for an int, an int for a float, yes/no for a bool, a list for a tuple; base_url
    loses its trailing slash; what the file leaves out keeps its default.
    Mutation check (done): `_scalars.lax_bool` accepting only real booleans turns this red (``defer_tools = "no"``)."""
    settings_path(tmp_path).write_text(
        '[agent]\nmax_steps = "12"\ntool_timeout_s = 5\ndefer_tools = "no"\n\n[memory.graph]\nhops = 2.0\n\n'
        '[approvals.tools.shell_run]\nallow = ["ls"]\n\n'
        '[[providers]]\nname = "a"\nbase_url = "http://x/v1/"\nmodel = "m"\ncontext_window = "8000"\n'
    )
    s = load_settings(tmp_path)
    assert (s.agent.max_steps, s.agent.tool_timeout_s, s.agent.defer_tools) == (12, 5.0, False)
    assert type(s.agent.tool_timeout_s) is float and s.agent.channel == "cli"
    assert s.memory.graph.hops == 2 and s.memory.graph.recall_share == 0.15 and s.memory.cooling.batch_events == 2000
    assert s.approvals.tools["shell_run"].allow == ("ls",) and s.approvals.tools["shell_run"].mode == "ask"
    (p,) = s.providers
    assert (p.base_url, p.context_window, p.kind, p.timeout_s, p.max_retries) == (
        "http://x/v1",
        8000,
        "openai",
        60.0,
        3,
    )
    assert s.llm.cooldown_s == 30.0 and s.path == settings_path(tmp_path)


# What pydantic said for each file (measured before the models became dataclasses): the same words, keys and
# lines now. <F> is the file's path.
WORDING = [
    ("[agent]\nmax_steps = 'twelve'\n",
     "<F>:2: error: agent.max_steps: Input should be a valid integer, unable to parse string as an integer"),
    ("[agent]\nmax_steps = 4.5\n",
     "<F>:2: error: agent.max_steps: Input should be a valid integer, got a number with a fractional part"),
    ("[agent]\ndefer_tools = 'maybe'\n",
     "<F>:2: error: agent.defer_tools: Input should be a valid boolean, unable to interpret input"),
    ("agent = 3\n", "<F>:1: error: agent: Input should be a valid dictionary or instance of AgentSettings"),
    ("colour = 'red'\n[agent]\nmax_steps = 3\n", "<F>:1: error: colour: unknown key"),
    ("[approvals.tools.shell_run]\nmode = 'sometimes'\nallow = 'ls'\n",
     "<F>:2: error: approvals.tools.shell_run.mode: Input should be 'ask', 'allow-list', 'allow' or 'deny'\n"
     "<F>:3: error: approvals.tools.shell_run.allow: Input should be a valid tuple\n2 errors"),
    ("[memory.cooling]\nmax_accesses = -1\nidle_hours = -1\nbatch_events = 0\ninterval_hours = 0\nextractor = 'magic'\n"
     "[memory.graph]\nbackend = 'neo'\nrecall_share = 0.6\nhops = 3\n"
     "[memory.scenes]\nhalf_life_days = 0\nfloor = 0\nextra = 1\n",
     "<F>:2: error: memory.cooling.max_accesses: Input should be greater than or equal to 0\n"
     "<F>:3: error: memory.cooling.idle_hours: Input should be greater than or equal to 0\n"
     "<F>:4: error: memory.cooling.batch_events: Input should be greater than or equal to 1\n"
     "<F>:5: error: memory.cooling.interval_hours: Input should be greater than 0\n"
     "<F>:6: error: memory.cooling.extractor: Input should be 'auto', 'rules' or 'llm'\n"
     "<F>:8: error: memory.graph.backend: Input should be 'kuzu' or 'ladybug'\n"
     "<F>:9: error: memory.graph.recall_share: Input should be less than or equal to 0.5\n"
     "<F>:10: error: memory.graph.hops: Input should be less than or equal to 2\n"
     "<F>:12: error: memory.scenes.half_life_days: Input should be greater than 0\n"
     "<F>:13: error: memory.scenes.floor: Input should be greater than 0\n"
     "<F>:14: error: memory.scenes.extra: unknown key\n11 errors"),
    ("[plugins.web]\nenv = ['a']\n",
     '<F>: error: plugins: Value error, [plugins.web] env must be a table of strings, e.g. { LOG_LEVEL = "debug" }'),
    ("[[providers]]\nname = 'a'\n",
     "<F>:1: error: providers.0.base_url: Field required\n<F>:1: error: providers.0.model: Field required\n2 errors"),
    ("[[providers]]\nname = 'a'\nbase_url = 'http://x'\nmodel = 'm'\napi_key = 'sk-SECRET'\napi_key_env = 'K'\n",
     "<F>:1: error: providers.0: Value error, set api_key or api_key_env, not both"),
    ("[[providers]]\nname = ''\nbase_url = 'http://x'\nmodel = ''\nkind = ''\n",
     "<F>:2: error: providers.0.name: String should have at least 1 character\n"
     "<F>:5: error: providers.0.kind: String should have at least 1 character\n"
     "<F>:4: error: providers.0.model: String should have at least 1 character\n3 errors"),
    ("[[providers]]\nname = 'a'\nbase_url = 'http://x'\nmodel = 'm'\ncontext_window = 0\ntimeout_s = 0\nmax_retries = 11\n",
     "<F>:5: error: providers.0.context_window: Input should be greater than 0\n"
     "<F>:6: error: providers.0.timeout_s: Input should be greater than 0\n"
     "<F>:7: error: providers.0.max_retries: Input should be less than or equal to 10\n3 errors"),
    ("providers = [1, 'x']\n",
     "<F>:1: error: providers.0: Input should be a valid dictionary or instance of ProviderSettings\n"
     "<F>:1: error: providers.1: Input should be a valid dictionary or instance of ProviderSettings\n2 errors"),
    ("[[providers]]\nname = 'a'\nbase_url = 'http://x'\nmodel = 'm'\napi_key = 12345\n",
     "<F>:5: error: providers.0.api_key: Input should be a valid string"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "expected"), WORDING)
def test_error_wording_is_what_it_was(tmp_path: Path, text: str, expected: str) -> None:
    """Mutation check (done): `_from_mapping` reporting unknown keys before the fields turns the memory case
    red; `_problem` keeping "Extra inputs are not permitted" turns the unknown-key cases red."""
    path = settings_path(tmp_path)
    path.write_text(text)
    with pytest.raises(HologramError) as info:
        load_settings(tmp_path)
    assert info.value.render() == expected.replace("<F>", str(path))
    assert "sk-SECRET" not in info.value.render()


def test_the_embedder_build_is_a_checked_choice(tmp_path: Path) -> None:
    path = settings_path(tmp_path)
    assert load_settings(tmp_path).memory.embedder == "int8"
    path.write_text('[memory]\nembedder = "onnx"\n')
    assert load_settings(tmp_path).memory.embedder == "onnx"
    path.write_text('[memory]\nembedder = "onxx"\n')
    with pytest.raises(HologramError) as info:
        load_settings(tmp_path)
    text = info.value.render()
    assert f"{path}:2: error: memory.embedder: " in text and "'int8', 'onnx', 'numpy' or 'e5'" in text, text
