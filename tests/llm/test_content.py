"""Images in a request: sent as a content array to a provider that takes them, skipped for one that does not,
refused before any request when none of the chain does (strict mocks on loopback; what they received is the
evidence). And the text a turn's parts read as (`input_text`)."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Callable

import pytest

from hologram.llm import ChatRequest, Message, RequestRejectedError
from hologram.llm.content import image_urls, input_text
from mock_llm import MockLLM
from tests.kit.providers import provider

from .helpers import chain

URL = "data:image/png;base64," + base64.b64encode(b"\x89PNG tiny").decode()
ASK = ChatRequest([Message.system("s"), Message("user", "what is it?", images=(URL,))])


def test_a_chain_skips_the_text_only_provider_for_an_image(mock_llms: Callable[..., MockLLM]) -> None:
    text_only, vision = mock_llms("deepseek"), mock_llms("openai")
    vision.script([{"content": "a png"}])

    async def go() -> str:
        async with chain(provider(text_only, "ds"), provider(vision, "gpt")) as c:
            return (await c.complete(ASK)).content

    assert asyncio.run(go()) == "a png"
    assert text_only.requests == [], "the DeepSeek mock was never asked"
    (sent,) = vision.requests
    assert sent.body["messages"][1]["content"] == [
        {"type": "text", "text": "what is it?"},
        {"type": "image_url", "image_url": {"url": URL}},
    ]


def test_accepts_images_true_sends_deepseek_the_array_and_its_api_refuses_it(
    mock_llms: Callable[..., MockLLM],
) -> None:
    """The setting is what decides: a DeepSeek provider said to take images gets the array, and the strict
    mock answers as DeepSeek does (which is why its default is false)."""
    ds = mock_llms("deepseek")

    async def go() -> None:
        async with chain(provider(ds, "ds", accepts_images=True)) as c:
            await c.complete(ASK)

    with pytest.raises(RequestRejectedError, match="unknown variant `image_url`, expected `text`"):
        asyncio.run(go())
    assert [r.status for r in ds.requests] == [400]


def test_no_provider_takes_images_is_refused_before_any_request(mock_llms: Callable[..., MockLLM]) -> None:
    ds = mock_llms("deepseek")
    vision_off = mock_llms("openai")

    async def go() -> None:
        async with chain(provider(ds, "ds"), provider(vision_off, "small", accepts_images=False)) as c:
            await c.complete(ASK)

    with pytest.raises(RequestRejectedError) as caught:
        asyncio.run(go())
    assert str(caught.value).startswith(
        "ds (model deepseek-chat), small (model gpt-4o-mini) do not take images: configure a vision-capable provider"
    )
    assert ds.requests == [] and vision_off.requests == []


def test_input_text_reads_text_files_and_marks_images() -> None:
    parts = [
        {"type": "text", "text": "look"},
        {"type": "image", "url": "https://example.com/a.png"},
        {"type": "file", "name": "a.txt", "mime": "text/plain", "data": base64.b64encode(b"hello").decode()},
        {"type": "file", "name": "b.pdf", "mime": "application/pdf", "data": "JVBERg=="},
    ]
    assert input_text(parts) == (
        "look\n\n[image: https://example.com/a.png]\n\n[file a.txt (text/plain)]\nhello\n\n"
        "[file b.pdf (application/pdf): not text, not shown]"
    )
    assert image_urls(parts) == ("https://example.com/a.png",)
