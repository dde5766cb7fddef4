"""docs/protocol.md section 9 and `hologram.api.turn` are the same contract: every method and every event type,
with every field of each event, is in the tables, and nothing else is.

Mutation check (done): adding a field to `ToolResult`, or a method constant, without its row turns this red.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from hologram.api import params as params_api
from hologram.api import turn as api

PROTOCOL = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"
ROW = re.compile(r"^\| `([a-z_./]+)` \| (.*) \|$", re.MULTILINE)
COMMON = {"type", "session", "turn", "seq"}


def section() -> str:
    """Section 9 up to the Codex mapping table (whose left column is Codex's names, not ours)."""
    text = PROTOCOL.read_text(encoding="utf-8")
    return text.split("## 9. The turn API", 1)[1].split("### Codex app-server mapping", 1)[0]


def test_every_method_is_documented() -> None:
    constants = {
        v
        for k, v in vars(api).items()
        if k.startswith(("TURN_", "SESSIONS_", "TOOLS_", "MEDIA_")) and isinstance(v, str)
    }
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


def test_the_published_schema_is_the_models() -> None:
    """docs/turn-api.schema.json is generated from `hologram.api.turn` (`make schema`); it names every method's
    params and every event, and validates what the kernel sends and refuses what it would refuse.

    Mutation check (done): a field added to `StartParams` without `make schema` turns the first assertion red."""
    import json

    from jsonschema import Draft202012Validator

    from hologram.api.schema import turn_api_json_schema_text

    published = (PROTOCOL.parent / "turn-api.schema.json").read_text(encoding="utf-8")
    assert published == turn_api_json_schema_text(), "docs/turn-api.schema.json drifted: run `make schema`"
    schema = json.loads(published)
    assert set(schema["methods"]) == set(params_api.METHOD_PARAMS)
    Draft202012Validator.check_schema(schema)
    start = Draft202012Validator({**schema["methods"][api.TURN_START]["params"], "$defs": schema["$defs"]})
    assert start.is_valid({"text": "hi", "scene": "chan:qq/peer:group_1"})
    assert not start.is_valid({"text": "hi", "colour": "red"})
    assert not start.is_valid({"text": ""})
    event = Draft202012Validator({**schema["notifications"][api.TURN_EVENT]["params"], "$defs": schema["$defs"]})
    ended = api.TurnEnded(session="s", turn="t", seq=4, output="ok", steps=1)
    assert event.is_valid(api.wire(ended))
    assert not event.is_valid({**api.wire(ended), "stop_reason": "bored"})
