"""`--user`: the lock and the data directory a command did not name become the per-user ones, by the XDG base
directory rules; what the command line names is kept. In process, through the real parser.

Mutation check (done): `apply_user` testing `args.data == DEFAULT_DATA_DIR` instead of `is` turns
`test_an_explicit_path_is_kept` red (`--data .hologram` written out is then replaced).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from hologram.base._defaults import user_dir
from hologram.cli import make_parser
from hologram.cli._common import apply_user


def parsed(*argv: str) -> argparse.Namespace:
    args = make_parser().parse_args(list(argv))
    apply_user(args)
    return args


def test_xdg_data_home_is_used_when_absolute(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    args = parsed("up", "--user")
    assert args.data == tmp_path / "xdg" / "hologram"
    assert args.lock == tmp_path / "xdg" / "hologram" / "hologram.lock"


@pytest.mark.parametrize("value", [None, "", "relative/dir"])
def test_unset_empty_or_relative_xdg_data_home_means_local_share(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, value: str | None
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    if value is None:
        monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_DATA_HOME", value)
    assert user_dir() == tmp_path / ".local" / "share" / "hologram"
    assert parsed("status", "--user").data == user_dir()


def test_an_explicit_path_is_kept(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    args = parsed("up", "--user", "--data", ".hologram")
    assert args.data == Path(".hologram")
    assert args.lock == tmp_path / "hologram" / "hologram.lock"


def test_without_user_the_defaults_stay_relative() -> None:
    args = parsed("up")
    assert (args.data, args.lock) == (Path(".hologram"), Path("hologram.lock"))
    assert parsed("graph", "--user").lock == user_dir() / "hologram.lock"
