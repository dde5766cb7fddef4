"""The strict mock rejects what the vendors reject, with their status and message, and streams like them.

Every validation rule of hologram/testing/mock_llm/server.py has a test here asserting the exact status and message;
if a rule is loosened, its test goes red. Requests go over real HTTP on loopback.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from mock_llm import MockLLM
from tests.kit.mock_llm import MockProcess

_HTTP = httpx.Client(timeout=10)
USER = {"role": "user", "content": "hi"}
CALL = {"id": "call_x", "type": "function", "function": {"name": "f", "arguments": "{}"}}


def post(
    mock: MockLLM, body: Any, headers: dict[str, str] | None = None, path: str = "/v1/chat/completions"
) -> httpx.Response:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return _HTTP.post(f"http://127.0.0.1:{mock.port}" + path, content=content, headers=headers or {}, timeout=10)


def error_of(resp: httpx.Response) -> dict[str, Any]:
    err = resp.json()["error"]
    assert set(err) == {"message", "type", "param", "code"}
    return dict(err)


# --- rules -------------------------------------------------------------------------------------------


def test_wrong_or_missing_key_is_401() -> None:
    with MockLLM("openai", api_key="sk-right-1234") as mock:
        body = {"model": "m", "messages": [USER]}
        mock.script([{"content": "ok"}])
        wrong = post(mock, body, {"Authorization": "Bearer sk-wrong-9999"})
        assert wrong.status_code == 401
        assert error_of(wrong)["message"].startswith("Incorrect API key provided: sk-***9999.")
        assert error_of(wrong)["code"] == "invalid_api_key"
        missing = post(mock, body)
        assert missing.status_code == 401
        assert error_of(missing)["message"].startswith("You didn't provide an API key.")
        ok = post(mock, body, {"Authorization": "Bearer sk-right-1234"})
        assert ok.status_code == 200
    with MockLLM("deepseek", api_key="sk-right-1234") as ds:
        r = post(ds, body, {"Authorization": "Bearer sk-wrong-9999"})
        assert r.status_code == 401
        assert error_of(r)["message"] == "Authentication Fails, Your api key: ****9999 is invalid"


def test_non_json_is_400(mock_llm: MockLLM, deepseek: MockLLM) -> None:
    r = post(mock_llm, b"{not json")
    assert r.status_code == 400
    assert error_of(r)["message"].startswith("We could not parse the JSON body of your request.")
    r = post(deepseek, b"{not json")
    assert r.status_code == 400
    assert error_of(r)["message"] == "Failed to parse the request body as JSON"


def test_extra_body_is_an_unrecognized_argument(mock_llm: MockLLM, deepseek: MockLLM) -> None:
    body = {"model": "m", "messages": [USER], "extra_body": {"thinking": {"type": "enabled"}}}
    for mock in (mock_llm, deepseek):
        r = post(mock, body)
        assert r.status_code == 400
        assert error_of(r)["message"] == "Unrecognized request argument supplied: extra_body"
        assert error_of(r)["type"] == "invalid_request_error"


def test_thinking_is_unknown_to_openai_and_checked_by_deepseek(mock_llm: MockLLM, deepseek: MockLLM) -> None:
    r = post(mock_llm, {"model": "m", "messages": [USER], "thinking": {"type": "enabled"}})
    assert (r.status_code, error_of(r)["message"]) == (400, "Unrecognized request argument supplied: thinking")
    r = post(deepseek, {"model": "m", "messages": [USER], "thinking": {"type": "on"}})
    assert r.status_code == 422
    assert "thinking: expected" in error_of(r)["message"]
    deepseek.script([{"content": "ok"}])
    assert post(deepseek, {"model": "m", "messages": [USER], "thinking": {"type": "enabled"}}).status_code == 200


def test_missing_model_and_messages(mock_llm: MockLLM, deepseek: MockLLM) -> None:
    r = post(mock_llm, {"messages": [USER]})
    assert (r.status_code, error_of(r)["message"]) == (400, "you must provide a model parameter")
    r = post(mock_llm, {"model": "m"})
    assert (r.status_code, error_of(r)["message"]) == (400, "Missing required parameter: 'messages'.")
    assert error_of(r)["param"] == "messages"
    r = post(mock_llm, {"model": "m", "messages": []})
    assert r.status_code == 400 and error_of(r)["code"] == "empty_array"
    r = post(deepseek, {"messages": [USER]})
    assert r.status_code == 422
    assert error_of(r)["message"] == "Failed to deserialize the JSON body into the target type: missing field `model`"
    r = post(deepseek, {"model": "m"})
    assert r.status_code == 422
    assert error_of(r)["message"].endswith("missing field `messages`")


def test_bad_role(mock_llm: MockLLM, deepseek: MockLLM) -> None:
    body = {"model": "m", "messages": [USER, {"role": "bot", "content": "x"}]}
    r = post(mock_llm, body)
    assert r.status_code == 400
    assert error_of(r)["message"] == (
        "Invalid value: 'bot'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', "
        "and 'developer'."
    )
    assert error_of(r)["param"] == "messages[1].role"
    r = post(deepseek, body)
    assert r.status_code == 422
    assert "messages[1].role: unknown variant `bot`" in error_of(r)["message"]


def test_openai_rejects_reasoning_content_field(mock_llm: MockLLM, deepseek: MockLLM) -> None:
    body = {"model": "m", "messages": [USER, {"role": "assistant", "content": "a", "reasoning_content": "r"}, USER]}
    r = post(mock_llm, body)
    assert r.status_code == 400
    assert error_of(r)["message"] == (
        "Additional properties are not allowed ('reasoning_content' was unexpected) - 'messages.1'"
    )
    deepseek.script([{"content": "ok"}])
    assert post(deepseek, body).status_code == 200


def test_tool_calls_without_results(mock_llm: MockLLM, deepseek: MockLLM) -> None:
    second = {**CALL, "id": "call_y"}
    body = {
        "model": "m",
        "messages": [
            USER,
            {"role": "assistant", "content": None, "tool_calls": [CALL, second]},
            {"role": "tool", "tool_call_id": "call_y", "content": "1"},
            USER,
        ],
    }
    for mock in (mock_llm, deepseek):
        r = post(mock, body)
        assert r.status_code == 400
        assert error_of(r)["message"] == (
            "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
            "'tool_call_id'. The following tool_call_ids did not have response messages: call_x"
        )
    # at the very end of the history, too
    r = post(mock_llm, {"model": "m", "messages": body["messages"][:2]})
    assert r.status_code == 400
    assert error_of(r)["message"].endswith("did not have response messages: call_x, call_y")


ORPHAN = "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'."


@pytest.mark.parametrize(
    "messages",
    [
        [USER, {"role": "tool", "tool_call_id": "call_x", "content": "1"}],
        [  # the call exists but a user message intervenes
            USER,
            {"role": "assistant", "content": None, "tool_calls": [CALL]},
            {"role": "tool", "tool_call_id": "call_x", "content": "1"},
            USER,
            {"role": "tool", "tool_call_id": "call_x", "content": "again"},
        ],
        [  # answered twice
            USER,
            {"role": "assistant", "content": None, "tool_calls": [CALL]},
            {"role": "tool", "tool_call_id": "call_x", "content": "1"},
            {"role": "tool", "tool_call_id": "call_x", "content": "1"},
        ],
        [  # wrong id
            USER,
            {"role": "assistant", "content": None, "tool_calls": [CALL]},
            {"role": "tool", "tool_call_id": "call_z", "content": "1"},
        ],
    ],
)
def test_orphan_tool_message(mock_llm: MockLLM, messages: list[dict[str, Any]]) -> None:
    r = post(mock_llm, {"model": "m", "messages": messages})
    assert (r.status_code, error_of(r)["message"]) == (400, ORPHAN)


def test_tool_message_without_id_and_bad_arguments(mock_llm: MockLLM) -> None:
    r = post(mock_llm, {"model": "m", "messages": [USER, {"role": "tool", "content": "1"}]})
    assert r.status_code == 400
    assert error_of(r)["message"] == "Missing required parameter: 'messages[1].tool_call_id'."
    bad = {**CALL, "function": {"name": "f", "arguments": {"a": 1}}}
    r = post(mock_llm, {"model": "m", "messages": [USER, {"role": "assistant", "tool_calls": [bad]}]})
    assert r.status_code == 400
    assert (
        error_of(r)["message"] == "Invalid type for 'messages[1].tool_calls[0].function.arguments': expected a string."
    )


def test_deepseek_thinking_needs_reasoning_on_tool_call_turns(deepseek: MockLLM) -> None:
    history: list[dict[str, Any]] = [
        USER,
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "call_x", "content": "1"},
    ]
    r = post(deepseek, {"model": "deepseek-chat", "messages": history, "thinking": {"type": "enabled"}})
    assert r.status_code == 400
    assert error_of(r)["message"] == "Missing `reasoning_content` field in the assistant message at message index 1"
    r = post(deepseek, {"model": "deepseek-reasoner", "messages": history})
    assert r.status_code == 400, "deepseek-reasoner thinks by default"
    deepseek.script([{"content": "a"}, {"content": "b"}])
    assert (
        post(deepseek, {"model": "deepseek-chat", "messages": history, "thinking": {"type": "disabled"}}).status_code
        == 200
    )
    with_reasoning = [history[0], {**history[1], "reasoning_content": ""}, history[2]]
    ok = post(deepseek, {"model": "m", "messages": with_reasoning, "thinking": {"type": "enabled"}})
    assert ok.status_code == 200


def test_context_window() -> None:
    with MockLLM("openai", max_context_tokens=10) as mock:
        r = post(mock, {"model": "m", "messages": [{"role": "user", "content": "x" * 200}]})
        assert r.status_code == 400
        assert error_of(r)["message"].startswith("This model's maximum context length is 10 tokens.")
        assert error_of(r)["code"] == "context_length_exceeded"


def test_rejected_requests_consume_no_step(mock_llm: MockLLM) -> None:
    mock_llm.script([{"content": "first"}])
    assert post(mock_llm, {"model": "m"}).status_code == 400
    r = post(mock_llm, {"model": "m", "messages": [USER]})
    assert r.json()["choices"][0]["message"]["content"] == "first"
    assert [x.status for x in mock_llm.requests] == [400, 200]
    assert len(mock_llm.rejections) == 1


# --- script steps ---------------------------------------------------------------------------------


def test_scripted_error_with_retry_after_and_exhaustion(mock_llm: MockLLM) -> None:
    mock_llm.script([{"error": {"status": 429, "message": "slow down", "retry_after": 7}}])
    r = post(mock_llm, {"model": "m", "messages": [USER]})
    assert r.status_code == 429 and r.headers["retry-after"] == "7"
    assert error_of(r)["message"] == "slow down"
    r = post(mock_llm, {"model": "m", "messages": [USER]})
    assert r.status_code == 500 and error_of(r)["message"] == "mock_llm: script exhausted"
    assert mock_llm.rejections == [], "scripted errors are not validation rejections"


def test_non_streaming_completion_shape(deepseek: MockLLM) -> None:
    deepseek.script(
        [{"content": "hi", "reasoning_content": "think", "usage": {"prompt_tokens": 9, "cached_tokens": 4}}]
    )
    r = post(deepseek, {"model": "m", "messages": [USER]}, path="/chat/completions")
    data = r.json()
    assert data["object"] == "chat.completion"
    assert data["choices"][0]["message"] == {"role": "assistant", "content": "hi", "reasoning_content": "think"}
    assert data["usage"]["prompt_tokens_details"]["cached_tokens"] == 4
    assert data["usage"]["prompt_cache_hit_tokens"] == 4


def sse(resp: httpx.Response) -> list[Any]:
    events = [line[len("data: ") :] for line in resp.text.split("\n\n") if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    return [json.loads(e) for e in events[:-1]]


def test_stream_shape(deepseek: MockLLM) -> None:
    deepseek.script(
        [
            {
                "reasoning_content": "let me think",
                "content": "calling",
                "tool_calls": [
                    {"id": "call_a", "name": "read", "arguments": '{"path": "/etc/hosts"}'},
                    {"id": "call_b", "name": "ls", "arguments": '{"dir": "/"}'},
                ],
                "usage": {"prompt_tokens": 20, "cached_tokens": 8, "reasoning_tokens": 3},
            }
        ]
    )
    body = {"model": "m", "messages": [USER], "stream": True, "stream_options": {"include_usage": True}}
    r = post(deepseek, body)
    assert r.headers["content-type"].startswith("text/event-stream")
    chunks = sse(r)
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    assert "".join(d.get("reasoning_content") or "" for d in deltas) == "let me think"
    assert "".join(d.get("content") or "" for d in deltas) == "calling"
    calls = [tc for d in deltas for tc in d.get("tool_calls", [])]
    firsts = [tc for tc in calls if "id" in tc]
    assert [(tc["index"], tc["id"], tc["function"]["name"]) for tc in firsts] == [
        (0, "call_a", "read"),
        (1, "call_b", "ls"),
    ]
    pieces_a = [tc["function"]["arguments"] for tc in calls if tc["index"] == 0]
    assert len(pieces_a) > 2 and "".join(pieces_a) == '{"path": "/etc/hosts"}'
    assert all("id" not in tc and "name" not in tc["function"] for tc in calls if tc not in firsts)
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
    last = chunks[-1]
    assert last["choices"] == []
    assert last["usage"]["prompt_tokens_details"] == {"cached_tokens": 8}
    assert last["usage"]["completion_tokens_details"] == {"reasoning_tokens": 3}
    assert all(c["usage"] is None for c in chunks[:-1])


def test_stream_without_usage_and_reuse_index_zero() -> None:
    with MockLLM("openai", reuse_index_zero=True) as mock:
        mock.script(
            [{"tool_calls": [{"id": "a", "name": "f", "arguments": "{}"}, {"id": "b", "name": "g", "arguments": "{}"}]}]
        )
        chunks = sse(post(mock, {"model": "m", "messages": [USER], "stream": True}))
        assert all("usage" not in c for c in chunks)
        assert all(c["choices"] for c in chunks)
        indexes = {tc["index"] for c in chunks for tc in c["choices"][0]["delta"].get("tool_calls", [])}
        assert indexes == {0}
        assert "reasoning_content" not in json.dumps(chunks)


def test_disconnect_mid_stream(mock_llm: MockLLM) -> None:
    mock_llm.script([{"disconnect": True, "after_chunks": 2, "content": "abcdefghijkl"}])
    with pytest.raises(httpx.RemoteProtocolError):
        post(mock_llm, {"model": "m", "messages": [USER], "stream": True})
    mock_llm.script([{"disconnect": True, "content": "x"}])
    with pytest.raises(httpx.RemoteProtocolError):
        post(mock_llm, {"model": "m", "messages": [USER]})


def test_delay_step(mock_llm: MockLLM) -> None:
    mock_llm.script([{"delay": 5.0}, {"content": "late"}])
    # only the read is short: connecting to a loopback server on a busy machine must not be what times out
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(
            mock_llm.base_url + "/chat/completions",
            json={"model": "m", "messages": [USER]},
            timeout=httpx.Timeout(10.0, read=0.1),
        )


# --- out of process -------------------------------------------------------------------------------


@pytest.mark.slow
def test_out_of_process_control_endpoints(tmp_path: Any, mock_llm_process: Callable[..., MockProcess]) -> None:
    steps = tmp_path / "steps.json"
    steps.write_text(json.dumps([{"content": "from file"}]))
    proc = mock_llm_process("--vendor", "deepseek", "--script", str(steps))
    base = proc.base_url
    assert base.startswith("http://127.0.0.1:")
    root = base.removesuffix("/v1")
    body = {"model": "m", "messages": [USER]}
    assert httpx.post(base + "/chat/completions", json=body).json()["choices"][0]["message"]["content"] == "from file"
    httpx.post(root + "/_mock/script", json={"steps": [{"content": "scripted"}]}).raise_for_status()
    assert httpx.post(base + "/chat/completions", json=body).json()["choices"][0]["message"]["content"] == "scripted"
    seen = httpx.get(root + "/_mock/requests").json()
    assert [r["status"] for r in seen] == [200, 200] and seen[0]["body"] == body
    httpx.post(root + "/_mock/reset").raise_for_status()
    assert httpx.get(root + "/_mock/requests").json() == []


def test_a_step_can_answer_by_the_last_role_with_unique_call_ids() -> None:
    """One default step serves a whole tool-using turn, turn after turn (soak and fault-injection runs)."""
    step = {
        "by_last_role": {
            "user": {"tool_calls": [{"id": "c{n}", "name": "t", "arguments": "{}"}]},
            "tool": {"content": "done"},
        }
    }
    with MockLLM("openai") as mock:
        mock.script([], default=step)
        url = f"{mock.base_url}/chat/completions"
        first = httpx.post(url, json={"model": "m", "messages": [{"role": "user", "content": "hi"}]}).json()
        call = first["choices"][0]["message"]["tool_calls"][0]
        assert call["id"] == "c1"
        history = [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": "r"},
        ]
        second = httpx.post(url, json={"model": "m", "messages": history}).json()
        assert second["choices"][0]["message"]["content"] == "done"
        third = httpx.post(url, json={"model": "m", "messages": [{"role": "user", "content": "again"}]}).json()
        assert third["choices"][0]["message"]["tool_calls"][0]["id"] == "c3"


def test_the_shipped_mock_imports_the_standard_library_only(tmp_path: Any) -> None:
    """It ships in hologram-sdk for plugin authors, whose SDK-only install has none of the kernel's dependencies:
    `python -m hologram.testing.mock_llm` must load nothing but the standard library and its own modules (run
    from an empty directory, so nothing of this checkout's path is picked up by accident)."""
    probe = (
        "import sys\n"
        "before = set(sys.modules)\n"
        "import hologram.testing.mock_llm.__main__\n"
        "extra = sorted(m for m in set(sys.modules) - before if m.split('.')[0] not in sys.stdlib_module_names)\n"
        "print(extra)\n"
    )
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, check=True)
    loaded = set(json.loads(done.stdout.replace("'", '"')))
    own = {"hologram", "hologram._version", "hologram.testing"} | {
        f"hologram.testing.mock_llm{m}" for m in ("", ".__main__", ".script", ".server", ".validate")
    }
    assert loaded == own, loaded - own


NESTED_CALL = {"id": "c1", "type": "function", "function": {"name": "files_read", "arguments": "{}"}}


def test_a_tool_call_in_the_wrong_form_is_refused_when_scripted(
    tmp_path: Any, mock_llm: MockLLM, mock_llm_process: Callable[..., MockProcess]
) -> None:
    """A step's tool call written as OpenAI sends it ({"function": {...}}) used to stream a call with no name,
    which the kernel dropped without a word (found writing a script by hand, as a newcomer would): it is refused
    where it is given — in process, on POST /_mock/script, and as --script at the start."""
    with pytest.raises(ValueError, match=r"step 1: a tool call is \{\"id\", \"name\", \"arguments\"\}"):
        mock_llm.script([{"tool_calls": [NESTED_CALL]}])
    with pytest.raises(ValueError, match="arguments must be a JSON string"):
        mock_llm.script([], default={"tool_calls": [{"id": "c1", "name": "files_read", "arguments": {}}]})
    proc = mock_llm_process()
    root = proc.base_url.removesuffix("/v1")
    refused = httpx.post(root + "/_mock/script", json={"steps": [{"content": "ok"}, {"tool_calls": [NESTED_CALL]}]})
    assert refused.status_code == 400 and "step 2" in refused.json()["error"], refused.text
    steps = tmp_path / "steps.json"
    steps.write_text(json.dumps({"steps": [{"by_last_role": {"user": {"tool_calls": [NESTED_CALL]}}}]}))
    run = subprocess.run(
        [sys.executable, "-m", "hologram.testing.mock_llm", "--script", str(steps)], capture_output=True, text=True
    )
    assert run.returncode == 2 and f"{steps}: script: step 1's by_last_role: step 1: a tool call is" in run.stderr
