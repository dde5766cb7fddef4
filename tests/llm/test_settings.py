"""Provider settings: validation, secrets kept out of reprs, chain configuration errors."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from hologram.llm import (
    ChatRequest,
    LLMConfigError,
    Message,
    ProviderChain,
    ProvidersConfig,
    ProviderSettings,
    hookimpl,
    make_adapter_manager,
)
from mock_llm import MockLLM
from tests.kit.loop import run

BASE = {"name": "ds", "kind": "deepseek", "base_url": "https://api.deepseek.com/", "model": "deepseek-v4-flash"}


def test_toml_shape_and_secret_hidden() -> None:
    cfg = ProvidersConfig.model_validate({"providers": [{**BASE, "api_key": "sk-topsecret", "thinking": True}]})
    p = cfg.providers[0]
    assert p.base_url == "https://api.deepseek.com" and p.thinking is True and p.max_retries == 3
    assert p.resolve_api_key() == "sk-topsecret"
    for text in (repr(p), str(p), repr(cfg), p.model_dump_json()):
        assert "sk-topsecret" not in text


@pytest.mark.parametrize(
    ("patch", "needle"),
    [
        ({"api_key": "k", "api_key_env": "K"}, "not both"),
        ({"kind": "openai", "thinking": True}, "thinking is a deepseek option"),
        ({"base_url": "api.deepseek.com"}, "http:// or https://"),
        ({"context_window": 0}, "greater than 0"),
        ({"surprise": 1}, "Extra inputs are not permitted"),
    ],
)
def test_invalid_settings(patch: dict[str, object], needle: str) -> None:
    with pytest.raises(ValidationError, match=needle):
        ProviderSettings.model_validate({**BASE, **patch})


def test_duplicate_names_and_unknown_kinds() -> None:
    with pytest.raises(ValidationError, match="duplicate provider name 'ds'"):
        ProvidersConfig.model_validate({"providers": [BASE, BASE]})
    with pytest.raises(LLMConfigError, match="duplicate provider names: ds"):
        ProviderChain([ProviderSettings.model_validate(BASE), ProviderSettings.model_validate(BASE)])
    with pytest.raises(LLMConfigError, match="unknown provider kind 'acme'"):
        ProviderChain([ProviderSettings.model_validate({**BASE, "kind": "acme"})])


def test_third_party_adapter_registers_a_kind(mock_llm: MockLLM) -> None:
    """A vendor added from outside: its hooks run for its kind only, generic parsing does the rest."""

    class Acme:
        @hookimpl
        def llm_adapter_kinds(self) -> list[str]:
            return ["acme"]

        @hookimpl
        def llm_transform_request(
            self, kind: str, settings: ProviderSettings, request: ChatRequest, body: dict[str, Any]
        ) -> None:
            if kind == "acme":
                body["seed"] = 7

    mock_llm.script([{"content": "acme says hi"}, {"content": "plain"}])
    acme = ProviderSettings(name="acme", kind="acme", base_url=mock_llm.base_url, model="a1")
    plain = ProviderSettings(name="plain", base_url=mock_llm.base_url, model="a1")

    async def go() -> list[str]:
        out = []
        for s in (acme, plain):
            async with ProviderChain([s], plugin_manager=make_adapter_manager(Acme())) as c:
                out.append((await c.complete(ChatRequest([Message.user("hi")]))).content)
        return out

    assert run(go()) == ["acme says hi", "plain"]
    assert [r.body.get("seed") for r in mock_llm.requests] == [7, None]


def test_old_session_dicts_load() -> None:
    m = Message.from_dict({"role": "assistant", "content": "hi"})
    assert m.reasoning_content is None and m.tool_calls == ()
    assert Message.from_dict(m.to_dict()) == m
