"""TLS, end to end: with ``tls_certfile``/``tls_keyfile`` the plugin serves https (a self-signed certificate
made here with the system's openssl), says so in http.json, and the login cookie is ``Secure``."""

from __future__ import annotations

import shutil
import ssl
from collections.abc import Iterator

import httpx
import pytest

from mock_llm import MockLLM
from tests.kit.tls import self_signed

from .kernel import HttpKernel

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command"),
]


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory, mock: MockLLM) -> Iterator[HttpKernel]:
    root = tmp_path_factory.mktemp("tls")
    k = HttpKernel(root, mock)
    cert, key = self_signed(root)
    settings = k.data / "settings.toml"
    settings.write_text(settings.read_text() + f'\n[plugins.http]\ntls_certfile = "{cert}"\ntls_keyfile = "{key}"\n')
    k.cert = cert  # type: ignore[attr-defined]
    k.start()
    yield k
    k.stop()


def test_tls_serves_https_with_a_secure_cookie(kernel: HttpKernel) -> None:
    info = kernel.info()
    assert info["tls"] is True and info["url"] == f"https://127.0.0.1:{info['port']}"
    cert = str(kernel.cert)  # type: ignore[attr-defined]
    with httpx.Client(base_url=info["url"], verify=ssl.create_default_context(cafile=cert), timeout=30) as client:
        assert client.get("/api/info").status_code == 401
        login = client.get("/", params={"token": kernel.token})
        assert login.status_code == 303 and "Secure" in login.headers["set-cookie"]
        assert client.get("/api/info", headers={"authorization": f"Bearer {kernel.token}"}).status_code == 200
    with pytest.raises(httpx.HTTPError):  # plain http on the TLS port is not served
        httpx.get(f"http://127.0.0.1:{info['port']}/api/info", timeout=10).raise_for_status()
