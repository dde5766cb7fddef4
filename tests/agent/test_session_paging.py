"""``sessions/list`` and ``sessions/read`` pages (issue 35), against a real `SessionStore` through `TurnService`.

Mutation checks (done): in `SessionStore.list_sessions`, ``updated > ?`` for ``updated < ?`` in the cursor's
HAVING turns ``test_list_pages_cover_every_session_once`` red (the second page repeats the first); dropping the
``+ 1`` of ``list_page``'s look-ahead turns it red too (``next_cursor`` is missing after a full page); in
`read_page`, keeping the extra (oldest) row turns ``test_read_pages_go_backwards_without_overlap`` red.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from hologram.agent import Agent, ToolRegistry
from hologram.agent.paging import decode_cursor, encode_cursor
from hologram.agent.service import TurnService
from hologram.rpc import RpcError
from hologram.rpc.errors import INVALID_PARAMS
from hologram.sessions import SessionStore
from hologram.stages import StageDispatcher


@pytest.fixture
def service(tmp_path: Path) -> TurnService:
    store = SessionStore(tmp_path / "sessions.db")
    base = time.time() + 10_000  # after the sessions' creation: each one's `updated` is its newest event's
    for i in range(7):  # s0 … s6, s6 the most recently active; s2 and s3 tie on their newest event's time
        sid = store.create_session("cli", f"s{i}")
        ts = base + (2 if i == 3 else i)
        store.append(sid, "input", {"text": f"hello {i}"}, turn="t", channel="cli", ts=ts)
    for n in range(12):  # a long session: 12 more events in s6
        store.append("s6", "input", {"text": f"more {n}"}, turn=f"t{n}", channel="cli", ts=base + 1_000 + n)
    store.commit()
    agent = Agent(llm=None, store=store, tools=ToolRegistry(), stages=StageDispatcher())
    return TurnService(agent)


def call(service: TurnService, method: str, params: dict[str, Any]) -> Any:
    fn = service.list_sessions if method == "list" else service.read_session
    return asyncio.run(fn(params))


def test_without_paging_params_the_answer_is_version_1s(service: TurnService) -> None:
    answer = call(service, "list", {})
    assert [s["id"] for s in answer["sessions"]] == ["s6", "s5", "s4", "s2", "s3", "s1", "s0"]  # ties by id
    assert set(answer["sessions"][0]) == {"id", "title", "created", "updated", "channel", "events"}
    assert answer["next_cursor"] is None
    read = call(service, "read", {"session": "s6"})
    assert len(read["events"]) == 13 and len(read["messages"]) == 13 and read["next_before"] is None


def test_list_pages_cover_every_session_once(service: TurnService) -> None:
    seen: list[str] = []
    cursor = None
    pages = 0
    while pages < 10:  # bounded: a cursor that does not advance fails the test instead of hanging it
        params: dict[str, Any] = {"limit": 3} if cursor is None else {"limit": 3, "cursor": cursor}
        answer = call(service, "list", params)
        pages += 1
        assert len(answer["sessions"]) <= 3
        seen += [s["id"] for s in answer["sessions"]]
        cursor = answer["next_cursor"]
        if cursor is None:
            break
    assert pages == 3  # 3 + 3 + 1: the pages were really cut, not one answer of everything
    assert seen == ["s6", "s5", "s4", "s2", "s3", "s1", "s0"]


def test_a_full_last_page_says_there_is_no_next(service: TurnService) -> None:
    first = call(service, "list", {"limit": 7})
    assert len(first["sessions"]) == 7 and first["next_cursor"] is None
    assert call(service, "list", {"limit": 6})["next_cursor"] is not None


def test_a_cursor_alone_pages_with_the_default_limit(service: TurnService) -> None:
    first = call(service, "list", {"limit": 2})
    rest = call(service, "list", {"cursor": first["next_cursor"]})
    assert [s["id"] for s in rest["sessions"]] == ["s4", "s2", "s3", "s1", "s0"] and rest["next_cursor"] is None


def test_a_cursor_round_trips_and_a_forged_one_is_refused(service: TurnService) -> None:
    row = {"updated": 1002.5, "id": "s2"}
    assert decode_cursor(encode_cursor(row)) == (1002.5, "s2")
    for bad in ("not-base64!", encode_cursor({"updated": "x", "id": 3}), "W10"):
        with pytest.raises(RpcError) as exc:
            call(service, "list", {"cursor": bad})
        assert exc.value.code == INVALID_PARAMS and "cursor" in exc.value.message


@pytest.mark.parametrize("params", [{"limit": 0}, {"limit": 501}, {"cursor": ""}, {"offset": 3}])
def test_bad_list_params_are_refused(service: TurnService, params: dict[str, Any]) -> None:
    with pytest.raises(RpcError) as exc:
        call(service, "list", params)
    assert exc.value.code == INVALID_PARAMS and exc.value.message.startswith("sessions/list: ")


def test_read_pages_go_backwards_without_overlap(service: TurnService) -> None:
    page = call(service, "read", {"session": "s6", "limit": 5})
    seqs = [e["seq"] for e in page["events"]]
    assert len(seqs) == 5 and seqs == sorted(seqs)  # the newest five, oldest first
    assert [e["data"]["text"] for e in page["events"]][-1] == "more 11"
    assert len(page["messages"]) == 5 and page["next_before"] == seqs[0]
    collected = seqs
    while page["next_before"] is not None:
        page = call(service, "read", {"session": "s6", "limit": 5, "before": page["next_before"]})
        collected = [e["seq"] for e in page["events"]] + collected
    assert len(collected) == 13 and collected == sorted(set(collected))
    assert [e["seq"] for e in call(service, "read", {"session": "s6"})["events"]] == collected


def test_read_params_are_checked(service: TurnService) -> None:
    for params in ({"session": "s6", "limit": 0}, {"session": "s6", "before": 0}, {"session": "s6", "after": 1}):
        with pytest.raises(RpcError) as exc:
            call(service, "read", params)
        assert exc.value.code == INVALID_PARAMS and exc.value.message.startswith("sessions/read: ")
