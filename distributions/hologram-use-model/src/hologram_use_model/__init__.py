"""The default embedding model of Hologram, as data: the int8 ONNX graph of USE-multilingual-v3.

Hologram finds the file without importing this package (``importlib.util.find_spec``); the names here say
which file it is, for anyone who wants to check it.
"""

from pathlib import Path

FILE = "use-multilingual-v3-int8.onnx"
SHA256 = "b8b05b01f0861094f0475cb288ad1b303ae8aee2ebe96e650d210805d5ca70f7"


def path() -> Path:
    """Where the model file is installed."""
    return Path(__file__).resolve().parent / FILE
