"""A real `hologram up` with the HTTP channel plugin (the shipped manifest) on an ephemeral port, beside
shell, code and the approval-needing recorder of the approvals e2e tests, against the strict mock.

The provider in settings.toml carries an API key (`API_KEY`) so the security tests can look for it in every
response and log line; the mock does not check it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

from mock_llm import MockLLM
from tests.e2e.test_approvals_e2e import ApprovalKernel
from tests.kit.manifests import copy_shipped
from tests.kit.wait import wait_until

API_KEY = "sk-test-SECRETKEY-0123456789abcdef"


class HttpKernel(ApprovalKernel):
    def __init__(self, root: Path, mock: MockLLM, plugins: dict[str, tuple[str, str]] | None = None) -> None:
        super().__init__(root, mock, plugins=plugins)
        manifests = root / "manifests"
        copy_shipped("http", manifests)
        self.hologram("build", "--no-discover", "-m", str(manifests), "-o", str(self.lock), check=True)
        settings = self.data / "settings.toml"
        model = 'model = "deepseek-chat"\n'
        settings.write_text(settings.read_text().replace(model, f'{model}api_key = "{API_KEY}"\n'))
        settings.chmod(0o600)

    # -- where it listens ------------------------------------------------------------------------------

    def info(self) -> dict[str, Any]:
        def read() -> dict[str, Any] | None:
            path = self.data / "http.json"
            return json.loads(path.read_text()) if path.exists() else None

        found: dict[str, Any] = wait_until(read, timeout=30, what="http.json", retry_on=(ValueError,))
        return found

    @property
    def url(self) -> str:
        return str(self.info()["url"])

    @property
    def token(self) -> str:
        return (self.data / "http-token").read_text().strip()

    def client(self, **headers: str) -> httpx.Client:
        """An API client with the Bearer token (override with ``authorization=...``)."""
        base = {"authorization": f"Bearer {self.token}", **headers}
        return httpx.Client(base_url=self.url, headers=base, timeout=60)

    def logs(self) -> str:
        """Every log line the kernel and its plugins wrote (DATA/logs)."""
        return "\n".join(p.read_text(errors="replace") for p in sorted((self.data / "logs").rglob("*")) if p.is_file())
