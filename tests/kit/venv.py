"""A fresh venv that sees this checkout's installed dependencies, without a network.

`fresh_venv(root)` makes ``root/env`` and puts the running interpreter's site-packages on its path with a ``.pth``
file (what ``--system-site-packages`` would do, had this venv's dependencies been the system's), so pip can
install into it with ``--no-deps --no-index --no-build-isolation``: a distribution built here (a wheel the test
made, this checkout editable, a generated plugin) lands in the new venv, its dependencies come from this one.
"""

from __future__ import annotations

import site
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path


def fresh_venv(root: Path, *, extra_paths: Sequence[Path] = ()) -> Path:
    """``root/env`` (made once), this interpreter's site-packages (and ``extra_paths``) on its path; its python."""
    python = root / "env" / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(root / "env")], check=True, capture_output=True)
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
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
