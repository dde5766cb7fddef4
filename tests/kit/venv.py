"""A throwaway virtual environment that imports this checkout's hologram and its dependencies, offline.

Tests that pip-install a plugin must not install it into the project's own `.venv` (every later test's
`hologram build` would discover it). `throwaway_venv` makes a venv with its own pip and site-packages and a
`.pth` naming this checkout's framework and built-in plugins and the running interpreter's site-packages:
hologram (with the built-ins' code, so a kernel run from there starts them), its dependencies and the dev
tools (hatchling, for an editable install without a download) import from there, while whatever a test
installs lands in the throwaway venv alone. ~3 s (`python -m venv` with its pip).
`make_wheel` writes a plugin distribution as a wheel directly, for pip to install from a local directory.
`fresh_venv` is the same without this checkout on the path (a test that installs the checkout itself), and
`pip_install` installs into such a venv offline, without resolving dependencies.
"""

from __future__ import annotations

import base64
import hashlib
import os
import site
import subprocess
import sys
import zipfile
from collections.abc import Sequence
from pathlib import Path

import hologram
import hologram_plugins

OFFLINE_PIP = {"PIP_NO_INDEX": "1", "PIP_NO_BUILD_ISOLATION": "0", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
"""pip settings for a test: nothing from an index, and builds use the backends already installed."""


def throwaway_venv(root: Path) -> Path:
    """A new venv under `root`; returns its python."""
    framework = Path(hologram.__file__).resolve().parents[1]
    builtins = Path(hologram_plugins.__file__).resolve().parents[1]
    return _venv_seeing(root, [framework, builtins])


def fresh_venv(root: Path, *, extra_paths: Sequence[Path] = ()) -> Path:
    """``root/env`` (made once), this interpreter's site-packages (and ``extra_paths``) on its path; its python.
    Unlike `throwaway_venv`, this checkout's framework is not on the path unless named: a test that installs
    this checkout (editable) into it gets exactly what that install provides."""
    return _venv_seeing(root / "env", list(extra_paths))


def _venv_seeing(root: Path, extra_paths: list[Path]) -> Path:
    """A venv at `root` (made once) whose `.pth` names `extra_paths` and this interpreter's site-packages."""
    python = root / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(root)], check=True, capture_output=True)
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    paths = [*(str(p) for p in extra_paths), *site.getsitepackages()]
    Path(purelib, "zz_hologram_dev.pth").write_text("\n".join(paths) + "\n", encoding="utf-8")
    return python


def pip_install(python: Path, *targets: str, editable: bool = False, options: Sequence[str] = ()) -> None:
    """``pip install`` into the venv of ``python`` offline: nothing is downloaded, dependencies are not resolved."""
    command = [str(python), "-m", "pip", "install", "--no-deps", "--no-index", "--no-build-isolation", "-q", *options]
    for target in targets:
        command += ["-e", target] if editable else [target]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise AssertionError(f"pip install {' '.join(targets)} failed:\n{done.stdout}\n{done.stderr}")


def offline_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment with `OFFLINE_PIP` (and `extra`) over it."""
    return {**os.environ, **OFFLINE_PIP, **(extra or {})}


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def make_wheel(
    directory: Path, dist: str, package: str, files: dict[str, str], entry_points: str, version: str = "0.2.0"
) -> Path:
    """A minimal but valid wheel (PEP 427), written directly so the test needs no build backend."""
    info = f"{dist.replace('-', '_')}-{version}.dist-info"
    contents = {f"{package}/{name}": text.encode() for name, text in files.items()}
    contents[f"{info}/METADATA"] = f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n".encode()
    contents[f"{info}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    contents[f"{info}/entry_points.txt"] = entry_points.encode()
    record = [_record_line(name, data) for name, data in contents.items()] + [f"{info}/RECORD,,"]
    contents[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    path = directory / f"{dist.replace('-', '_')}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in contents.items():
            archive.writestr(name, data)
    return path
