"""The OpenAI-compatible API with the official `openai` SDK as the client, against a real `hologram up`
(the strict mock as the model behind Hologram): each request is a real Hologram turn in a Hologram session.

Mutation checks (done): making `last_user_text` take the first user message turns the multi-turn test red
(the second turn's input is the first question again); starting the turn with ``approvals=True`` turns the
denied-tool test red (the turn waits for an approval nobody gives, and the kernel's timeout answers it
with another reason).
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from mock_llm import MockLLM

from .kernel import HttpKernel

pytestmark = pytest.mark.slow

LOOKUP_MANIFEST = """\
[plugin]
name = "lookup"
version = "0.1.0"
description = "a tool that needs no approval"
run = { module = "lookup", env = { PYTHONPATH = "{path}" } }

[[tools]]
name = "city_lookup"
description = "the country of a city"
parallel_safe = true
[tools.parameters]
type = "object"
required = ["city"]
properties.city = { type = "string" }
"""

LOOKUP = """\
from hologram.sdk import Plugin

plugin = Plugin("lookup")


@plugin.tool("city_lookup")
def city_lookup(city: str) -> str:
    return f"{city} is in France (lookup plugin)"


if __name__ == "__main__":
    plugin.run()
"""


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory, mock: MockLLM) -> Iterator[HttpKernel]:
    k = HttpKernel(tmp_path_factory.mktemp("openai"), mock, plugins={"lookup": (LOOKUP_MANIFEST, LOOKUP)})
    k.start()
    yield k
    k.stop()


@pytest.fixture
def client(kernel: HttpKernel, mock: MockLLM) -> Iterator[openai.OpenAI]:
    mock.reset()
    with openai.OpenAI(base_url=kernel.url + "/v1", api_key=kernel.token, max_retries=0, timeout=60) as c:
        yield c


def stored(kernel: HttpKernel, session: str) -> dict[str, object]:
    with kernel.client() as http:
        response = http.get(f"/api/sessions/{session}")
        assert response.status_code == 200, response.text
        data: dict[str, object] = response.json()
        return data


def test_models_lists_hologram(client: openai.OpenAI) -> None:
    assert [m.id for m in client.models.list()] == ["hologram"]


def test_a_completion_is_a_hologram_turn_with_its_reasoning(
    client: openai.OpenAI, kernel: HttpKernel, mock: MockLLM
) -> None:
    mock.script([{"reasoning_content": "thinking it over", "content": "Bonjour 你好"}])
    raw = client.chat.completions.with_raw_response.create(
        model="anything", messages=[{"role": "user", "content": "say hello"}]
    )
    completion = raw.parse()
    message = completion.choices[0].message
    assert message.content == "Bonjour 你好" and completion.choices[0].finish_reason == "stop"
    assert getattr(message, "reasoning_content", None) == "thinking it over"
    assert completion.model == "hologram"
    session = raw.headers["x-hologram-session"]
    events = stored(kernel, session)["events"]
    assert [e["kind"] for e in events] == ["input", "response", "output"]  # type: ignore[index]
    assert mock.requests[-1].body["messages"][-1] == {"role": "user", "content": "say hello"}


def test_a_streamed_completion_carries_content_and_reasoning_deltas(client: openai.OpenAI, mock: MockLLM) -> None:
    mock.script([{"reasoning_content": "step by step reasoning", "content": "a streamed answer in pieces"}])
    stream = client.chat.completions.create(
        model="hologram",
        messages=[{"role": "user", "content": [{"type": "text", "text": "stream please"}]}],
        stream=True,
        stream_options={"include_usage": True},
    )
    content, reasoning, finish, chunks = "", "", None, 0
    for chunk in stream:
        chunks += 1
        if not chunk.choices:
            assert chunk.usage is not None  # include_usage: the last chunk
            continue
        delta = chunk.choices[0].delta
        content += delta.content or ""
        reasoning += getattr(delta, "reasoning_content", None) or ""
        finish = chunk.choices[0].finish_reason or finish
    assert content == "a streamed answer in pieces" and reasoning == "step by step reasoning"
    assert finish == "stop" and chunks > 5  # really streamed: the mock sends 4-character pieces


def test_a_conversation_is_kept_in_one_session_named_by_user(
    client: openai.OpenAI, kernel: HttpKernel, mock: MockLLM
) -> None:
    mock.script([{"content": "first answer"}, {"content": "second answer"}])
    first = client.chat.completions.create(
        model="hologram", user="conv-7", messages=[{"role": "user", "content": "question one"}]
    )
    # a client resends the whole history; Hologram takes the last user message, the history is its own
    second = client.chat.completions.create(
        model="hologram",
        user="conv-7",
        messages=[
            {"role": "user", "content": "question one"},
            {"role": "assistant", "content": "first answer"},
            {"role": "user", "content": "question two"},
        ],
    )
    assert (first.choices[0].message.content, second.choices[0].message.content) == ("first answer", "second answer")
    sent = [(m["role"], m.get("content")) for m in mock.requests[-1].body["messages"] if m["role"] != "system"]
    assert sent[-3:] == [("user", "question one"), ("assistant", "first answer"), ("user", "question two")]
    messages = stored(kernel, "conv-7")["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant"]  # type: ignore[index]


def test_the_session_header_wins_and_tool_use_shows_in_the_session(
    client: openai.OpenAI, kernel: HttpKernel, mock: MockLLM
) -> None:
    arguments = json.dumps({"city": "Lyon"})
    mock.script(
        [
            {"reasoning_content": "r", "tool_calls": [{"id": "t1", "name": "city_lookup", "arguments": arguments}]},
            {"content": "Lyon is in France."},
        ]
    )
    completion = client.chat.completions.create(
        model="hologram",
        user="ignored-user",
        messages=[{"role": "user", "content": "where is Lyon?"}],
        extra_headers={"X-Hologram-Session": "tools-session"},
    )
    assert completion.choices[0].message.content == "Lyon is in France."
    events = stored(kernel, "tools-session")["events"]
    [result] = [e for e in events if e["kind"] == "tool_result"]  # type: ignore[union-attr]
    assert "Lyon is in France (lookup plugin)" in json.dumps(result)
    with kernel.client() as http:
        assert http.get("/api/sessions/ignored-user").status_code == 404


def test_an_approval_needing_tool_is_denied_with_the_reason(
    client: openai.OpenAI, kernel: HttpKernel, mock: MockLLM
) -> None:
    """Nobody can approve over this API: the call is denied at once (no approval timeout), the reason in its
    tool result; a turn whose every call was denied ends with that as its answer."""
    arguments = json.dumps({"target": "mark-openai"})
    mock.script([{"reasoning_content": "r", "tool_calls": [{"id": "d1", "name": "deploy", "arguments": arguments}]}])
    completion = client.chat.completions.create(
        model="hologram", user="denied-session", messages=[{"role": "user", "content": "deploy it"}]
    )
    reason = "no client that can approve is watching this session"
    assert reason in str(completion.choices[0].message.content)
    events = stored(kernel, "denied-session")["events"]
    [result] = [e for e in events if e["kind"] == "tool_result"]  # type: ignore[union-attr]
    assert reason in json.dumps(result)
    assert kernel.received() == []  # the recorder never got the call


def test_a_wrong_token_is_an_authentication_error(kernel: HttpKernel, mock: MockLLM) -> None:
    mock.reset()
    with openai.OpenAI(base_url=kernel.url + "/v1", api_key="not-the-token", max_retries=0) as wrong:
        with pytest.raises(openai.AuthenticationError) as caught:
            wrong.chat.completions.create(model="hologram", messages=[{"role": "user", "content": "hi"}])
        assert caught.value.status_code == 401
        with pytest.raises(openai.AuthenticationError):
            wrong.models.list()
    assert mock.requests == []  # no turn ran


def test_bad_requests_are_openai_shaped_4xx(kernel: HttpKernel) -> None:
    with kernel.client() as http:
        cases = [
            ({"model": "hologram"}, "messages"),
            ({"messages": []}, "messages"),
            ({"messages": [{"role": "system", "content": "x"}]}, "no user message"),
            ({"messages": [{"role": "user", "content": 5}]}, "messages[0].content"),
            ({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}, "only text parts"),
            ({"messages": [{"role": "user", "content": "hi"}], "stream": "yes"}, "stream"),
        ]
        for body, words in cases:
            response = http.post("/v1/chat/completions", json=body)
            assert response.status_code == 400, (body, response.text)
            error = response.json()["error"]
            assert words in error["message"] and error["type"] == "invalid_request_error", (body, error)
        response = http.post("/v1/chat/completions", content=b"{not json")
        assert response.status_code == 400 and "not valid JSON" in response.json()["error"]["message"]


def test_httpx_sees_the_session_header_on_a_fresh_session(kernel: HttpKernel, mock: MockLLM) -> None:
    mock.reset()
    mock.script([{"content": "fresh"}])
    with kernel.client() as http:
        response = http.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": "new one"}]})
        assert response.status_code == 200, response.text
        session = response.headers["x-hologram-session"]
        assert session and stored(kernel, session)["session"] == session
    assert isinstance(response, httpx.Response)


def test_the_docs_example_asks_hologram(kernel: HttpKernel, mock: MockLLM) -> None:
    """docs/web.md's `openai` example (docs/examples/web/openai_client.py), run against this kernel."""
    mock.reset()
    mock.script([{"reasoning_content": "why not", "content": "hello from the example"}])
    path = Path(__file__).resolve().parents[2] / "docs" / "examples" / "web" / "openai_client.py"
    spec = importlib.util.spec_from_file_location("docs_example_openai_client", path)
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    answer, reasoning = example.ask(kernel.url, kernel.token, "hi", "docs-example")
    assert (answer, reasoning) == ("hello from the example", "why not")
    assert stored(kernel, "docs-example")["session"] == "docs-example"


def test_a_client_that_goes_away_cancels_its_non_streamed_turn(kernel: HttpKernel, mock: MockLLM) -> None:
    """A non-streamed request whose client gives up (its timeout) must not leave the turn running for nobody:
    the kernel cancels it. The model here would answer only after 60 s; the session's event stream, opened
    before the request, shows the turn end ``cancelled`` long before.

    Mutation check (done): awaiting the turn without watching for the disconnect (``await turn.collect()``)
    turns this red (the turn ends with ``answer`` once the mock answers)."""
    mock.reset()
    mock.script([{"delay": 60, "content": "too late"}])
    session = "openai-gone"
    quick = openai.OpenAI(base_url=kernel.url + "/v1", api_key=kernel.token, max_retries=0, timeout=1.0)
    with kernel.client() as http, http.stream("GET", f"/api/sessions/{session}/events", timeout=120) as events:
        assert events.status_code == 200
        with quick, pytest.raises(openai.APITimeoutError):
            quick.chat.completions.create(
                model="hologram",
                messages=[{"role": "user", "content": "take your time"}],
                extra_headers={"X-Hologram-Session": session},
            )
        ended = None
        for line in events.iter_lines():
            if line.startswith("data: "):
                event = json.loads(line[6:])
                if event["type"] == "turn.ended":
                    ended = event
                    break
    assert ended is not None and ended["stop_reason"] == "cancelled", ended


def test_with_the_page_open_on_the_session_the_page_is_asked_and_its_decision_holds(
    client: openai.OpenAI, kernel: HttpKernel, mock: MockLLM
) -> None:
    """The page and /v1 are one watcher (the http plugin): a /v1 turn, which cannot approve, must not switch off
    the approvals of the page watching the same session. The page's stream gets ``approval.requested``, its answer
    decides, and the call runs. Mutation check (done): `TurnHub.start` setting the starter's approval flag as
    given (False) turns this red (the call is denied at once: "no client that can approve ...")."""
    import threading

    import orjson

    session = "page-and-api"
    arguments = json.dumps({"target": "mark-page-approved"})
    mock.script(
        [
            {"reasoning_content": "r", "tool_calls": [{"id": "p1", "name": "deploy", "arguments": arguments}]},
            {"reasoning_content": "r", "content": "deployed, as the page allowed"},
        ]
    )
    seen: list[dict[str, Any]] = []
    watching = threading.Event()

    def page() -> None:  # what the open page does: follow the session's stream, answer what it is asked
        with kernel.client() as http, http.stream("GET", f"/api/sessions/{session}/events", timeout=60) as stream:
            assert stream.status_code == 200
            watching.set()
            for line in stream.iter_lines():
                if not line.startswith("data: "):
                    continue
                event = orjson.loads(line[6:])
                seen.append(event)
                if event["type"] == "approval.requested":
                    answer = http.post(
                        f"/api/sessions/{session}/approvals/{event['approval']}",
                        json={"approved": True, "reason": "the page says yes"},
                    )
                    assert answer.status_code == 200, answer.text
                if event["type"] == "turn.ended":
                    return

    reader = threading.Thread(target=page, daemon=True)
    reader.start()
    assert watching.wait(60), "the page's stream did not open"  # its headers come after the plugin watches
    completion = client.chat.completions.create(
        model="hologram",
        messages=[{"role": "user", "content": "deploy it"}],
        extra_headers={"X-Hologram-Session": session},
    )
    reader.join(60)
    assert "deployed, as the page allowed" in str(completion.choices[0].message.content)
    resolved = next(e for e in seen if e["type"] == "approval.resolved")
    assert (resolved["approved"], resolved["by"], resolved["reason"]) == (True, "http", "the page says yes")
    assert kernel.received() == ["mark-page-approved"]
