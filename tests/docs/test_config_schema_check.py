"""`hologram check` holds a plugin's published config schema to its pydantic model, through the real CLI on a
copy of docs/examples/hologram-weather: a missing file and a stale one are errors naming the manifest key and
the fix, ``--write`` writes it, and a manifest without ``config_schema`` for a plugin with a model is an error.

Mutation checks (done): `_check_config_schema` returning early turns every case red; ``--write`` not
passed through by check_cmd.py turns the second red (still an error, nothing written).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "hologram-weather"


def hologram_check(repo: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(repo / "src"), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [sys.executable, "-m", "hologram", "check", *extra, str(repo)], capture_output=True, text=True, env=env
    )


def test_missing_stale_and_written_schema(tmp_path: Path) -> None:
    repo = tmp_path / "weather"
    shutil.copytree(EXAMPLE, repo)
    schema = repo / "src" / "hologram_weather" / "config.schema.json"
    published = schema.read_text()
    schema.unlink()
    missing = hologram_check(repo)
    assert missing.returncode == 1
    assert "plugin.config_schema: config.schema.json is missing" in missing.stderr
    assert "hologram check --write" in missing.stderr

    written = hologram_check(repo, "--write")
    assert written.returncode == 0, written.stderr
    assert schema.read_text() == published

    schema.write_text(published.replace("Units of the forecast", "Units"))
    stale = hologram_check(repo)
    assert stale.returncode == 1 and "out of date" in stale.stderr


def test_a_model_without_a_published_schema_is_an_error(tmp_path: Path) -> None:
    repo = tmp_path / "weather"
    shutil.copytree(EXAMPLE, repo)
    manifest = repo / "src" / "hologram_weather" / "plugin.toml"
    manifest.write_text(
        "\n".join(line for line in manifest.read_text().splitlines() if not line.startswith("config_schema"))
    )
    result = hologram_check(repo)
    assert result.returncode == 1
    assert 'add config_schema = "weather.config.schema.json" under [plugin]' in result.stderr


def test_a_manifest_default_the_model_refuses_is_an_error_at_its_line(tmp_path: Path) -> None:
    """A ``[config]`` default every start would fail on is found by `hologram check`, at the default's line.
    Mutation check (done): `_check_config_defaults` not called turns this red (exit 0)."""
    repo = tmp_path / "weather"
    shutil.copytree(EXAMPLE, repo)
    manifest = repo / "src" / "hologram_weather" / "plugin.toml"
    text = manifest.read_text()
    assert "interval_s = 60" in text, "the example's default this test changes"
    manifest.write_text(
        text.replace("interval_s = 60", "interval_s = -5").replace("[config]\n", "[config]\nspeed = 1\n")
    )
    lines = manifest.read_text().splitlines()
    result = hologram_check(repo)
    assert result.returncode == 1, result
    bad = lines.index(next(line for line in lines if line.startswith("interval_s = -5"))) + 1
    unknown = lines.index("speed = 1") + 1
    assert f"plugin.toml:{bad}: error: config.interval_s: the default is refused by" in result.stderr, result.stderr
    assert "-5 is less than or equal to the minimum of 0" in result.stderr
    assert (
        f"plugin.toml:{unknown}: error: config.speed: " in result.stderr and "'speed' was unexpected" in result.stderr
    )
