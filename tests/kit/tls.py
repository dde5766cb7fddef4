"""A self-signed certificate for 127.0.0.1 / localhost, made with the system's openssl (the TLS tests' one
recipe: the HTTP plugin's TLS, the remote CLI over https, the provider chain's verifying transport)."""

from __future__ import annotations

import subprocess
from pathlib import Path

__all__ = ["self_signed"]


def self_signed(directory: Path) -> tuple[Path, Path]:
    """Write ``cert.pem`` and ``key.pem`` into `directory` (valid two days); returns (cert, key)."""
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key
