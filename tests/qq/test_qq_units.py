"""The qq plugin's parts on their own: OneBot v11 messages in both formats, Markdown made plain and split, the rate
limit by count, the message ids kept across a restart, the configuration's one-line errors.

Mutation checks (done): `unescape` not decoding ``&#44;`` turns ``test_cq_codes_and_arrays_read_the_same`` red;
`SeenIds` not reading its file at start turns ``test_seen_ids_survive_a_restart_and_stay_bounded`` red.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from hologram_plugins.qq.config import QqConfig
from hologram_plugins.qq.limits import RateLimit, Verdict
from hologram_plugins.qq.onebot import read_message, segments_of
from hologram_plugins.qq.seen import SeenIds
from hologram_plugins.qq.text import plain_text, split

BOT = 10000


def test_cq_codes_and_arrays_read_the_same() -> None:
    cq = "[CQ:reply,id=77][CQ:at,qq=10000] hi &amp; [CQ:face,id=14][CQ:image,file=a.jpg,url=https://i.example/a?x=1&amp;y=2]&#91;x&#93;"
    array = [
        {"type": "reply", "data": {"id": "77"}},
        {"type": "at", "data": {"qq": "10000"}},
        {"type": "text", "data": {"text": " hi & "}},
        {"type": "face", "data": {"id": "14"}},
        {"type": "image", "data": {"file": "a.jpg", "url": "https://i.example/a?x=1&y=2"}},
        {"type": "text", "data": {"text": "[x]"}},
    ]
    assert segments_of(cq) == array
    for message in (cq, array):
        event = {"message_type": "group", "group_id": 1, "user_id": 5, "message_id": 9, "message": message,
                 "sender": {"nickname": "amy", "card": ""}}  # fmt: skip
        read = read_message(event, BOT)
        assert read is not None
        assert read.text == "hi & [face 14][image: https://i.example/a?x=1&y=2][x]"
        assert read.mentioned and read.reply_to == "77" and read.name == "amy" and read.key == "group:1:9"
    assert segments_of("[CQ:at,qq=1,name=a&#44;b]")[0]["data"] == {"qq": "1", "name": "a,b"}


def test_forwarded_messages_are_text() -> None:
    forward = {
        "type": "forward",
        "data": {
            "id": "f1",
            "content": [
                {"sender": {"user_id": 1, "nickname": "ann"}, "message": [{"type": "text", "data": {"text": "one"}}]},
                {"sender": {"user_id": 2, "nickname": "ben"}, "message": "two[CQ:face,id=1]"},
            ],
        },
    }
    event = {"message_type": "private", "user_id": 5, "message_id": 3, "message": [forward]}
    read = read_message(event, BOT)
    assert read is not None and read.text == "[forwarded chat record:\n  ann: one\n  ben: two[face 1]]"
    bare = read_message({**event, "message": [{"type": "forward", "data": {"id": "f2"}}]}, BOT)
    assert bare is not None and bare.text == "[forwarded chat record]"
    assert read_message({"message_type": "group", "user_id": "x", "message_id": 1}, BOT) is None  # no group id


def test_markdown_becomes_plain_text_and_long_answers_are_split() -> None:
    md = "# Title\n\nSome **bold** and `a*b` with [a link](https://x.org).\n\n- one\n- two\n\n1. first\n\n```py\nx = 1\n```"
    assert (
        plain_text(md) == "Title\n\nSome bold and a*b with a link (https://x.org).\n\n• one\n• two\n\n1. first\n\nx = 1"
    )
    text = "\n\n".join(f"paragraph {i} " + "word " * 30 for i in range(20))
    pieces = split(text, 400)
    assert all(len(p) <= 400 for p in pieces) and len(pieces) > 5
    assert " ".join(" ".join(pieces).split()) == " ".join(text.split())  # nothing lost
    assert split("x" * 1000, 300) == ["x" * 300, "x" * 300, "x" * 300, "x" * 100]


def test_the_rate_limit_counts() -> None:
    now = [0.0]
    limit = RateLimit(2, 60, clock=lambda: now[0])
    assert [limit.check("g") for _ in range(5)] == [
        Verdict.ALLOWED, Verdict.ALLOWED, Verdict.NOTICE, Verdict.SILENT, Verdict.SILENT,
    ]  # fmt: skip
    now[0] = 61.0  # the window moved on: allowed again, and a later excess is told once more
    assert [limit.check("g") for _ in range(4)] == [Verdict.ALLOWED, Verdict.ALLOWED, Verdict.NOTICE, Verdict.SILENT]
    assert limit.check("other") is Verdict.ALLOWED


def test_seen_ids_survive_a_restart_and_stay_bounded(tmp_path: Path) -> None:
    path = tmp_path / "seen.txt"
    seen = SeenIds(path, keep=100)
    assert seen.add("a") and not seen.add("a")
    again = SeenIds(path, keep=100)
    assert "a" in again and not again.add("a")
    for i in range(1000):
        again.add(f"m{i}")
    assert len(again) == 100 and len(path.read_text().splitlines()) < 200
    assert "m999" in SeenIds(path, keep=100) and "m0" not in SeenIds(path, keep=100)


@pytest.mark.parametrize(
    ("config", "says"),
    [
        ({"listen": "127.0.0.1:6199"}, "access_token is required"),
        ({"listen": "6199", "access_token": "t"}, "is not HOST:PORT"),
        ({"connect": "http://x", "access_token": "t"}, "ws://"),
        ({"listen": "127.0.0.1:1", "connect": "ws://x", "access_token": "t"}, "not both"),
    ],
)
def test_the_configuration_says_what_is_wrong(config: dict[str, str], says: str) -> None:
    with pytest.raises(ValidationError) as caught:
        QqConfig.model_validate(config)
    assert says in str(caught.value)


def test_unconfigured_is_valid() -> None:
    assert not QqConfig().configured
