from hologram.llm import ChatRequest, ChatResult, Message, ProviderChain, ProviderSettings
from hologram.testing.mock_llm import MockLLM, RecordedRequest


async def no_wait(seconds: float) -> None:  # the chain's back-off, skipped in tests
    return None


async def scripted() -> tuple[list[ChatResult], list[RecordedRequest]]:
    with MockLLM(
        "deepseek", api_key=None, reuse_index_zero=False, thinking_default=False, max_context_tokens=None, chunk_chars=4
    ) as mock:
        mock.script(
            [
                {"reasoning_content": "…", "tool_calls": [{"id": "call_1", "name": "f", "arguments": "{}"}]},
                {"error": {"status": 429, "message": "slow down", "retry_after": 2}},
                {"content": "done", "usage": {"cached_tokens": 10}},
            ]  # also: {"delay": 0.5}, {"disconnect": True, "after_chunks": 3, "content": "cut off"}
        )
        settings = ProviderSettings(name="m", kind="deepseek", base_url=mock.base_url, model="deepseek-chat")
        results = []
        async with ProviderChain([settings], sleep=no_wait) as chain:
            for question in ("call f", "and now?"):  # the second is retried after the 429
                results.append(await chain.complete(ChatRequest([Message.user(question)])))
        assert mock.rejections == []  # requests refused by validation/auth: a client bug in most tests
        return results, mock.requests  # RecordedRequest(path, headers, body, status, rejected)
