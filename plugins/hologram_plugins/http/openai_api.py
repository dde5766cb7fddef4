"""The OpenAI-compatible API (filled in below the skeleton)."""

from __future__ import annotations

from typing import Any

ROUTES: list[Any] = []
