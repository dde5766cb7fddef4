"""What can go wrong talking to a provider, sorted by what the caller should do about it.

The class decides the policy in `chain.py`: a `TransientProviderError` is retried on the same provider, a
`ProviderAuthError` sends the chain to the next provider and cools this one down, a `RequestRejectedError`
(400/422) stops everything because retrying repeats a request-shape bug, a `ContextOverflowError` stops too
but is its own type so the memory layer can prune and ask again, and a `StreamInterruptedError` stops because
the user already saw part of an answer that another try would contradict.
"""

from __future__ import annotations

from collections.abc import Sequence


class LLMError(Exception):
    """Base of every error of `hologram.llm`."""


class LLMConfigError(LLMError):
    """The provider settings cannot work (unknown kind, missing key, duplicate name)."""


class ProviderError(LLMError):
    """A provider failed for this request. `status` is the HTTP status (None: no response)."""

    def __init__(
        self,
        provider: str,
        message: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        self.provider = provider
        self.message = message
        self.status = status
        self.retry_after = retry_after
        super().__init__(str(self))

    def __str__(self) -> str:
        status = f"HTTP {self.status}: " if self.status is not None else ""
        return f"{self.provider}: {status}{self.message}"


class TransientProviderError(ProviderError):
    """Timeouts, connection failures, 408/409/429/5xx, a stream cut before any output: worth retrying."""


class ProviderAuthError(ProviderError):
    """401/402/403: this provider will not serve us for a while; fall back and cool it down."""


class RequestRejectedError(ProviderError):
    """400/422: the request itself is wrong. Never retried, never sent elsewhere."""


class ImagesNotAcceptedError(RequestRejectedError):
    """The request has images and no provider of the chain takes them (DeepSeek's chat API is text only):
    refused before anything is sent, so the vendor's 400 never happens and the message says the fix."""

    def __init__(self, providers: Sequence[tuple[str, str]]) -> None:
        named = ", ".join(f"{name} (model {model})" for name, model in providers)
        noun = "does" if len(providers) == 1 else "do"
        super().__init__(
            providers[0][0] if len(providers) == 1 else "providers",
            f"{named} {noun} not take images: configure a vision-capable provider in settings.toml "
            "[[providers]] (an OpenAI-compatible model that reads images; accepts_images = true), "
            "or send the turn without images",
        )

    def __str__(self) -> str:  # the provider is named in the message already
        return self.message


class ContextOverflowError(RequestRejectedError):
    """The prompt exceeds the model's context window: prune the history and try again."""


class StreamInterruptedError(LLMError):
    """The stream failed after output reached the caller; a retry or fallback would contradict it."""

    def __init__(self, provider: str, cause: BaseException, partial_content: str, partial_reasoning: str) -> None:
        self.provider = provider
        self.cause = cause
        self.partial_content = partial_content
        self.partial_reasoning = partial_reasoning
        super().__init__(
            f"{provider}: stream failed after output reached the caller; not retrying or falling back "
            f"(the partial answer stands): {cause}"
        )


class AllProvidersFailed(LLMError):
    """Every provider of the chain failed; `attempts` holds each one's last error, in order."""

    def __init__(self, attempts: Sequence[tuple[str, LLMError]], total: int) -> None:
        self.attempts = list(attempts)
        last = self.attempts[-1][1] if self.attempts else LLMError("no provider configured")
        tried = "; ".join(_named(name, err) for name, err in self.attempts)
        noun = "provider" if total == 1 else "providers"
        last_name = self.attempts[-1][0] if self.attempts else ""
        super().__init__(f"all {total} {noun} failed, last error: {_named(last_name, last)} (tried {tried})")


def _named(name: str, error: LLMError) -> str:
    """``name: error``, once: a `ProviderError` already names its provider ("tried a: a: HTTP 401" before)."""
    text = str(error)
    return text if not name or text.startswith(f"{name}: ") else f"{name}: {text}"
