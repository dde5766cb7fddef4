"""Routes of another plugin on the web port (``http.routes``, `Plugin.mount`), through a real `hologram up`.

The plugin ``acme`` is written as a third party would: a plain ASGI app (no framework) mounted with
``plugin.mount("/acme", app, well_known=[...])``. Proven here: a request reaches it with its method, path,
query, headers and body, and never the access token; a wrong or missing token, a foreign Host and a
cross-site cookie POST are refused before it; the body limit is applied before forwarding (the plugin never
sees a 413's body); an SSE stream arrives event by event (the first before the app sends the second); a
client that goes away is ``http.disconnect`` in the app (it records it); an app that fails is a 500; the web
UI's own paths cannot be mounted.

Mutation checks (run): dropping ``"authorization"`` from `routes.DROPPED_REQUEST_HEADERS` turns
`test_a_request_reaches_the_app_without_the_token` red; `routes.Mounts._gone` not telling the owner (its
``owner.gone.append`` removed) turns `test_a_client_that_goes_away_is_a_disconnect_in_the_app` red; answering
every response at once instead of per chunk (`Mounts.forward` returning ``Response`` for every start) turns
`test_sse_arrives_event_by_event` red.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from mock_llm import MockLLM
from tests.httpapi.kernel import HttpKernel
from tests.kit.wait import wait_until

ACME_MANIFEST = """\
[plugin]
name = "acme"
version = "0.1.0"
description = "a third party's routes on the web port"
run = { module = "acme", env = { PYTHONPATH = "{path}", ACME_LOG = "{root}/acme.log" } }

[facilities]
requires = ["http.routes"]
"""

ACME = r"""
import asyncio, json, os
from hologram.sdk import Plugin

plugin = Plugin("acme")
LOG = os.environ["ACME_LOG"]
RELEASE = asyncio.Event()


def note(**entry):
    with open(LOG, "a") as f:
        f.write(json.dumps(entry) + "\n")


async def app(scope, receive, send):
    path = scope["path"]
    body = (await receive())["body"]
    headers = {k.decode(): v.decode() for k, v in scope["headers"]}
    if path == "/acme/echo":
        answer = {"method": scope["method"], "path": path, "query": scope["query_string"].decode(),
                  "headers": headers, "body": body.decode()}
        data = json.dumps(answer).encode()
        await send({"type": "http.response.start", "status": 201,
                    "headers": [(b"content-type", b"application/json"), (b"set-cookie", b"hologram_token=evil")]})
        await send({"type": "http.response.body", "body": data})
    elif path == "/acme/sse":
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
        await send({"type": "http.response.body", "body": b"data: one\n\n", "more_body": True})
        await RELEASE.wait()  # the test reads "one" first, then releases the second
        RELEASE.clear()
        await send({"type": "http.response.body", "body": b"data: two\n\n", "more_body": False})
    elif path == "/acme/release":
        RELEASE.set()
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})
    elif path == "/acme/hang":
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": b"waiting\n", "more_body": True})
        message = await receive()
        note(event=message["type"], path=path)
    elif path == "/acme/fail":
        raise RuntimeError("the app broke")
    elif path == "/.well-known/acme.json":
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": b'{"acme": true}'})
    else:
        await send({"type": "http.response.start", "status": 404, "headers": []})
        await send({"type": "http.response.body", "body": b"no"})


plugin.mount("/acme", app, well_known=["/.well-known/acme.json"])

if __name__ == "__main__":
    plugin.run()
"""


def with_plugin(kernel: HttpKernel, name: str, manifest: str, source: str) -> HttpKernel:
    """``kernel`` (built, not started) with one more plugin, written as ApprovalKernel writes its extras."""
    (kernel.root / "code" / f"{name}.py").write_text(source)
    text = manifest.replace("{path}", str(kernel.root / "code")).replace("{root}", str(kernel.root))
    (kernel.root / "manifests" / f"{name}.toml").write_text(text)
    manifests = str(kernel.root / "manifests")
    kernel.hologram("build", "--no-discover", "-m", manifests, "-o", str(kernel.lock), check=True)
    return kernel


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory, mock: MockLLM) -> Iterator[HttpKernel]:
    root = tmp_path_factory.mktemp("routes")
    k = with_plugin(HttpKernel(root, mock), "acme", ACME_MANIFEST, ACME)
    k.start()
    yield k
    k.stop()


def acme_log(kernel: HttpKernel) -> list[dict[str, str]]:
    path = kernel.root / "acme.log"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_a_request_reaches_the_app_without_the_token(kernel: HttpKernel) -> None:
    with kernel.client() as client:
        response = client.post("/acme/echo?x=1&y=%C3%A9", content=b"hello body", headers={"x-acme": "yes"})
    assert response.status_code == 201, response.text
    seen = response.json()
    assert seen["method"] == "POST" and seen["path"] == "/acme/echo" and seen["query"] == "x=1&y=%C3%A9"
    assert seen["body"] == "hello body" and seen["headers"]["x-acme"] == "yes"
    assert "authorization" not in seen["headers"] and kernel.token not in json.dumps(seen)
    assert "set-cookie" not in response.headers  # a plugin cannot set the page's cookie
    with kernel.client() as client:
        card = client.get("/.well-known/acme.json")
    assert card.json() == {"acme": True}


def test_the_access_rules_apply_before_the_app(kernel: HttpKernel) -> None:
    before = acme_log(kernel)
    with httpx.Client(base_url=kernel.url, timeout=30) as anonymous:
        assert anonymous.get("/acme/echo").status_code == 401
        assert anonymous.get("/.well-known/acme.json").status_code == 401  # well-known paths too
        wrong = anonymous.post("/acme/echo", headers={"authorization": "Bearer wrong"}, content=b"x")
        assert wrong.status_code == 401 and wrong.json()["error"]["code"] == "unauthorized"
        foreign = anonymous.get(
            "/acme/echo", headers={"host": "evil.example:80", "authorization": f"Bearer {kernel.token}"}
        )
        assert foreign.status_code == 403
        cookie = {"cookie": f"hologram_token={kernel.token}", "origin": "http://evil.example"}
        assert anonymous.post("/acme/echo", headers=cookie, content=b"x").status_code == 403
    assert acme_log(kernel) == before


def test_the_body_limit_applies_before_forwarding(kernel: HttpKernel) -> None:
    with kernel.client() as client:
        big = client.post("/acme/echo", content=b"x" * (8 * 1024 * 1024 + 1))
    assert big.status_code == 413


def test_sse_arrives_event_by_event(kernel: HttpKernel) -> None:
    with kernel.client() as client, client.stream("GET", "/acme/sse") as response:
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
        lines = response.iter_lines()
        assert next(line for line in lines if line) == "data: one"  # before the app sent "two"
        with kernel.client() as other:
            assert other.post("/acme/release").status_code == 204
        assert next(line for line in lines if line) == "data: two"


def test_a_client_that_goes_away_is_a_disconnect_in_the_app(kernel: HttpKernel) -> None:
    with kernel.client() as client, client.stream("GET", "/acme/hang") as response:
        assert next(response.iter_lines()) == "waiting"
    wait_until(
        lambda: [e for e in acme_log(kernel) if e.get("path") == "/acme/hang"],
        accept=lambda found: found == [{"event": "http.disconnect", "path": "/acme/hang"}],
        timeout=30, what="the app told of the disconnect",
    )  # fmt: skip


def test_an_app_that_fails_is_a_500_and_the_plugin_serves_on(kernel: HttpKernel) -> None:
    with kernel.client() as client:
        failed = client.get("/acme/fail")
        assert failed.status_code == 500 and failed.json()["error"]["code"] == "internal"
        assert client.get("/acme/nothing").status_code == 404
        assert client.post("/acme/echo", content=b"again").json()["body"] == "again"
    assert "RuntimeError: the app broke" in kernel.logs()


def test_the_web_uis_paths_cannot_be_mounted(tmp_path: Path) -> None:
    from hologram_plugins.http.routes import Mounts, RouteError

    mounts = Mounts(max_body_bytes=10, timeout_s=1)
    for prefix in ("/api", "/api/x", "/v1", "/static", "/", "/.well-known", "a2a", "/a/../b"):
        with pytest.raises(RouteError):
            mounts.mount("p", prefix)
    mounts.mount("p", "/acme")
    with pytest.raises(RouteError, match="already mounted by the plugin p"):
        mounts.mount("q", "/acme/sub")
