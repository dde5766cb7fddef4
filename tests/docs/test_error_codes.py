"""docs/protocol.md's error-code table and `hologram.rpc.ErrorCode` are the same list.

Mutation check (done): adding a member to `ErrorCode` without a row, or changing a number in the table,
turns this red.
"""

from __future__ import annotations

import re
from pathlib import Path

from hologram.rpc import ErrorCode, RpcError

PROTOCOL = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"
ROW = re.compile(r"^\|\s*(-?\d+)\s*\|\s*`([A-Z_]+)`\s*\|", re.MULTILINE)


def test_the_documented_table_is_the_enum() -> None:
    documented = {name: int(code) for code, name in ROW.findall(PROTOCOL.read_text(encoding="utf-8"))}
    assert documented == {member.name: member.value for member in ErrorCode}


def test_a_named_code_travels_as_its_number() -> None:
    error = RpcError(ErrorCode.NO_SUCH_SESSION, "there is no session 'x'")
    assert error.to_json() == {"code": 3, "message": "there is no session 'x'"}
    assert type(error.code) is int and error.code == ErrorCode.NO_SUCH_SESSION
    assert str(error) == "[3] there is no session 'x'"
