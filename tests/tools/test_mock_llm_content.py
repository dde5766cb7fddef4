"""The strict mock checks content arrays as the vendors do (rule 14 of hologram/testing/mock_llm/server.py): OpenAI's
part types and shapes, DeepSeek's text-only content. Requests go over real HTTP on loopback; each case asserts
the status and the vendor's wording, and that a rejected request consumed no script step.

Mutation check (done): `check_content` returning None at once turns every case here red (200, not 400).
"""

from __future__ import annotations

import base64
from typing import Any

import pytest

from mock_llm import MockLLM

from .test_mock_llm import error_of, post

PNG = "data:image/png;base64," + base64.b64encode(b"\x89PNG\r\n\x1a\n tiny").decode()


def user(content: Any, role: str = "user") -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": role, "content": content}]}


def test_openai_takes_text_and_image_parts(mock_llm: MockLLM) -> None:
    mock_llm.script([{"content": "a cat"}])
    content = [{"type": "text", "text": "what is it?"}, {"type": "image_url", "image_url": {"url": PNG}}]
    r = post(mock_llm, user(content))
    assert r.status_code == 200, r.text
    assert mock_llm.requests[-1].body["messages"][0]["content"] == content


@pytest.mark.parametrize(
    ("content", "role", "message", "param"),
    [
        ([], "user", "Invalid 'messages[0].content': empty array.", "messages[0].content"),
        ({"type": "text"}, "user", "Invalid type for 'messages[0].content': expected one of a string or array", None),
        ([{"type": "image"}], "user", "Invalid value: 'image'. Supported values are: 'text', 'image_url'", None),
        ([{"type": "text"}], "user", "Missing required parameter: 'messages[0].content[0].text'.", None),
        ([{"type": "image_url", "image_url": {}}], "user", "Missing required parameter: 'messages[0].content[0]"
         ".image_url.url'.", None),
        ([{"type": "image_url", "image_url": {"url": "iVBORw0KGgo="}}], "user", "Invalid 'messages[0].content[0]"
         ".image_url.url'. Expected a base64-encoded data URL with an image MIME type", None),
        ([{"type": "image_url", "image_url": {"url": "data:image/png;base64,@@@"}}], "user",
         "Invalid base64 image_url.", None),
        ([{"type": "image_url", "image_url": {"url": PNG}}], "system", "Image URLs are only allowed for messages "
         "with role 'user', but this message with role 'system' contains an image URL.", "messages[0]"),
    ],
)  # fmt: skip
def test_openai_refuses_bad_content_arrays(
    mock_llm: MockLLM, content: Any, role: str, message: str, param: str | None
) -> None:
    mock_llm.script([{"content": "never sent"}])
    r = post(mock_llm, user(content, role))
    assert r.status_code == 400, r.text
    error = error_of(r)
    assert error["message"].startswith(message), error
    assert error["type"] == "invalid_request_error"
    if param is not None:
        assert error["param"] == param
    assert mock_llm.requests[-1].rejected
    mock_llm.reset()


def test_deepseek_takes_text_parts_and_refuses_an_image_as_an_unknown_variant(deepseek: MockLLM) -> None:
    deepseek.script([{"content": "ok"}])
    assert post(deepseek, user([{"type": "text", "text": "hi"}])).status_code == 200
    r = post(deepseek, user([{"type": "text", "text": "hi"}, {"type": "image_url", "image_url": {"url": PNG}}]))
    assert r.status_code == 400
    error = error_of(r)
    assert error["message"].startswith(
        "Failed to deserialize the JSON body into the target type: messages[0]: unknown variant `image_url`, "
        "expected `text` at line 1 column "
    ), error
    assert error["code"] == "invalid_request_error"
    assert [q.rejected for q in deepseek.requests] == [False, True]
