"""The name a tool of an MCP server has in Hologram: ``mcp_<server>_<tool>``, at most 64 characters, stable.

The vendors accept tool names of 1-64 of ``A-Z a-z 0-9 _ -``; an MCP server may name a tool with dots,
slashes or any length. The rule (docs/channels.md, "MCP"):

- ``mcp_<server>_<tool>`` as it is when it is 64 characters or fewer and uses only those characters;
- else every other character becomes ``_``, the result is cut to 55 characters, and ``_`` and the first 8 hex
  digits of the SHA-256 of the full ``mcp_<server>_<tool>`` (UTF-8) are appended (64 in all).

So a name depends only on the server's name in settings and the tool's name: the same after a restart, on any
machine; and two tools that clean up to the same text (``a.b`` and ``a_b``) still differ by their hash.
"""

from __future__ import annotations

import hashlib
import re

MAX_NAME = 64
PREFIX = "mcp"
HASH_DIGITS = 8
_ALLOWED = re.compile(r"^[A-Za-z0-9_-]+$")
_OTHER = re.compile(r"[^A-Za-z0-9_-]")


def tool_name(server: str, tool: str) -> str:
    """The Hologram name of ``tool`` of the MCP server configured as ``server`` (module docstring)."""
    full = f"{PREFIX}_{server}_{tool}"
    if len(full) <= MAX_NAME and _ALLOWED.match(full):
        return full
    digest = hashlib.sha256(full.encode("utf-8")).hexdigest()[:HASH_DIGITS]
    return f"{_OTHER.sub('_', full)[: MAX_NAME - HASH_DIGITS - 1]}_{digest}"
