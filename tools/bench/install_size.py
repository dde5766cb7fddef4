"""Installed size of Hologram's installs, as du counts them, in one run:

    .venv/bin/python tools/bench/install_size.py

- ``hologram (uv tool)``: `uv tool install hologram` of the wheels built from this tree into a clean HOME
  (the tool's venv: what `pipx install` makes too — the interpreter is linked, not copied);
- ``hologram-sdk (venv)``: a fresh venv with hologram-sdk alone, what a plugin author's CI installs;
- ``hologram[onnx] extra``: what ``pip install 'hologram[onnx]'`` adds (onnxruntime and its dependencies, as
  installed in this development venv);
- ``make up's venv``: this development venv (editable installs, [dev] tools), less its wheelhouse.

Each against the tool install, the baseline of the same run. Offline after the first run (tools/wheelhouse.py).
MB are MiB.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wheelhouse import (
    WHEELHOUSE,
    build_wheels,
    dependency_wheelhouse,
    installed_size,
    runtime_closure,
)

UV = Path(sys.executable).parent / "uv"
MB = 1024 * 1024


def uv(*args: str, python: str, home: Path, wheels: tuple[Path, ...]) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "UV_PYTHON_DOWNLOADS": "never", "UV_NO_CONFIG": "1"}
    finds = [f"--find-links={w}" for w in wheels]
    command = [str(UV), *args, "--quiet", "--offline", "--no-index", *finds, "--python", python]
    subprocess.run(command, env=env, check=True)


def distribution_size(name: str) -> int:
    """Bytes of one installed distribution's files (its RECORD), in this venv."""
    files = metadata.files(name) or []
    return sum(Path(str(f.locate())).lstat().st_blocks * 512 for f in files if Path(str(f.locate())).exists())


def onnx_extra() -> int:
    """What the extra adds: onnxruntime, onnxruntime-extensions and their dependencies hologram lacks."""
    extra = runtime_closure("onnxruntime") | runtime_closure("onnxruntime-extensions")
    return sum(distribution_size(name) for name in set(extra) - set(runtime_closure()))


def main() -> None:
    base = getattr(sys, "_base_executable", sys.executable)
    with tempfile.TemporaryDirectory(prefix="hologram-size-") as scratch:
        root = Path(scratch)
        wheels = (dependency_wheelhouse(), build_wheels(root / "dist")["hologram"].parent)
        home = root / "home"
        uv("tool", "install", "hologram", python=base, home=home, wheels=wheels)
        tool = installed_size(home / ".local" / "share" / "uv" / "tools" / "hologram")
        sdk_venv = root / "sdk"
        subprocess.run([str(UV), "venv", "--quiet", "--python", base, str(sdk_venv)], check=True)
        uv("pip", "install", "hologram-sdk", python=str(sdk_venv / "bin" / "python"), home=home, wheels=wheels)
        sdk = installed_size(sdk_venv)
    dev = installed_size(Path(sys.prefix)) - installed_size(WHEELHOUSE)
    rows = [
        ("hologram (uv tool)", tool),
        ("hologram-sdk (venv)", sdk),
        ("hologram[onnx] extra", onnx_extra()),
        ("make up's venv", dev),
    ]
    print(f"{'install':<24}{'MiB':>8}{'vs tool':>10}")
    for name, size in rows:
        print(f"{name:<24}{size / MB:>8.1f}{size / tool:>9.2f}x")


if __name__ == "__main__":
    main()
