"""Access to the HTTP channel, against a real `hologram up`: the token on every route, the Host check (DNS
rebinding), the Origin check on cookie-authenticated state changes (CSRF), secrets kept out of every answer
and log line, and bad input answered with a 4xx that names the field — never a 500.

Mutation checks (done, each turned the named test red): `AccessControl` skipping the Host comparison
(`test_a_forged_host_is_refused`); skipping the Origin check (`test_a_cross_origin_post_with_the_cookie_
is_refused`: the forged POST was answered 200); accepting any token (`test_no_or_a_wrong_token_is_401_on_every_route`).
"""

from __future__ import annotations

import stat
from collections.abc import Iterator

import httpx
import pytest

from mock_llm import MockLLM
from tests.kit.wait import wait_until

from .kernel import API_KEY, HttpKernel

pytestmark = pytest.mark.slow

ROUTES = [
    ("GET", "/"),
    ("GET", "/static/app.js"),
    ("GET", "/static/nothing-here.css"),
    ("GET", "/api/info"),
    ("POST", "/api/turns"),
    ("GET", "/api/sessions"),
    ("GET", "/api/sessions/s1"),
    ("PATCH", "/api/sessions/s1"),
    ("DELETE", "/api/sessions/s1"),
    ("GET", "/api/sessions/s1/events"),
    ("POST", "/api/sessions/s1/cancel"),
    ("POST", "/api/sessions/s1/approvals/a1"),
    ("GET", "/api/providers"),
    ("PUT", "/api/providers"),
    ("POST", "/api/providers/test"),
    ("GET", "/api/plugins"),
    ("POST", "/api/plugins/shell/restart"),
    ("GET", "/api/plugins/shell/log"),
    ("GET", "/api/plugins/inventory"),
    ("POST", "/api/plugins/add"),
    ("POST", "/api/plugins/remove"),
    ("GET", "/api/memory"),
    ("GET", "/api/memory/search?q=x"),
    ("GET", "/api/memory/graph?entity=x"),
    ("GET", "/api/memory/scenes"),
    ("POST", "/api/memory/distill"),
    ("GET", "/v1/models"),
    ("POST", "/v1/chat/completions"),
    ("GET", "/no/such/route"),
]


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory, mock: MockLLM) -> Iterator[HttpKernel]:
    k = HttpKernel(tmp_path_factory.mktemp("security"), mock)
    k.start()
    yield k
    k.stop()


def anonymous(kernel: HttpKernel, **headers: str) -> httpx.Client:
    return httpx.Client(base_url=kernel.url, headers=headers, timeout=30, follow_redirects=False)


def session_count(kernel: HttpKernel) -> int:
    with kernel.client() as client:
        return len(client.get("/api/sessions").json()["sessions"])


def test_no_or_a_wrong_token_is_401_on_every_route(kernel: HttpKernel, mock: MockLLM) -> None:
    mock.reset()
    before = session_count(kernel)
    wrong = {"authorization": "Bearer " + "x" * len(kernel.token)}
    other = "B" if kernel.token.endswith("A") else "A"  # one character off, never the token itself
    cookie = {"cookie": "hologram_token=" + kernel.token[:-1] + other}
    for headers in ({}, wrong, cookie):
        with anonymous(kernel, **headers) as client:
            for method, path in ROUTES:
                response = client.request(method, path, json={"text": "hi", "messages": []})
                assert response.status_code == 401, (headers, method, path, response.status_code)
                if path.startswith("/v1"):
                    assert response.json()["error"]["type"] == "authentication_error"
                elif path.startswith("/api"):
                    assert response.json()["error"]["code"] == "unauthorized"
                else:
                    assert "hologram open" in response.text and "访问链接" in response.text  # bilingual page
    with anonymous(kernel) as client:
        assert client.get("/?token=wrong").status_code == 401
        assert client.get("/", params={"token": ""}).status_code == 401
    assert session_count(kernel) == before and mock.requests == []  # nothing ran


def test_the_link_sets_a_strict_cookie_that_then_works(kernel: HttpKernel) -> None:
    with anonymous(kernel) as client:
        response = client.get("/", params={"token": kernel.token})
        assert response.status_code == 303 and response.headers["location"] == "/"
        cookie = response.headers["set-cookie"]
        for part in ("hologram_token=", "HttpOnly", "SameSite=Strict", "Path=/"):
            assert part in cookie, cookie
        assert "Secure" not in cookie  # no TLS here
        assert response.headers["referrer-policy"] == "no-referrer"
        assert client.cookies.get("hologram_token") == kernel.token
        assert client.get("/api/info").status_code == 200  # the cookie alone authenticates a GET
        index = client.get("/")
        assert index.status_code in (200, 404)  # 404 until the page (static/index.html) is installed
        assert kernel.token not in index.text


def test_a_forged_host_is_refused(kernel: HttpKernel) -> None:
    port = kernel.info()["port"]
    with kernel.client() as client:
        for host in (
            "evil.example",
            f"evil.example:{port}",
            f"127.0.0.1:{port + 1}",
            "127.0.0.1",
            f"localhost.:{port}",
        ):
            response = client.get("/api/info", headers={"host": host})
            assert response.status_code == 403, (host, response.text)
            assert response.json()["error"]["code"] == "forbidden"
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"LOCALHOST:{port}"):
            assert client.get("/api/info", headers={"host": host}).status_code == 200, host


def test_a_cross_origin_post_with_the_cookie_is_refused(kernel: HttpKernel, mock: MockLLM) -> None:
    mock.reset()
    mock.script([{"content": "ok"}], default={"content": "ok"})
    port = kernel.info()["port"]
    before = session_count(kernel)
    cookie = {"cookie": f"hologram_token={kernel.token}"}
    with anonymous(kernel, **cookie) as client:
        for origin in ("http://evil.example", f"http://127.0.0.1:{port + 1}", "null", None):
            headers = {"origin": origin} if origin is not None else {}
            response = client.post("/api/turns", json={"text": "forged"}, headers=headers)
            assert response.status_code == 403, (origin, response.text)
            assert "Origin" in response.json()["error"]["message"]
        assert session_count(kernel) == before  # no forged turn started
        lock = kernel.lock.read_bytes()
        for path, body in (("/api/plugins/add", {"target": "acme"}), ("/api/plugins/remove", {"name": "shell"})):
            forged = client.post(path, json=body, headers={"origin": "http://evil.example"})
            assert forged.status_code == 403, (path, forged.text)
        assert kernel.lock.read_bytes() == lock
        own = client.post("/api/turns", json={"text": "from the page"}, headers={"origin": f"http://127.0.0.1:{port}"})
        assert own.status_code == 200, own.text
    with kernel.client() as client:  # Bearer clients (scripts, the remote CLI) send no Origin
        assert client.post("/api/turns", json={"text": "from a script"}).status_code == 200
    wait_until(lambda: session_count(kernel) == before + 2, timeout=30, what="the two allowed turns")


def test_malformed_bodies_are_4xx_naming_the_field(kernel: HttpKernel) -> None:
    huge = b'{"text": "' + b"x" * 2_000_000 + b'"}'
    cases: list[tuple[str, str, dict[str, object], str]] = [
        ("POST", "/api/turns", {"content": b"not json"}, "not valid JSON"),
        ("POST", "/api/turns", {"content": b""}, "empty"),
        ("POST", "/api/turns", {"json": ["a", "list"]}, "JSON object"),
        ("POST", "/api/turns", {"json": {}}, "text: missing"),
        ("POST", "/api/turns", {"json": {"text": 5}}, "text: must be a string"),
        ("POST", "/api/turns", {"json": {"text": "   "}}, "text: empty"),
        ("POST", "/api/turns", {"json": {"text": "hi", "session": 7}}, "session:"),
        ("POST", "/api/turns", {"json": {"text": "hi", "session": "a/b"}}, "session:"),
        ("POST", "/api/turns", {"content": huge}, "at most"),
        ("POST", "/api/sessions/s1/approvals/a1", {"json": {"approved": "yes"}}, "approved: must be true or false"),
        ("POST", "/api/sessions/s1/approvals/a1", {"json": {}}, "decision: missing"),
        ("PATCH", "/api/sessions/s1", {"json": {"title": 5}}, "title: must be a string"),
        ("PUT", "/api/providers", {"json": {"providers": "all"}}, "providers: must be a list"),
        ("PUT", "/api/providers", {"json": {"providers": [1]}}, "providers: must be a list of objects"),
        ("PUT", "/api/providers", {"json": {"providers": [{"name": "x", "kind": "openai"}]}}, "providers[0]"),
        ("POST", "/api/providers/test", {"json": {}}, "provider"),
        ("GET", "/api/plugins/shell/log?lines=abc", {}, "lines:"),
        ("GET", "/api/memory/search", {}, "q: missing"),
        ("GET", "/api/memory/search?q=x&limit=0", {}, "limit:"),
        ("GET", "/api/memory/graph", {}, "entity: missing"),
        ("GET", "/api/memory/graph?entity=x&hops=3", {}, "hops: must be 1-2"),
        ("POST", "/api/memory/distill", {"json": {"idle_hours": -1}}, "idle_hours: must be a number of hours"),
        ("POST", "/api/memory/distill", {"json": {"max_accesses": "many"}}, "max_accesses: must be a whole number"),
        ("GET", "/api/sessions/s1/events?after=abc", {}, "after"),
        ("POST", "/api/plugins/shell/explode", {}, "restart, stop or start"),
        ("POST", "/api/plugins/nosuchplugin/restart", {}, "no plugin named"),
        ("POST", "/api/plugins/add", {"json": {}}, "target: missing"),
        ("POST", "/api/plugins/add", {"json": {"target": 5}}, "target: must be a string"),
        ("POST", "/api/plugins/add", {"json": {"target": "  "}}, "target: empty"),
        ("POST", "/api/plugins/add", {"json": {"target": "acme", "confirm": 5}}, "confirm: must be a string"),
        ("POST", "/api/plugins/add", {"json": {"target": "./acme"}}, "give an absolute path"),  # the kernel's 422
        ("POST", "/api/plugins/add", {"json": {"target": "acme @ https://x.example/a.whl"}}, "a URL"),
        ("POST", "/api/plugins/remove", {"json": {}}, "name: missing"),
        ("POST", "/api/plugins/remove", {"json": {"name": "shell"}}, "was not added with `hologram plugin add`"),
        ("GET", "/api/sessions/nosuchsession", {}, "there is no session"),
        ("DELETE", "/api/info", {}, "not allowed"),
    ]
    with kernel.client() as client:
        for method, path, body, words in cases:
            response = client.request(method, path, **body)  # type: ignore[arg-type]
            assert 400 <= response.status_code < 500, (method, path, response.status_code, response.text)
            error = response.json()["error"]
            assert words in error["message"], (method, path, error)
            assert set(error) == {"code", "message"} and "Traceback" not in error["message"]


def test_secrets_never_reach_an_answer_or_a_log_line(kernel: HttpKernel, mock: MockLLM) -> None:
    """The token and the provider's API key, looked for in every body and header of the admin routes (the
    login's own Set-Cookie aside), and in every log line of the run; the settings file stays 0600 after an
    edit through the API."""
    mock.reset()
    mock.script([{"content": "fine"}], default={"content": "fine"})
    seen: list[str] = []
    with kernel.client() as client:
        listed = client.get("/api/providers")
        assert listed.status_code == 200, listed.text
        [provider] = listed.json()["providers"]
        assert provider["api_key_set"] is True and "api_key" not in provider
        saved = client.put("/api/providers", json={"providers": [provider]})  # a page edit: key kept by name
        assert saved.status_code == 200, saved.text
        responses = [
            listed,
            saved,
            client.post("/api/providers/test", json={"name": provider["name"]}),
            client.post("/api/providers/test", json={"provider": {**provider, "base_url": "http://127.0.0.1:9"}}),
            client.get("/api/info"),
            client.get("/api/plugins"),
            client.get("/api/plugins/http/log?lines=1000"),
            client.get("/api/memory"),
            client.get("/api/memory/graph", params={"entity": "x"}),
            client.get("/api/memory/scenes"),
            client.post("/api/turns", json={"text": "hello"}),
            client.get("/api/sessions"),
            client.get("/v1/models"),
            client.get("/api/info", headers={"host": "evil.example"}),
        ]
    for response in responses:
        assert response.status_code < 500, (response.url, response.text)
        seen.append(response.text)
        seen.extend(f"{k}: {v}" for k, v in response.headers.items())
    blob = "\n".join(seen)
    assert kernel.token not in blob and API_KEY not in blob
    logs = kernel.logs()
    assert "http: listening on" in logs  # the log is the one this run wrote
    assert kernel.token not in logs and API_KEY not in logs
    assert stat.S_IMODE((kernel.data / "settings.toml").stat().st_mode) == 0o600
    assert API_KEY in (kernel.data / "settings.toml").read_text()  # kept, not lost by the edit
