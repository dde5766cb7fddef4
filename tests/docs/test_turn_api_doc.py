"""docs/protocol.md section 9 and `hologram.turn_api` are the same contract: every method and every event type,
with every field of each event, is in the tables, and nothing else is.

Mutation check (done): adding a field to `ToolResult`, or a method constant, without its row turns this red.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from hologram import turn_api as api

PROTOCOL = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"
ROW = re.compile(r"^\| `([a-z_./]+)` \| (.*) \|$", re.MULTILINE)
COMMON = {"type", "session", "turn", "seq"}


def section() -> str:
    text = PROTOCOL.read_text(encoding="utf-8")
    return text.split("## 9. The turn API", 1)[1]


def test_every_method_is_documented() -> None:
    constants = {v for k, v in vars(api).items() if k.startswith(("TURN_", "SESSIONS_")) and isinstance(v, str)}
    constants -= {api.TURN_EVENT}  # the notification, described in the prose
    documented = {name for name, _ in ROW.findall(section()) if "/" in name}
    assert documented == constants


def test_every_event_is_documented_with_its_fields() -> None:
    rows = {name: cells for name, cells in ROW.findall(section()) if "." in name}
    assert set(rows) == set(api.EVENT_TYPES)
    for name, cls in api.EVENT_TYPES.items():
        fields = {f.name for f in dataclasses.fields(cls)} - COMMON
        named = set(re.findall(r"`([a-z_]+)`", rows[name].split("(")[0] + " " + rows[name]))
        assert fields <= named, (name, fields - named)
