"""Images of tool results end to end through `hologram up` (issue 40 item 4): a plugin's tool answers a PNG in
its arena with ``mime: image/png`` (what browser_screenshot sends), the strict mock as the model.

Checked: the ``tool.result`` event and the stored result carry a reference (sha256, mime, size, width, height) and
no bytes; ``media/read`` answers the very bytes for the session that holds them and refuses another session; the
model's request has the tool's text only; the plugin's arena region is released (0 live regions after); an inline
base64 image over ``[media] max_image_bytes`` is not kept and the text the model reads says so; deleting the
session deletes its image.

Mutation checks (done): `Turn._record` emitting ``images=[]`` turns the first test red (no reference on the
event); the supervisor not sending ``arena/release`` turns it red too (1 live region); `MediaStore.read` not
checking the session turns the refusal red.

The http media route (same kernel, the shipped http plugin): the session's image with nosniff and cache headers;
another session's, an unknown id, non-hex / wrong-length / ``../`` ids (through httpx and as raw request lines)
404, never the token file; no token or a wrong one 401. Mutation-checked: the route's hex check off (red: the
kernel's 400 instead of 404), the headers dropped (red).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from hologram.api import turn as api
from hologram.clients import TurnClient
from hologram.rpc import RpcError
from mock_llm import MockLLM
from tests.kit.manifests import copy_shipped
from tests.kit.providers import provider_toml, write_settings
from tests.kit.wait import wait_until

from .kernel import PLUGINS, E2EKernel
from .plugins.e2e_images import png

pytestmark = pytest.mark.slow

MANIFEST = f"""\
[plugin]
name = "e2e-images"
version = "0.1.0"
description = "tools that return images"
run = {{ module = "e2e_images", env = {{ PYTHONPATH = "{PLUGINS}" }} }}

[[tools]]
name = "snap"
description = "a grey PNG"
parameters = {{ type = "object", properties = {{ fill = {{ type = "integer" }}, inline = {{ type = "boolean" }}, noise = {{ type = "integer" }} }}, required = ["fill"] }}

[[tools]]
name = "arena"
description = "live regions of the plugin's arena"
parameters = {{ type = "object", properties = {{}} }}
"""


class ImagesKernel(E2EKernel):
    def __init__(self, root: Path, mock: MockLLM) -> None:  # no super(): its own graph and settings
        self.root, self.mocks, self.process = root, [mock], None
        self.data, self.lock = root / "data", root / "hologram.lock"
        manifests = root / "manifests"
        manifests.mkdir(parents=True)
        (manifests / "e2e-images.toml").write_text(MANIFEST)
        copy_shipped("http", manifests)  # the media route (tests below)
        self.hologram("build", "--no-discover", "-m", str(manifests), "-o", str(self.lock), check=True)
        self.data.mkdir()
        settings = "[agent]\nmax_steps = 6\n\n[media]\nmax_image_bytes = 20000\n\n"
        write_settings(self.data / "settings.toml", settings + provider_toml(mock))


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory, mock: MockLLM) -> Iterator[ImagesKernel]:
    k = ImagesKernel(tmp_path_factory.mktemp("images"), mock)
    k.start()
    yield k
    k.stop()


def call(call_id: str, tool: str, **arguments: Any) -> dict[str, Any]:
    return {"reasoning_content": "r", "tool_calls": [{"id": call_id, "name": tool, "arguments": json.dumps(arguments)}]}


async def run_turn(client: TurnClient, text: str) -> tuple[str, list[Any]]:
    turn = await client.start(text)
    events = [event async for event in turn]
    assert turn.ended is not None and turn.ended.stop_reason == "answer", events[-1]
    return str(turn.session), events


def test_a_tool_image_reaches_the_client_by_reference_and_media_read(kernel: ImagesKernel, mock: MockLLM) -> None:
    mock.reset()
    mock.script(
        [
            call("c1", "snap", fill=90),
            call("c2", "arena"),
            {"reasoning_content": "r", "content": "done"},
            {"reasoning_content": "r", "content": "another session"},
        ]
    )
    expected = png(40, 30, 90)
    digest = hashlib.sha256(expected).hexdigest()

    async def go() -> None:
        async with await TurnClient.connect(kernel.data, client="e2e") as client:
            session, events = await run_turn(client, "take a picture")
            result = next(e for e in events if isinstance(e, api.ToolResult) and e.call_id == "c1")
            assert result.images == [
                {"id": digest, "mime": "image/png", "bytes": len(expected), "width": 40, "height": 30}
            ]
            assert result.content == f"snapped {len(expected)} bytes"
            done = [e for e in events if isinstance(e, api.ItemCompleted) and e.item.get("call_id") == "c1"]
            assert done and done[0].item["images"] == result.images
            arena = next(e for e in events if isinstance(e, api.ToolResult) and e.call_id == "c2")
            assert arena.content == "0", "the kernel released the blob's region of the plugin's arena"

            read = await client.read_turn(session, result.turn)  # turn/read: the tool call's item has them too
            [item] = [i for i in read["items"] if i.get("call_id") == "c1"]
            assert item["images"] == result.images

            ref, data = await client.media_read(session, digest)
            assert data == expected and ref["id"] == digest and ref["mime"] == "image/png"

            stored = await client.read(session)
            row = next(e for e in stored["events"] if e["kind"] == "tool_result" and e["call_id"] == "c1")
            assert row["data"]["images"] == result.images  # the log holds the reference, not the bytes
            assert "base64" not in json.dumps(stored)

            other, _ = await run_turn(client, "hello")
            with pytest.raises(RpcError) as refused:
                await client.media_read(other, digest)
            assert refused.value.code == 3 and "holds no image" in refused.value.message
            with pytest.raises(RpcError) as malformed:
                await client.media_read(session, "../../settings.toml")
            assert malformed.value.code == -32602

            assert await client.delete(session)
            with pytest.raises(RpcError):
                await client.media_read(session, digest)
            assert not (kernel.data / "media" / digest).exists()

    asyncio.run(asyncio.wait_for(go(), 120))
    tool_messages = [
        (m["tool_call_id"], m["content"]) for m in mock.requests[1].body["messages"] if m["role"] == "tool"
    ]
    assert tool_messages == [("c1", f"snapped {len(expected)} bytes")]  # the model: the text, no image
    assert mock.rejections == []


def test_an_image_over_the_cap_is_not_kept_and_the_model_is_told(kernel: ImagesKernel, mock: MockLLM) -> None:
    mock.reset()
    mock.script([call("c1", "snap", fill=3, inline=True, noise=30000), {"reasoning_content": "r", "content": "ok"}])

    async def go() -> api.ToolResult:
        async with await TurnClient.connect(kernel.data, client="e2e") as client:
            _, events = await run_turn(client, "a big one")
            return next(e for e in events if isinstance(e, api.ToolResult))

    result = asyncio.run(asyncio.wait_for(go(), 120))
    assert result.images == []
    assert "was not kept: over the limit of 20,000 bytes ([media] max_image_bytes" in result.content
    told = [m["content"] for m in mock.requests[-1].body["messages"] if m["role"] == "tool"]
    assert told == [result.content]


def http_base(kernel: ImagesKernel) -> tuple[str, str]:
    info = wait_until(
        lambda: json.loads((kernel.data / "http.json").read_text()) if (kernel.data / "http.json").exists() else None,
        timeout=30, what="http.json", retry_on=(ValueError,),
    )  # fmt: skip
    return str(info["url"]).rstrip("/"), (kernel.data / "http-token").read_text().strip()


def raw_get(url: str, path: str, token: str) -> tuple[int, bytes]:
    """A request line sent as written (no client normalises ``..`` away)."""
    host, port = url.split("//", 1)[1].split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        request = (
            f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n"
        )
        sock.sendall(request.encode())
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


def test_the_http_media_route_serves_the_sessions_image_and_nothing_else(kernel: ImagesKernel, mock: MockLLM) -> None:
    mock.reset()
    mock.script([call("c1", "snap", fill=200), {"reasoning_content": "r", "content": "done"}, {"content": "other"}])
    expected = png(40, 30, 200)
    digest = hashlib.sha256(expected).hexdigest()

    async def go() -> tuple[str, str]:
        async with await TurnClient.connect(kernel.data, client="e2e") as client:
            session, _ = await run_turn(client, "picture")
            other, _ = await run_turn(client, "something else")
            return session, other

    session, other = asyncio.run(asyncio.wait_for(go(), 120))
    url, token = http_base(kernel)
    auth = {"authorization": f"Bearer {token}"}
    with httpx.Client(base_url=url, headers=auth, timeout=30) as http:
        ok = http.get(f"/api/sessions/{session}/media/{digest}")
        assert ok.status_code == 200 and ok.content == expected
        assert ok.headers["content-type"] == "image/png"
        assert ok.headers["x-content-type-options"] == "nosniff"
        assert "immutable" in ok.headers["cache-control"] and "private" in ok.headers["cache-control"]
        assert http.get(f"/api/sessions/{other}/media/{digest}").status_code == 404  # another session's image
        assert http.get(f"/api/sessions/{session}/media/{'0' * 64}").status_code == 404  # unknown
        for bad in (digest.upper(), digest[:63], digest + "0", "g" * 64, "..%2F..%2Fhttp-token", "%2e%2e"):
            answer = http.get(f"/api/sessions/{session}/media/{bad}")
            assert answer.status_code == 404, (bad, answer.status_code)
            assert token.encode() not in answer.content
        assert http.get(f"/api/sessions/..%2F..%2Fhttp-token/media/{digest}").status_code in (400, 404)
    for path in (
        f"/api/sessions/{session}/media/../../../http-token",
        f"/api/sessions/{session}/media/..%2f..%2f..%2fhttp-token",
        "/api/sessions/../../http-token/media/" + digest,
    ):
        status, body = raw_get(url, path, token)
        assert status in (400, 404), (path, status)
        assert token.encode() not in body
    with httpx.Client(base_url=url, timeout=30) as anonymous:  # no token: 401, as every route
        assert anonymous.get(f"/api/sessions/{session}/media/{digest}").status_code == 401
        wrong = {"authorization": "Bearer nope"}
        assert anonymous.get(f"/api/sessions/{session}/media/{digest}", headers=wrong).status_code == 401
