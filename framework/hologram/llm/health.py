"""Provider health: which providers of the chain are worth asking now, and why not the others.

A provider whose retries were spent on 5xx, timeouts or dropped connections is probably down; asking it
again on the next request costs every turn the whole retry ladder (measured in issue 10: 12.4 s per
`hologram ask` instead of 0.4-0.7 s with a dead first provider, turn after turn). So after such a failure
the provider **cools down** — 30 s, doubling with each further failure up to a cap, as the original did —
and requests go straight to the next one. When the cooldown is over the provider is **half-open**: one
request probes it with a single attempt (no retry ladder); success makes it healthy again, failure cools it
down for twice as long. An auth failure (401/402/403) cools it down for a fixed, longer time: retrying a
wrong key sooner does not help.

A provider is skipped only while another one could serve: the last provider available is always asked,
and a chain of one is never skipped at all — it is the only chance.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

State = Literal["healthy", "cooling", "half-open"]

DEFAULT_COOLDOWN_S = 30.0
DEFAULT_MAX_COOLDOWN_S = 600.0
DEFAULT_AUTH_COOLDOWN_S = 300.0


@dataclass
class ProviderHealth:
    """What the chain knows about one provider; `status` reports it (`hologram status`)."""

    name: str
    failures: int = 0  # consecutive cooldowns; 0 while healthy
    cooling_until: float = 0.0  # on the chain's clock
    last_error: str | None = None
    last_error_at: float | None = None  # wall time, for people
    probing: bool = False  # a half-open probe is in flight

    def state(self, now: float) -> State:
        if self.failures == 0:
            return "healthy"
        return "cooling" if now < self.cooling_until else "half-open"


class HealthBook:
    """Health of every provider of one chain. Not thread-safe: the chain lives on one event loop."""

    def __init__(
        self,
        names: list[str],
        *,
        clock: Callable[[], float] = time.monotonic,
        cooldown_s: float = DEFAULT_COOLDOWN_S,
        max_cooldown_s: float = DEFAULT_MAX_COOLDOWN_S,
        auth_cooldown_s: float = DEFAULT_AUTH_COOLDOWN_S,
    ) -> None:
        self._clock = clock
        self.cooldown_s = cooldown_s
        self.max_cooldown_s = max(max_cooldown_s, cooldown_s)
        self.auth_cooldown_s = auth_cooldown_s
        self.providers = {name: ProviderHealth(name) for name in names}

    def plan(self) -> list[tuple[str, bool]]:
        """The order to try providers for one request: (name, probe) pairs. `probe` means a single attempt
        (a half-open provider, or a last resort while every provider cools down); a healthy provider gets
        its full retry ladder. Cooling providers are left out while any other can be asked; a provider
        already being probed by another request is left out the same way."""
        now = self._clock()
        names = list(self.providers)
        if len(names) == 1:
            return [(names[0], False)]
        plan = []
        for name in names:
            health = self.providers[name]
            state = health.state(now)
            if state == "healthy":
                plan.append((name, False))
            elif state == "half-open" and not health.probing:
                plan.append((name, True))
        if not plan:  # everything cools down: each one gets a single try rather than none
            plan = [(name, True) for name in names]
        return plan

    def begin_probe(self, name: str) -> None:
        self.providers[name].probing = True

    def succeeded(self, name: str) -> None:
        health = self.providers[name]
        health.failures, health.cooling_until, health.probing = 0, 0.0, False

    def failed(self, name: str, error: BaseException, *, auth: bool = False) -> float:
        """Cool `name` down after spent retries (or an auth failure); returns the cooldown in seconds."""
        health = self.providers[name]
        health.probing = False
        health.failures += 1
        if auth:
            seconds = self.auth_cooldown_s
        else:
            seconds = min(self.cooldown_s * 2 ** (health.failures - 1), self.max_cooldown_s)
        health.cooling_until = self._clock() + seconds
        health.last_error, health.last_error_at = str(error), time.time()
        return seconds

    def released(self, name: str) -> None:
        """A probe ended without a verdict (the request was cancelled, or rejected as malformed)."""
        self.providers[name].probing = False

    def cooling_down(self) -> dict[str, float]:
        now = self._clock()
        return {n: h.cooling_until - now for n, h in self.providers.items() if h.failures and h.cooling_until > now}

    def status(self) -> list[dict[str, Any]]:
        now = self._clock()
        return [
            {
                "name": h.name,
                "state": h.state(now),
                "cooldown_left_s": round(max(0.0, h.cooling_until - now), 1) if h.failures else 0.0,
                "failures": h.failures,
                "last_error": h.last_error,
                "last_error_at": h.last_error_at,
            }
            for h in self.providers.values()
        ]
