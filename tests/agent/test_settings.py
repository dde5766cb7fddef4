"""settings.toml: created private, tightened, and errors that name file, line and key without values."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from hologram.errors import HologramError
from hologram.settings import load_settings, settings_path


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


def test_the_embedder_build_is_a_checked_choice(tmp_path: Path) -> None:
    path = settings_path(tmp_path)
    assert load_settings(tmp_path).memory.embedder == "int8"
    path.write_text('[memory]\nembedder = "onnx"\n')
    assert load_settings(tmp_path).memory.embedder == "onnx"
    path.write_text('[memory]\nembedder = "onxx"\n')
    with pytest.raises(HologramError) as info:
        load_settings(tmp_path)
    text = info.value.render()
    assert f"{path}:2: error: memory.embedder: " in text and "'int8', 'onnx' or 'numpy'" in text, text
