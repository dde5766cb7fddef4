"""Retry, backoff, fallback, cooldown and fail-fast of the provider chain, against real mock servers."""

from __future__ import annotations

import socket
from collections.abc import Callable

import pytest

from hologram.llm import (
    AllProvidersFailed,
    ChatRequest,
    ChatResult,
    ContextOverflowError,
    Delta,
    Message,
    ProviderChain,
    ProviderSettings,
    RequestRejectedError,
    StreamInterruptedError,
)
from mock_llm import MockLLM
from tests.kit.loop import run
from tests.kit.providers import provider
from tests.llm.helpers import FakeClock, Sleeps, chain

REQ = ChatRequest([Message.user("hi")])


@pytest.fixture
def second(mock_llms: Callable[..., MockLLM]) -> MockLLM:
    return mock_llms("openai")


def err(status: int, message: str = "boom", **kw: object) -> dict[str, object]:
    return {"error": {"status": status, "message": message, **kw}}


def complete(c: ProviderChain, req: ChatRequest = REQ, deltas: list[Delta] | None = None) -> ChatResult:
    async def go() -> ChatResult:
        try:
            return await c.complete(req, deltas.append if deltas is not None else None)
        finally:
            await c.aclose()

    return run(go())


def test_transient_errors_retry_with_backoff_1_2_3(mock_llm: MockLLM) -> None:
    """Mutation check: with the backoff index fixed at 0 the sleeps were [1, 1, 1] and this went red."""
    mock_llm.script([err(500), err(502), err(408), {"content": "finally"}])
    sleeps = Sleeps()
    result = complete(chain(provider(mock_llm), sleeps=sleeps))
    assert result.content == "finally"
    assert sleeps.calls == [1.0, 2.0, 3.0]
    assert len(mock_llm.requests) == 4


def test_retry_after_is_honoured_and_capped(mock_llm: MockLLM) -> None:
    mock_llm.script(
        [err(429, retry_after=7), err(429, retry_after=120), err(503, retry_after="0.5"), {"content": "ok"}]
    )
    sleeps = Sleeps()
    assert complete(chain(provider(mock_llm), sleeps=sleeps)).content == "ok"
    assert sleeps.calls == [7.0, 30.0, 0.5]


def test_fall_back_on_500s_when_retries_are_spent(mock_llm: MockLLM, second: MockLLM) -> None:
    mock_llm.script([err(500, "upstream exploded")] * 4)
    second.script([{"content": "from the second"}])
    sleeps = Sleeps()
    result = complete(chain(provider(mock_llm, "first"), provider(second, "second"), sleeps=sleeps))
    assert (result.content, result.provider) == ("from the second", "second")
    assert len(mock_llm.requests) == 4 and sleeps.calls == [1.0, 2.0, 3.0]


def test_fall_back_on_401_without_retry_and_cool_down(second: MockLLM) -> None:
    with MockLLM("openai", api_key="sk-right") as locked:
        second.script([{"content": "a"}, {"content": "b"}, {"content": "c"}])
        locked.script([{"content": "locked ok"}])
        clock, sleeps = FakeClock(), Sleeps()
        c = chain(
            provider(locked, "locked", api_key="sk-wrong"), provider(second, "second"), sleeps=sleeps, clock=clock
        )

        async def go() -> list[ChatResult]:
            out = [await c.complete(REQ)]
            assert len(locked.requests) == 1 and sleeps.calls == []
            assert c.cooling_down()["locked"] == pytest.approx(300)
            out.append(await c.complete(REQ))
            assert len(locked.requests) == 1, "cooling down: not asked again"
            clock.now += 301
            out.append(await c.complete(REQ))
            await c.aclose()
            return out

        assert [r.provider for r in run(go())] == ["second", "second", "second"]
        assert len(locked.requests) == 2, "after the cooldown it is tried again"


@pytest.mark.parametrize("status", [402, 403])
def test_fall_back_on_402_403(mock_llm: MockLLM, second: MockLLM, status: int) -> None:
    mock_llm.script([err(status, "Insufficient Balance")])
    second.script([{"content": "ok"}])
    assert complete(chain(provider(mock_llm), provider(second, "p2"))).provider == "p2"
    assert len(mock_llm.requests) == 1


def test_400_fails_fast_with_the_vendor_message(mock_llm: MockLLM, second: MockLLM) -> None:
    """A real rejection from the strict mock (unknown top-level parameter): no retry, no fallback.

    Mutation check: catching RequestRejectedError with the other ProviderErrors in `complete` made the chain
    fall back to `second`; this test went red, then the code was restored."""
    second.script([{"content": "must not be asked"}])
    sleeps = Sleeps()
    c = chain(provider(mock_llm), provider(second, "p2"), sleeps=sleeps)
    with pytest.raises(RequestRejectedError) as info:
        complete(c, ChatRequest([Message.user("hi")], extra={"bogus_param": 1}))
    assert info.value.status == 400
    assert info.value.message == "Unrecognized request argument supplied: bogus_param"
    assert second.requests == [] and sleeps.calls == [] and len(mock_llm.requests) == 1


def test_422_fails_fast() -> None:
    with MockLLM("deepseek") as ds:
        with pytest.raises(RequestRejectedError) as info:
            complete(chain(provider(ds)), ChatRequest([Message.user("hi")], extra={"thinking": {"type": "on"}}))
        assert info.value.status == 422 and "thinking: expected" in info.value.message


def test_context_overflow_is_its_own_error(second: MockLLM) -> None:
    with MockLLM("openai", max_context_tokens=5) as small:
        with pytest.raises(ContextOverflowError) as info:
            complete(chain(provider(small), provider(second, "p2")), ChatRequest([Message.user("x" * 100)]))
        assert "maximum context length is 5 tokens" in str(info.value)
        assert second.requests == []


def test_no_retry_or_fallback_after_first_streamed_token(mock_llm: MockLLM, second: MockLLM) -> None:
    """Mutation check: making the client raise a TransientProviderError instead of StreamInterruptedError
    after output was delivered let the chain retry and then answer from `second` (the user would see two
    spliced answers); this test went red, then the code was restored."""
    mock_llm.script([{"disconnect": True, "after_chunks": 3, "content": "The answer is forty-two."}, {"content": "x"}])
    second.script([{"content": "second answer"}])
    deltas: list[Delta] = []
    sleeps = Sleeps()
    with pytest.raises(StreamInterruptedError) as info:
        complete(chain(provider(mock_llm), provider(second, "p2"), sleeps=sleeps), deltas=deltas)
    assert "not retrying or falling back" in str(info.value)
    assert info.value.partial_content == "The answ"  # role chunk + two 4-character pieces
    assert "".join(d.text for d in deltas) == info.value.partial_content
    assert len(mock_llm.requests) == 1 and second.requests == [] and sleeps.calls == []


def test_disconnect_before_any_output_is_retried(mock_llm: MockLLM) -> None:
    mock_llm.script([{"disconnect": True, "after_chunks": 1, "content": "lost"}, {"content": "again"}])
    sleeps = Sleeps()
    assert complete(chain(provider(mock_llm), sleeps=sleeps)).content == "again"
    assert sleeps.calls == [1.0]


def test_timeout_is_retried(mock_llm: MockLLM) -> None:
    """The retry must get its answer within the same timeout: 2 s for a local mock, and a first answer held
    back 30 s, so neither a slow machine (retry too slow) nor a fast one (first answer in time) changes it."""
    mock_llm.script([{"delay": 30.0, "content": "too late"}, {"content": "in time"}])
    sleeps = Sleeps()
    assert complete(chain(provider(mock_llm, timeout_s=2.0), sleeps=sleeps)).content == "in time"
    assert sleeps.calls == [1.0]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_all_failed_names_every_provider(second: MockLLM) -> None:
    second.script([err(503, "overloaded")] * 2)
    dead = ProviderSettings(name="dead", base_url=f"http://127.0.0.1:{free_port()}/v1", model="m", max_retries=1)
    with pytest.raises(AllProvidersFailed) as info:
        complete(chain(dead, provider(second, "busy", max_retries=1)))
    text = str(info.value)
    assert text.startswith("all 2 providers failed, last error: busy: HTTP 503: overloaded")
    assert "dead: connection failed" in text
    assert [name for name, _ in info.value.attempts] == ["dead", "busy"]


def test_missing_key_env_falls_back(second: MockLLM) -> None:
    second.script([{"content": "ok"}])
    nokey = ProviderSettings(name="nokey", base_url=second.base_url, model="m", api_key_env="NOPE_KEY")
    assert complete(chain(nokey, provider(second, "p2"), env={})).provider == "p2"


def test_a_dead_provider_cools_down_and_a_half_open_probe_brings_it_back(mock_llm: MockLLM, second: MockLLM) -> None:
    """After its retries are spent on 5xx the first provider is skipped (no retry ladder on every turn); once
    the cooldown is over one request probes it with a single attempt; a failed probe doubles the cooldown, a
    good one makes it healthy again.

    Mutation checks (done): `HealthBook.plan` keeping cooling providers in the plan turns this red (4 more
    requests to the dead one on the second turn); `failed` not doubling turns the 60 s assertion red."""
    mock_llm.script([err(500, "down")] * 5, default={"content": "first is back"})
    second.script([], default={"content": "from the second"})
    clock = FakeClock()
    sleeps = Sleeps(clock)
    c = chain(provider(mock_llm, "first"), provider(second, "second"), sleeps=sleeps, clock=clock)

    async def go() -> list[str]:
        served = [(await c.complete(REQ)).provider]
        assert len(mock_llm.requests) == 4 and sleeps.calls == [1.0, 2.0, 3.0]  # the ladder, once
        assert c.cooling_down()["first"] == pytest.approx(30)
        status = {p["name"]: p for p in c.status()}
        assert status["first"]["state"] == "cooling" and "HTTP 500: down" in status["first"]["last_error"]
        assert status["second"]["state"] == "healthy"
        served.append((await c.complete(REQ)).provider)
        assert len(mock_llm.requests) == 4, "cooling down: skipped"
        clock.now += 31
        assert {p["name"]: p["state"] for p in c.status()}["first"] == "half-open"
        sleeps.calls.clear()
        served.append((await c.complete(REQ)).provider)  # the probe: one attempt, fails (5th scripted 500)
        assert len(mock_llm.requests) == 5 and sleeps.calls == []
        assert c.cooling_down()["first"] == pytest.approx(60)
        clock.now += 61
        served.append((await c.complete(REQ)).provider)  # the probe succeeds
        assert {p["name"]: p["state"] for p in c.status()}["first"] == "healthy"
        served.append((await c.complete(REQ)).provider)
        await c.aclose()
        return served

    assert run(go()) == ["second", "second", "second", "first", "first"]


def test_cooldowns_double_up_to_the_cap(mock_llm: MockLLM, second: MockLLM) -> None:
    mock_llm.script([], default=err(503))
    second.script([], default={"content": "ok"})
    clock = FakeClock()
    c = chain(
        provider(mock_llm, "first", max_retries=0), provider(second, "second"), clock=clock, sleeps=Sleeps(clock),
        cooldown_s=30, max_cooldown_s=100,
    )  # fmt: skip

    async def go() -> list[float]:
        seen = []
        for _ in range(4):
            await c.complete(REQ)
            seen.append(round(c.cooling_down()["first"]))
            clock.now += 1000
        await c.aclose()
        return seen

    assert run(go()) == [30, 60, 100, 100]


def test_a_single_provider_is_never_skipped(mock_llm: MockLLM) -> None:
    """It is the only chance: every request gets its full retry ladder, cooling or not."""
    mock_llm.script([err(500)] * 4 + [err(500)] * 3, default={"content": "up again"})
    clock = FakeClock()
    sleeps = Sleeps(clock)
    c = chain(provider(mock_llm, "only"), sleeps=sleeps, clock=clock)

    async def go() -> str:
        with pytest.raises(AllProvidersFailed):
            await c.complete(REQ)
        assert len(mock_llm.requests) == 4
        result = await c.complete(REQ)  # cooling, but not skipped: 3 more 500s, then the answer
        await c.aclose()
        return result.content or ""

    assert run(go()) == "up again"
    assert len(mock_llm.requests) == 8


def test_when_every_provider_cools_down_each_gets_one_try(mock_llm: MockLLM, second: MockLLM) -> None:
    mock_llm.script([], default=err(500))
    second.script([err(500)] * 4, default={"content": "second recovered"})
    clock = FakeClock()
    sleeps = Sleeps(clock)
    c = chain(provider(mock_llm, "a"), provider(second, "b"), sleeps=sleeps, clock=clock)

    async def go() -> str:
        with pytest.raises(AllProvidersFailed) as info:
            await c.complete(REQ)
        assert "tried a: HTTP 500" in str(info.value) and "a: a:" not in str(info.value)
        assert (len(mock_llm.requests), len(second.requests)) == (4, 4)
        sleeps.calls.clear()
        result = await c.complete(REQ)  # both cooling: one attempt each, no ladder
        await c.aclose()
        assert sleeps.calls == []
        return result.content or ""

    assert run(go()) == "second recovered"
    assert (len(mock_llm.requests), len(second.requests)) == (5, 5)
