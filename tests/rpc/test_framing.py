"""Message classification and line splitting: the rules a peer in any language must follow."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hologram.rpc import INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR
from hologram.rpc.framing import LineSplitter, Malformed, Request, Response, encode, parse_line


@pytest.mark.parametrize(
    ("line", "code", "reply_id"),
    [
        (b"garbage", PARSE_ERROR, None),
        (b'{"jsonrpc":"2.0","id":1,"meth', PARSE_ERROR, None),
        (b"\xff\xfe{}", PARSE_ERROR, None),
        (b"[" * 100_000, PARSE_ERROR, None),  # RecursionError must not escape
        (b'{"jsonrpc":"1.0","method":"x","id":5}', INVALID_REQUEST, 5),
        (b'{"method":"x","id":"a"}', INVALID_REQUEST, "a"),
        (b'[{"jsonrpc":"2.0","method":"x"}]', INVALID_REQUEST, None),
        (b"42", INVALID_REQUEST, None),
        (b'{"jsonrpc":"2.0","method":3,"id":7}', INVALID_REQUEST, 7),
        (b'{"jsonrpc":"2.0","method":"x","id":true}', INVALID_REQUEST, None),
        (b'{"jsonrpc":"2.0","method":"x","id":1,"params":"s"}', INVALID_REQUEST, 1),
        (b'{"jsonrpc":"2.0","id":1}', INVALID_REQUEST, 1),
    ],
)
def test_malformed_requests_get_the_jsonrpc_error(line: bytes, code: int, reply_id: object) -> None:
    message = parse_line(line)
    assert isinstance(message, Malformed)
    assert message.reply is not None and message.reply.code == code
    assert message.id == reply_id


@pytest.mark.parametrize(
    "line",
    [
        b'{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":"m"}}',
        b'{"jsonrpc":"2.0","result":1}',
        b'{"jsonrpc":"2.0","id":1,"error":{"code":"x","message":"m"}}',
        b'{"jsonrpc":"1.0","id":1,"result":1}',
    ],
)
def test_bad_responses_are_never_answered(line: bytes) -> None:
    """Answering a broken response could make two peers ping-pong errors forever."""
    message = parse_line(line)
    assert isinstance(message, Malformed)
    assert message.reply is None


def test_valid_messages_are_classified() -> None:
    req = parse_line(b'{"jsonrpc":"2.0","id":"k","method":"m","params":[1]}')
    assert req == Request("m", [1], "k", is_notification=False)
    note = parse_line(b'{"jsonrpc":"2.0","method":"m"}\r')
    assert note == Request("m", None, None, is_notification=True)
    ok = parse_line(b'{"jsonrpc":"2.0","id":3,"result":null}')
    assert isinstance(ok, Response) and ok.id == 3 and ok.result is None and ok.error is None
    err = parse_line(b'{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"no","data":[1]}}')
    assert isinstance(err, Response) and err.error is not None
    assert (err.error.code, err.error.message, err.error.data) == (METHOD_NOT_FOUND, "no", [1])
    assert parse_line(b"   ") is None


def test_encode_is_one_line_even_with_newlines_in_strings() -> None:
    line = encode({"jsonrpc": "2.0", "method": "m", "params": {"text": "a\nb\r\nc\u2028"}})
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert json.loads(line)["params"]["text"] == "a\nb\r\nc\u2028"


@given(
    lines=st.lists(st.binary(max_size=50).map(lambda b: b.replace(b"\n", b"")), max_size=30),
    cuts=st.lists(st.integers(min_value=0, max_value=2000), max_size=20),
)
def test_splitter_yields_the_same_lines_however_chunks_are_cut(lines: list[bytes], cuts: list[int]) -> None:
    stream = b"".join(line + b"\n" for line in lines)
    bounds = sorted({0, len(stream), *(c for c in cuts if c < len(stream))})
    splitter = LineSplitter(1000, lambda head: pytest.fail("nothing is oversized"))
    out: list[bytes] = []
    for a, b in itertools.pairwise(bounds):
        out += [bytes(x) for x in splitter.feed(stream[a:b])]
    assert out == lines
    assert splitter.pending == 0


def test_splitter_drops_oversized_lines_and_resyncs() -> None:
    heads: list[bytes] = []
    splitter = LineSplitter(100, heads.append)
    assert splitter.feed(b"ok1\n" + b"x" * 60) == [b"ok1"]
    assert splitter.feed(b"y" * 60) == []  # 120 bytes, no newline: over the limit, discarding starts
    assert len(heads) == 1 and heads[0].startswith(b"x" * 60)
    assert splitter.pending == 0  # memory is released, not accumulated
    assert splitter.feed(b"z" * 500) == []
    assert splitter.feed(b"zz\nok2\n") == [b"ok2"]
    # an oversized line that arrives complete in one chunk is dropped too
    assert splitter.feed(b"q" * 150 + b"\nok3\n") == [b"ok3"]
    assert len(heads) == 2
