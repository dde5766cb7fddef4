"""`hologram service install|uninstall` in process, with HOME and XDG_CONFIG_HOME in a temporary directory:
where the unit goes, what it runs, how a path systemd would misread is written, and which files the commands
refuse to touch. The unit of a real tool install is verified in test_tool_install.py.

Mutation checks (done): `quote_argument` without doubling `%` fails
`test_paths_with_spaces_percent_and_dollar_survive_systemd_s_parsing` (systemd-analyze expands %h and
rejects the path); `run_uninstall` without its wants-link check fails `test_an_enabled_unit_is_not_removed`;
`_refuse_foreign` returning False for any file fails `test_a_unit_hologram_did_not_write_is_left_alone`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from hologram.cli import main
from hologram.cli.service_cmd import hologram_command
from hologram.cli.service_unit import MARK, Unit, quote_argument


@pytest.fixture
def home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path / "home"


def unit_path(home: Path) -> Path:
    return home / ".config" / "systemd" / "user" / "hologram.service"


def test_install_writes_the_unit_for_this_directory_with_absolute_paths(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["service", "install"]) == 0
    text = unit_path(home).read_text()
    assert text.startswith(MARK)
    command = " ".join(hologram_command())
    assert f"ExecStart={command} up --lock {tmp_path / 'hologram.lock'} --data {tmp_path / '.hologram'}\n" in text
    assert f"WorkingDirectory={tmp_path}\n" in text
    assert f"EnvironmentFile=-{tmp_path / '.hologram' / 'service.env'}\n" in text
    out = capsys.readouterr().out
    assert f"{unit_path(home)}: written" in out
    assert "systemctl --user enable --now hologram" in out and "loginctl enable-linger" in out
    assert main(["service", "install", "--user"]) == 0  # replaces its own unit
    assert "replaced" in capsys.readouterr().out
    assert f"--data {home / '.local' / 'share' / 'hologram'}\n" in unit_path(home).read_text()


def test_print_writes_nothing(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["service", "install", "--print"]) == 0
    assert capsys.readouterr().out.startswith(MARK)
    assert not unit_path(home).exists()


def test_xdg_config_home_decides_where_the_unit_goes(
    monkeypatch: pytest.MonkeyPatch, home: Path, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    assert main(["service", "install"]) == 0
    assert (tmp_path / "config" / "systemd" / "user" / "hologram.service").is_file()
    assert not unit_path(home).exists()


def test_a_unit_hologram_did_not_write_is_left_alone(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    unit_path(home).parent.mkdir(parents=True)
    unit_path(home).write_text("[Service]\nExecStart=/usr/bin/mine\n")
    assert main(["service", "install"]) == 1
    assert main(["service", "uninstall"]) == 1
    err = capsys.readouterr().err
    assert "did not write it: left as it is" in err and "Traceback" not in err
    assert unit_path(home).read_text() == "[Service]\nExecStart=/usr/bin/mine\n"


def test_an_enabled_unit_is_not_removed(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["service", "install"]) == 0
    wants = unit_path(home).parent / "default.target.wants"
    wants.mkdir()
    (wants / "hologram.service").symlink_to(unit_path(home))
    assert main(["service", "uninstall"]) == 1
    assert "systemctl --user disable --now hologram" in capsys.readouterr().err
    assert unit_path(home).is_file()
    (wants / "hologram.service").unlink()
    assert main(["service", "uninstall"]) == 0
    assert not unit_path(home).exists()
    assert main(["service", "uninstall"]) == 0  # nothing there: says so
    assert "nothing to remove" in capsys.readouterr().out


def test_quoting_of_execstart_words() -> None:
    assert quote_argument("/opt/hologram/bin/hologram") == "/opt/hologram/bin/hologram"
    assert quote_argument("/a b/c") == '"/a b/c"'
    assert quote_argument("/100%/x") == "/100%%/x"
    assert quote_argument("/$HOME/x") == "/$$HOME/x"
    assert quote_argument("/$HOME/x", executable=True) == "/$HOME/x"  # no expansion in the command's path
    assert quote_argument('/a"b\\c') == '"/a\\"b\\\\c"'


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed (apt systemd)")
def test_paths_with_spaces_percent_and_dollar_survive_systemd_s_parsing(tmp_path: Path) -> None:
    """The unit as systemd parses it: systemd-analyze verify finds the executable through the escaping of a
    path with a space, `%h` and `$HOME` in it (and prints any line it ignores)."""
    odd = tmp_path / "my agents" / "100%h $HOME"
    (odd / "bin").mkdir(parents=True)
    script = odd / "bin" / "hologram"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    unit = tmp_path / "hologram.service"
    unit.write_text(
        Unit(
            command=[str(script), "up", "--lock", str(odd / "hologram.lock"), "--data", str(odd / ".hologram")],
            directory=odd, data=odd / ".hologram", version="test",
        ).render()
    )  # fmt: skip
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    env = {**os.environ, "HOME": str(tmp_path), "XDG_RUNTIME_DIR": str(runtime)}
    verify = subprocess.run(
        ["systemd-analyze", "--user", "verify", str(unit)], env=env, capture_output=True, text=True, timeout=60
    )
    assert verify.returncode == 0 and verify.stdout + verify.stderr == "", verify.stdout + verify.stderr
