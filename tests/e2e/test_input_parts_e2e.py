"""Typed input parts end to end (issue 35 item 5): a real `hologram up`, `TurnClient` over the control socket,
`hologram ask --image` (also ``--url``: the http plugin, real HTTP on loopback), the strict mocks.

Two kernels: one whose only provider is an OpenAI-vendor mock (takes images) and that serves the http plugin,
one whose only provider is a DeepSeek-vendor mock (text only). Each test asserts what the mock received — the
content array, or nothing.

Mutation checks (done, each turned the named test red): `HttpTurnClient.start` sending text only
(test_hologram_ask_url_image_sends_the_image_over_http: the stored input has no parts); `message_to_wire` not
building the content array (test_an_image_turn_reaches_the_vision_provider_as_a_content_array: the strict mock
received a string); `ProviderChain._able` not refusing (test_a_text_only_provider_refuses_an_image_before_any_
request: the DeepSeek mock received the request and answered 400 "unknown variant `image_url`");
`_persist_input` not storing the parts (test_an_image_turn_reaches_the_vision_provider_as_a_content_array).
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hologram.api import turn as api
from hologram.clients import TurnClient
from hologram.rpc import INVALID_PARAMS, RpcError
from mock_llm import MockLLM
from tests.kit.manifests import copy_shipped
from tests.kit.providers import write_settings

from .kernel import E2EKernel, session_of
from .test_remote_cli_e2e import RemoteKernel

pytestmark = pytest.mark.slow
PNG_BYTES = b"\x89PNG\r\n\x1a\n" + bytes(range(64))
PNG = base64.b64encode(PNG_BYTES).decode()
IMAGE = {"type": "image", "mime": "image/png", "data": PNG}


@pytest.fixture(scope="module")
def vision_mock() -> Iterator[MockLLM]:
    with MockLLM("openai") as m:
        yield m


@pytest.fixture(scope="module")
def vision(tmp_path_factory: pytest.TempPathFactory, vision_mock: MockLLM) -> Iterator[RemoteKernel]:
    root = tmp_path_factory.mktemp("vision")
    k = RemoteKernel(root, [vision_mock])
    copy_shipped("http", root / "manifests")
    k.hologram("build", "--no-discover", "-m", str(root / "manifests"), "-o", str(k.lock), check=True)
    write_settings(  # kind openai: no `thinking` (E2EKernel's default block is DeepSeek's)
        k.data / "settings.toml",
        f'[agent]\nmax_steps = 4\n\n[[providers]]\nname = "vision"\nkind = "openai"\n'
        f'base_url = "{vision_mock.base_url}"\nmodel = "gpt-4o-mini"\nmax_retries = 0\ntimeout_s = 10\n',
    )
    k.start()
    yield k
    k.stop()


@pytest.fixture(scope="module")
def text_only(tmp_path_factory: pytest.TempPathFactory, mock: MockLLM) -> Iterator[E2EKernel]:
    k = E2EKernel(tmp_path_factory.mktemp("textonly"), [mock])  # one DeepSeek provider, as settings have it
    k.start()
    yield k
    k.stop()


async def turn_of(kernel: E2EKernel, session: str, text: str = "", parts: list[dict[str, Any]] | None = None) -> Any:
    async with await TurnClient.connect(kernel.data, client="parts") as client:
        turn = await client.start(text, session=session, parts=parts)
        async with asyncio.timeout(60):
            async for _ in turn:
                pass
        return turn


def input_events(kernel: E2EKernel, session: str) -> list[dict[str, Any]]:
    return [e["data"] for e in kernel.events(session)["events"] if e["kind"] == "input"]


def test_an_image_turn_reaches_the_vision_provider_as_a_content_array(vision: E2EKernel, vision_mock: MockLLM) -> None:
    vision_mock.reset()
    vision_mock.script([{"content": "a tiny png"}, {"content": "still a png"}])
    parts = [{"type": "text", "text": "what is in it?"}, IMAGE]
    first = asyncio.run(turn_of(vision, "img-1", parts=parts))
    second = asyncio.run(turn_of(vision, "img-1", "and now?"))  # a later turn: the text, not the image again
    assert (first.ended.output, second.ended.output) == ("a tiny png", "still a png")
    started = next(e for e in first.events if isinstance(e, api.TurnStarted))
    assert started.text == "what is in it?\n\n[image: image/png]"
    requests = vision_mock.requests
    assert [r.status for r in requests] == [200, 200] and not vision_mock.rejections
    sent = requests[0].body["messages"][-1]
    assert sent == {
        "role": "user",
        "content": [
            {"type": "text", "text": "what is in it?\n\n[image: image/png]"},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
        ],
    }
    later = [m for m in requests[1].body["messages"] if m["role"] == "user"]
    assert [m["content"] for m in later] == ["what is in it?\n\n[image: image/png]", "and now?"]
    who = {"client": "parts", "client_version": "0.1.0"}  # who started them (the identity on every input)
    stored = input_events(vision, "img-1")
    assert stored[0] == {"text": "what is in it?\n\n[image: image/png]", "parts": parts, **who}
    assert stored[1] == {"text": "and now?", **who}, "a text-only turn is stored as before (no parts key)"


def test_a_text_file_is_read_by_the_model_as_text(vision: E2EKernel, vision_mock: MockLLM) -> None:
    vision_mock.reset()
    vision_mock.script([{"content": "two lines"}])
    note = {"type": "file", "name": "notes.md", "mime": "text/markdown", "data": base64.b64encode(b"a\nb").decode()}
    asyncio.run(turn_of(vision, "file-1", parts=[{"type": "text", "text": "count the lines"}, note]))
    (request,) = vision_mock.requests
    assert request.body["messages"][-1]["content"] == "count the lines\n\n[file notes.md (text/markdown)]\na\nb"


def test_bad_parts_are_refused_naming_the_field_and_the_fix(vision: E2EKernel, vision_mock: MockLLM) -> None:
    vision_mock.reset()

    async def refused(params: dict[str, Any]) -> RpcError:
        async with await TurnClient.connect(vision.data, client="parts") as client:
            with pytest.raises(RpcError) as caught:
                await client.connection.request(api.TURN_START, params)
            return caught.value

    not_base64 = asyncio.run(refused({"input": [{"type": "image", "mime": "image/png", "data": "@@@@"}]}))
    assert not_base64.code == INVALID_PARAMS
    assert not_base64.message.startswith("turn/start: input.0.image.data: image data is not base64"), not_base64
    assert "encode the bytes as standard base64" in not_base64.message
    both = asyncio.run(refused({"text": "hi", "input": [{"type": "text", "text": "hi"}]}))
    assert "give exactly one of text (a string) or input (a list of parts), not both" in both.message
    big = "A" * (9 * 1024 * 1024 * 4 // 3)
    too_big = asyncio.run(refused({"input": [{"type": "image", "mime": "image/png", "data": big}]}))
    assert "image is 9.0 MiB decoded; at most 8.0 MiB per part: send a smaller one" in too_big.message
    assert vision_mock.requests == [], "nothing reached the provider"


def test_hologram_ask_image_sends_the_image(vision: E2EKernel, vision_mock: MockLLM, tmp_path: Path) -> None:
    vision_mock.reset()
    vision_mock.script([{"content": "I see a chart"}])
    chart = tmp_path / "chart.png"
    chart.write_bytes(PNG_BYTES)
    result = vision.ask("what does it say?", "--image", str(chart))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "I see a chart"
    (request,) = vision_mock.requests
    content = request.body["messages"][-1]["content"]
    assert content[1] == {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}
    assert input_events(vision, session_of(result))[0]["parts"][1] == IMAGE


def test_hologram_ask_url_image_sends_the_image_over_http(
    vision: RemoteKernel, vision_mock: MockLLM, tmp_path: Path
) -> None:
    vision_mock.reset()
    vision_mock.script([{"content": "seen over http"}])
    chart = tmp_path / "chart.png"
    chart.write_bytes(PNG_BYTES)
    result = vision.remote("ask", "--url", vision.url, "--image", str(chart), "remote look")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "seen over http"
    (request,) = vision_mock.requests
    assert request.body["messages"][-1]["content"][1]["image_url"]["url"] == f"data:image/png;base64,{PNG}"
    stored = input_events(vision, session_of(result))[0]
    assert stored["parts"] == [{"type": "text", "text": "remote look"}, IMAGE]


def test_hologram_ask_with_a_missing_or_too_large_image_says_so(
    vision: E2EKernel, vision_mock: MockLLM, tmp_path: Path
) -> None:
    vision_mock.reset()
    missing = vision.ask("hi", "--image", str(tmp_path / "nope.png"))
    assert missing.returncode != 0
    assert f"{tmp_path / 'nope.png'}: error: cannot read the image: No such file or directory" in missing.stderr
    huge = tmp_path / "huge.png"
    with huge.open("wb") as f:
        f.truncate(9 * 1024 * 1024)
    too_large = vision.ask("hi", "--image", str(huge))
    assert too_large.returncode != 0
    assert "error: the image is 9.0 MiB; at most 8 MiB per image" in too_large.stderr
    for result in (missing, too_large):
        assert "Traceback" not in result.stderr, result.stderr
    assert vision_mock.requests == []


def test_a_text_only_provider_refuses_an_image_before_any_request(text_only: E2EKernel, mock: MockLLM) -> None:
    mock.reset()
    turn = asyncio.run(turn_of(text_only, "ds-img", parts=[{"type": "text", "text": "look"}, IMAGE]))
    failed = next(e for e in turn.events if isinstance(e, api.TurnFailed))
    assert (failed.kind, failed.status) == ("bad_request", None)
    assert failed.message.startswith("p1 (model deepseek-chat) does not take images: configure a vision-capable")
    assert turn.ended.stop_reason == "error"
    assert mock.requests == [], "refused before anything was sent"
    mock.script([{"content": "hello"}])  # the same kernel and provider answer a text turn
    text = asyncio.run(turn_of(text_only, "ds-text", "hi"))
    assert text.ended.output == "hello" and len(mock.requests) == 1
    assert [e["text"] for e in input_events(text_only, "ds-text")] == ["hi"]


def test_hologram_ask_image_against_a_text_only_provider_is_a_clear_error(
    text_only: E2EKernel, mock: MockLLM, tmp_path: Path
) -> None:
    mock.reset()
    image = tmp_path / "a.png"
    image.write_bytes(PNG_BYTES)
    result = text_only.ask("what is it?", "--image", str(image))
    assert result.returncode != 0
    assert "error: p1 (model deepseek-chat) does not take images" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    assert mock.requests == []
