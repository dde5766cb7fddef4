"""``kernel.llm`` administration: list, save and test the provider chain of a running kernel.

This is how the web UI's first run works: a kernel started with no provider gets one through
``providers_save`` and answers the next turn, with no restart. Saving writes ``<data>/settings.toml``
(every other table kept, the file 0600: `hologram.config.settings_write`) and swaps the agent's chain; a turn already
running keeps the chain it started with (`_Turn` holds its own reference), the next turn uses the new one.

Keys: an answer says only whether a key is set (``api_key_set``) and which variable holds it
(``api_key_env``); errors name the entry and field (``providers[1].base_url``), never a value; a vendor's
error message is passed on verbatim, except that the key, should the vendor echo it, is cut out.
"""

from __future__ import annotations

import functools
import logging
import os
import ssl
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import httpx
from pydantic import ValidationError

from hologram.agent.turn import DEFAULT_CONTEXT_WINDOW
from hologram.base.errors import HologramError
from hologram.config.settings import Settings, load_settings, settings_path
from hologram.config.settings_write import replace_providers
from hologram.llm import (
    ChatRequest,
    LLMConfigError,
    LLMError,
    Message,
    ProviderClient,
    ProviderError,
    ProviderSettings,
    make_adapter_manager,
)
from hologram.llm.adapters import known_kinds
from hologram.rpc import INVALID_PARAMS, RpcError

if TYPE_CHECKING:
    from hologram.agent.turn import Agent
    from hologram.kernel import Kernel
    from hologram.llm import ProviderChain

log = logging.getLogger("hologram.agent.providers")
FACILITY = "kernel.llm"
WRITE_ONLY = ("api_key", "clear_api_key")  # what an entry may carry besides ProviderSettings' fields
READ_ONLY = ("api_key_set",)  # what providers_list adds; a page sends it back, it is ignored
TEST_PROMPT = "ping"
TEST_TIMEOUT_S = 30.0  # a test answers within a facility call's 60 s, whatever the provider's own timeout

ChainBuilder = Callable[[Settings], "tuple[ProviderChain | None, str]"]


@functools.cache
def _adapters() -> Any:
    """One adapter manager for checks and tests (a fresh one costs ~10 ms; they hold no per-call state)."""
    return make_adapter_manager()


@functools.cache
def _tls() -> ssl.SSLContext:
    """One TLS context for every test request: building one (loading the CA bundle) costs ~170 ms."""
    return httpx.create_ssl_context()


def describe(provider: ProviderSettings) -> dict[str, Any]:
    """One provider as answers show it: everything but the key, and whether there is one."""
    return {
        "name": provider.name,
        "kind": provider.kind,
        "base_url": provider.base_url,
        "model": provider.model,
        "thinking": provider.thinking,
        "context_window": provider.context_window,
        "timeout_s": provider.timeout_s,
        "api_key_set": _has_key(provider),
        "api_key_env": provider.api_key_env,
    }


def _has_key(provider: ProviderSettings) -> bool:
    """A key will be sent: one is stored, or the variable ``api_key_env`` names is set for the kernel."""
    if provider.api_key is not None:
        return True
    return provider.api_key_env is not None and bool(os.environ.get(provider.api_key_env))


# model-level checks of ProviderSettings (no ``loc``) by the field their message is about
_MODEL_CHECK_FIELDS = (("thinking", "thinking"), ("set api_key or api_key_env", "api_key"))


def _invalid(where: str, message: str) -> RpcError:
    return RpcError(INVALID_PARAMS, f"{where}: {message}")


def _validation_message(where: str, exc: ValidationError) -> RpcError:
    """The first problem, as ``providers[1].base_url: ...``; pydantic's ``msg`` never holds the input."""
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err.get("loc", ()))
        message = str(err.get("msg", "invalid value")).removeprefix("Value error, ")
        if err.get("type") == "extra_forbidden":
            message = "unknown field; a provider has " + ", ".join([*ProviderSettings.model_fields, *WRITE_ONLY])
        if not loc:
            loc = next((f for prefix, f in _MODEL_CHECK_FIELDS if message.startswith(prefix)), "")
        parts.append(f"{where}.{loc}: {message}" if loc else f"{where}: {message}")
    return RpcError(INVALID_PARAMS, "; ".join(parts))


def merge_entry(where: str, entry: Any, stored: dict[str, ProviderSettings]) -> ProviderSettings:
    """An entry of providers_save/providers_test as `ProviderSettings`: fields it leaves out keep their stored
    values (matched by ``name``), the key included, unless the entry sets ``api_key`` (null or blank: keep),
    sets ``api_key_env`` (the other way to give a key) or says ``clear_api_key``."""
    if not isinstance(entry, dict):
        raise _invalid(where, "must be an object with name, kind, base_url, model, ...")
    entry = {k: v for k, v in entry.items() if k not in READ_ONLY}
    clear = entry.pop("clear_api_key", False)
    if not isinstance(clear, bool):
        raise _invalid(f"{where}.clear_api_key", "must be true or false")
    name = entry.get("name")
    old = stored.get(name) if isinstance(name, str) else None
    merged: dict[str, Any] = {}
    if old is not None:
        merged = old.model_dump(exclude_none=True)
        merged.pop("api_key", None)
        if old.api_key is not None:
            merged["api_key"] = old.api_key
    key = entry.get("api_key")
    if key is None or (isinstance(key, str) and not key.strip()):  # an empty key field of a form: keep
        entry.pop("api_key", None)
    if "api_key" in entry:
        merged.pop("api_key_env", None)  # a key typed in replaces the variable
    if entry.get("api_key_env") is not None or clear:
        merged.pop("api_key", None)
    if clear:
        merged.pop("api_key_env", None)
    merged.update(entry)
    try:
        provider = ProviderSettings.model_validate(merged)
    except ValidationError as exc:
        raise _validation_message(where, exc) from None
    kinds = known_kinds(_adapters())
    if provider.kind not in kinds:
        raise _invalid(f"{where}.kind", f"unknown provider kind; known kinds: {', '.join(sorted(kinds))}")
    return provider


def _redact(text: str, provider: ProviderSettings) -> str:
    try:
        key = provider.resolve_api_key()
    except LLMConfigError:
        return text
    return text.replace(key, "****") if key else text


async def probe(provider: ProviderSettings, transport: httpx.AsyncBaseTransport | None = None) -> dict[str, Any]:
    """One real chat request asking for one token, no retries: does this provider answer?"""
    request = ChatRequest([Message.user(TEST_PROMPT)], max_tokens=1, stream=False)
    provider = provider.model_copy(update={"timeout_s": min(provider.timeout_s, TEST_TIMEOUT_S)})
    started = time.monotonic()
    status: int | None = None
    error: str | None = None
    model = provider.model
    async with httpx.AsyncClient(transport=transport, verify=_tls()) as http:
        client = ProviderClient(provider, _adapters(), http)
        try:
            result = await client.complete(request)
            model = result.model or model
        except ProviderError as exc:
            status = exc.status
            error = f"HTTP {exc.status}: {exc.message}" if exc.status is not None else exc.message
        except LLMError as exc:  # a key variable that is not set, ...
            error = str(exc)
    latency_ms = round((time.monotonic() - started) * 1000)
    if error is None:
        status = 200
    return {
        "ok": error is None,
        "model": model,
        "latency_ms": latency_ms,
        "status": status,
        "error": None if error is None else _redact(error, provider),
    }


class ProviderAdmin:
    """The three ``kernel.llm`` methods over one kernel's settings file and agent."""

    def __init__(self, kernel: Kernel, agent: Agent, build_chain: ChainBuilder) -> None:
        self.kernel = kernel
        self.agent = agent
        self.build_chain = build_chain
        self.retired: list[Any] = []  # replaced chains a running turn may still use (`_close_idle`)

    @property
    def path(self) -> Any:
        return settings_path(self.kernel.data_dir)

    def _stored(self) -> dict[str, ProviderSettings]:
        """The providers in the file now (the user may have edited it since the kernel started)."""
        try:
            settings = load_settings(self.kernel.data_dir)
        except HologramError as exc:
            raise RpcError(INVALID_PARAMS, f"settings: {exc}") from None
        return {p.name: p for p in settings.providers}

    def status(self) -> list[dict[str, Any]]:
        chain = self.agent.llm
        status = getattr(chain, "status", None)
        return status() if callable(status) else []

    async def providers_list(self) -> dict[str, Any]:
        return {"providers": [describe(p) for p in self.kernel.settings.providers]}

    async def providers_save(self, providers: Any) -> dict[str, Any]:
        if not isinstance(providers, list):
            raise _invalid("providers", "must be a list of provider objects, in fallback order")
        stored = self._stored()
        chain_list = [merge_entry(f"providers[{i}]", entry, stored) for i, entry in enumerate(providers)]
        seen: dict[str, int] = {}
        for i, p in enumerate(chain_list):
            if p.name in seen:
                raise _invalid(f"providers[{i}].name", f"the same name as providers[{seen[p.name]}]; names are unique")
            seen[p.name] = i
        settings = self.kernel.settings.model_copy(update={"providers": chain_list})
        chain, problem = self.build_chain(settings)
        if chain is None and chain_list:
            raise _invalid("providers", problem)
        try:
            replace_providers(self.path, chain_list)
        except HologramError as exc:
            raise RpcError(INVALID_PARAMS, f"settings: {exc}") from None
        self._adopt(settings, chain, problem)
        await self._close_idle()
        names = ", ".join(seen) or "none"
        log.info("providers saved to %s: %s", self.path, names)
        self.kernel.notify("agent", f"providers saved: {names}; the next turn uses them")
        return await self.providers_list()

    def _adopt(self, settings: Settings, chain: ProviderChain | None, problem: str) -> None:
        agent = self.agent
        if agent.llm is not None:
            self.retired.append(agent.llm)
        agent.llm = chain
        agent.no_llm_message = problem
        windows = [p.context_window for p in settings.providers if p.context_window]
        agent.context_window = min(windows) if windows else DEFAULT_CONTEXT_WINDOW
        self.kernel.settings = settings

    async def providers_test(self, provider: Any = None, name: Any = None) -> dict[str, Any]:
        stored = self._stored()
        if provider is not None:
            settings = merge_entry("provider", provider, stored)
        elif isinstance(name, str) and name in stored:
            settings = stored[name]
        elif name is None:
            raise _invalid("provider", "give a provider object, or the name of a saved one")
        else:
            known = ", ".join(stored) or "none saved"
            raise _invalid("name", f"no saved provider has that name; saved: {known}")
        return await probe(settings)

    async def _close_idle(self) -> None:
        """Close the replaced chains no running turn uses (the others wait for the next save, or shutdown)."""
        in_use = self.agent.chains_in_use
        idle = [chain for chain in self.retired if id(chain) not in in_use]
        self.retired = [chain for chain in self.retired if id(chain) in in_use]
        for chain in idle:
            await chain.aclose()

    async def aclose(self) -> None:
        for chain in self.retired:
            await chain.aclose()
        self.retired.clear()
