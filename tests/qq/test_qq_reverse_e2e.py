"""The qq channel through `hologram up`, NapCat's reverse WebSocket (the stand-in dials the plugin), the strict mock
as the model (issue 38, "Done means"). Each test waits for what it checks (a sent action, a stored event, a status
line); none sleeps.

Mutation checks (done, each red): `Channel._addressed` answering every message turns
``test_chatter_is_recorded_without_a_model_call_and_used_when_asked`` red (the mock is asked for chatter);
`Channel.on_event` not consulting `SeenIds` turns ``test_killed_mid_turn_reconnects_and_answers_once`` red (the
redelivered mention starts a second turn); `Link._check` accepting any token turns
``test_a_wrong_or_missing_token_is_refused`` red; the `RateLimit` check always allowing turns
``test_a_flood_is_rate_limited_and_the_kernel_stays_responsive`` red; `Channel._send` without the reply segment
turns ``test_a_mention_is_answered_once_quoting_it`` red.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from mock_llm import MockLLM
from tests.kit.wait import wait_until

from .kernel import (
    ADMIN,
    ALICE,
    APPROVAL_GROUP,
    BOB,
    BOT,
    CAROL,
    FLOOD_GROUP,
    GROUP,
    GROUPS,
    OTHER_GROUP,
    STRANGER,
    TOKEN,
    QQKernel,
    free_port,
)
from .napcat import FakeNapCat, at, group_message, private_message, text

pytestmark = pytest.mark.slow
IDS = iter(range(5000, 10**9))
OWN_GROUPS = iter(GROUPS)


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory, mock: MockLLM) -> Iterator[tuple[QQKernel, FakeNapCat, str]]:
    port = free_port()
    kernel = QQKernel(tmp_path_factory.mktemp("qq-reverse"), mock, f'listen = "127.0.0.1:{port}"')
    kernel.start()
    napcat = FakeNapCat(self_id=BOT, token=TOKEN)
    url = f"ws://127.0.0.1:{port}/onebot/v11/ws"
    try:
        napcat.dial(url)
        napcat.wait_connected()
        kernel.wait_status(f"bot {BOT}")
        yield kernel, napcat, url
    finally:
        napcat.close()
        kernel.stop()


@pytest.fixture
def kernel(setup: tuple[QQKernel, FakeNapCat, str], mock: MockLLM) -> QQKernel:
    mock.reset()
    setup[0].reset_gate()
    return setup[0]


@pytest.fixture
def napcat(setup: tuple[QQKernel, FakeNapCat, str]) -> FakeNapCat:
    setup[1].actions.clear()
    return setup[1]


def mention(group: int, user: int, words: str, **kw: Any) -> tuple[dict[str, Any], int]:
    mid = next(IDS)
    return group_message(group, user, [at(BOT), text(" " + words)], message_id=mid, **kw), mid


def chatter(group: int, user: int, words: str, **kw: Any) -> dict[str, Any]:
    return group_message(group, user, [text(words)], message_id=next(IDS), **kw)


def answers(napcat: FakeNapCat, group: int) -> list[dict[str, Any]]:
    return [a for a in napcat.sent("send_group_msg") if a["params"]["group_id"] == group]


def said(action: dict[str, Any]) -> str:
    return "".join(s["data"].get("text", "") for s in action["params"]["message"] if s["type"] == "text")


def asked(mock: MockLLM, needle: str) -> list[Any]:
    return [r for r in mock.requests if needle in json.dumps(r.body["messages"], ensure_ascii=False)]


def test_a_mention_is_answered_once_quoting_it(kernel: QQKernel, napcat: FakeNapCat, mock: MockLLM) -> None:
    mock.script([{"reasoning_content": "secret thoughts", "content": "**Hello** Alice, see [the docs](https://x.org)"}])
    event, mid = mention(GROUP, ALICE, "hi there", name="alice")
    napcat.post(event)
    [sent] = napcat.wait_sent(lambda s: answers(napcat, GROUP), "the answer to the group")
    message = sent["params"]["message"]
    assert message[0] == {"type": "reply", "data": {"id": str(mid)}}
    assert message[1] == {"type": "at", "data": {"qq": str(ALICE)}}
    assert said(sent).strip() == "Hello Alice, see the docs (https://x.org)"  # Markdown as plain text
    assert "secret thoughts" not in json.dumps(napcat.sent())  # reasoning never reaches QQ
    [request] = mock.requests
    users = [m for m in request.body["messages"] if m["role"] == "user"]
    assert users[-1]["content"] == "alice (10001): hi there"  # user content, never system
    offered = {t["function"]["name"] for t in request.body.get("tools", [])}
    assert "shell_run" not in offered and "code_run" not in offered and "deploy" not in offered
    kernel_events = kernel.session(f"qq:group:{GROUP}")
    first = next(e for e in kernel_events if e["kind"] == "input" and "hi there" in e["data"]["text"])
    assert first["channel"] == "qq" and first["data"]["partner"] == str(ALICE)
    assert len(answers(napcat, GROUP)) == 1 and mock.rejections == []


def test_chatter_is_recorded_without_a_model_call_and_used_when_asked(
    kernel: QQKernel, napcat: FakeNapCat, mock: MockLLM
) -> None:
    mock.script([{"content": "Bob's cat is called Mochi."}])
    napcat.post(chatter(GROUP, BOT, "the bot's own words"))  # its own message (reportSelfMessage): never handled
    napcat.post({**chatter(GROUP, ALICE, "sent by the bot elsewhere"), "post_type": "message_sent"})
    napcat.post(chatter(GROUP, BOB, "my cat is called Mochi", name="bob"))
    # the CQ-code string format too, with a face and an image (a placeholder with its URL, not downloaded)
    cq = "look[CQ:face,id=14][CQ:image,file=a.jpg,url=https://img.example/a.jpg&amp;x=1] &#91;nice&#93;"
    napcat.post(group_message(GROUP, CAROL, cq, message_id=next(IDS), name="carol"))
    wait_until(
        lambda: kernel.inputs(f"qq:group:{GROUP}"),
        accept=lambda inputs: any("[image: https://img.example/a.jpg&x=1]" in e["data"]["text"] for e in inputs),
        timeout=60, what="the chatter stored in the group's session",
    )  # fmt: skip
    assert mock.requests == []  # recorded, nobody asked the model
    stored = [e["data"] for e in kernel.inputs(f"qq:group:{GROUP}")[-2:]]
    assert stored[0]["text"] == "bob (10002): my cat is called Mochi" and stored[0]["appended"] is True
    assert stored[1]["text"] == "carol (10003): look[face 14][image: https://img.example/a.jpg&x=1] [nice]"
    assert napcat.sent("send_group_msg") == []
    assert not [e for e in kernel.inputs(f"qq:group:{GROUP}") if "bot" in e["data"]["text"]]

    event, _ = mention(GROUP, ALICE, "what is Bob's cat called?")
    napcat.post(event)
    napcat.wait_sent(lambda s: answers(napcat, GROUP), "the answer")
    [request] = mock.requests
    users = [m["content"] for m in request.body["messages"] if m["role"] == "user"]
    assert "bob (10002): my cat is called Mochi" in users  # the chatter, as user content
    assert users[-1] == "user10001 (10001): what is Bob's cat called?"


def test_a_keyword_or_a_reply_to_the_bot_addresses_it(kernel: QQKernel, napcat: FakeNapCat, mock: MockLLM) -> None:
    group = next(OWN_GROUPS)
    mock.script([{"content": "first"}, {"content": "second"}])
    napcat.post(chatter(group, BOB, "hey Hologram, a question"))
    [first] = napcat.wait_sent(lambda s: answers(napcat, group), "the keyword's answer")
    quoting = [{"type": "reply", "data": {"id": str(first["message_id"])}}, text("and a follow-up")]
    napcat.post(group_message(group, CAROL, quoting, message_id=next(IDS)))
    napcat.wait_sent(lambda s: answers(napcat, group), "the reply's answer", count=2)
    assert [said(a).strip() for a in answers(napcat, group)] == ["first", "second"]
    assert len(mock.requests) == 2


def test_private_chats_from_allowed_users_only(kernel: QQKernel, napcat: FakeNapCat, mock: MockLLM) -> None:
    mock.script([{"content": "hello in private"}])
    napcat.post(private_message(STRANGER, "let me in", message_id=next(IDS)))
    napcat.post(private_message(ALICE, "hi privately", message_id=next(IDS)))
    [sent] = napcat.wait_sent(lambda s: [a for a in s if a["action"] == "send_private_msg"], "the private answer")
    assert sent["params"]["user_id"] == ALICE and said(sent) == "hello in private"
    assert len(mock.requests) == 1 and not asked(mock, "let me in")
    assert kernel.session(f"qq:private:{STRANGER}") == []
    assert kernel.inputs(f"qq:private:{ALICE}")[0]["data"]["partner"] == str(ALICE)


def test_a_shell_call_asked_for_in_a_group_never_runs(kernel: QQKernel, napcat: FakeNapCat, mock: MockLLM) -> None:
    group = next(OWN_GROUPS)
    call = {"id": "s1", "name": "shell_run", "arguments": json.dumps({"command": "touch mark-qq-shell"})}
    mock.script([{"tool_calls": [call]}], default={"content": "I cannot run that."})
    event, _ = mention(group, BOB, "run touch mark-qq-shell please")
    napcat.post(event)
    napcat.wait_sent(lambda s: answers(napcat, group), "the answer")
    results = [e for e in kernel.session(f"qq:group:{group}") if e["kind"] == "tool_result"]
    assert (
        results[-1]["data"]["status"] == "denied" and "not allowed in turns from qq" in results[-1]["data"]["content"]
    )
    assert kernel.received() == []  # the shell plugin never received it: no mark


def test_the_admin_approval_round_trip(kernel: QQKernel, napcat: FakeNapCat, mock: MockLLM) -> None:
    """In a group whose policy allows the approval-needing ``deploy``: the request goes to the admin in private,
    the admin's /approve runs the call once, and the answer goes to the group."""
    call = {"id": "d1", "name": "deploy", "arguments": json.dumps({"target": "staging"})}
    mock.script([{"tool_calls": [call]}, {"content": "deployed to staging"}])
    event, _ = mention(APPROVAL_GROUP, BOB, "deploy staging")
    napcat.post(event)
    [ask] = napcat.wait_sent(
        lambda s: [a for a in s if a["action"] == "send_private_msg" and a["params"]["user_id"] == ADMIN],
        "the approval request to the admin",
    )
    words = said(ask)
    assert "deploy" in words and "staging" in words and f"group {APPROVAL_GROUP}" in words, words
    approval = words.split("(", 1)[1].split(")", 1)[0]
    assert kernel.received() == []  # nothing runs before the answer
    napcat.post(private_message(STRANGER, f"/approve {approval}", message_id=next(IDS)))  # not an admin: ignored
    napcat.post(private_message(ADMIN, f"/approve {approval}", message_id=next(IDS)))
    [answer] = napcat.wait_sent(lambda s: answers(napcat, APPROVAL_GROUP), "the answer to the group")
    assert said(answer).strip() == "deployed to staging"
    assert kernel.received() == ["staging"]  # the recorder received the call exactly once
    result = [e for e in kernel.session(f"qq:group:{APPROVAL_GROUP}") if e["kind"] == "tool_result"][-1]
    assert result["data"]["approval"]["approved"] is True and "QQ admin" in result["data"]["approval"]["reason"]


def test_a_wrong_or_missing_token_is_refused(setup: tuple[QQKernel, FakeNapCat, str], napcat: FakeNapCat) -> None:
    kernel, _, url = setup
    for token in ("wrong-token", ""):
        intruder = FakeNapCat(self_id=4242, token=token)
        try:
            intruder.dial(url, token=token, reconnect_s=0.05)
            wait_until(lambda i=intruder: i.refusals, timeout=30, what="the handshake refused")  # type: ignore[misc]
            assert intruder.refusals[0] == 401 and intruder.connections == 0
        finally:
            intruder.close()
    assert "bot 10000" in kernel.plugin()["status"]  # the real connection is untouched


def test_malformed_json_is_logged_and_the_connection_stays(kernel: QQKernel, napcat: FakeNapCat, mock: MockLLM) -> None:
    group = next(OWN_GROUPS)
    mock.script([{"content": "still here"}])
    napcat.post_raw("{this is not json")
    napcat.post_raw("[1, 2, 3]")
    event, _ = mention(group, ALICE, "are you still there?")
    napcat.post(event)
    [sent] = napcat.wait_sent(lambda s: answers(napcat, group), "the answer after the garbage")
    assert said(sent).strip() == "still here"
    logs = "\n".join(p.read_text(errors="replace") for p in (kernel.data / "logs").rglob("*.log*"))
    assert "not a JSON object" in logs and "{this is not json" in logs


def test_a_failed_action_is_logged_once_and_not_repeated(kernel: QQKernel, napcat: FakeNapCat, mock: MockLLM) -> None:
    """NapCat answers a send with a retcode: logged (one line), not sent again (it may have arrived); the next
    answer goes out as usual."""
    group = next(OWN_GROUPS)
    mock.script([{"content": "lost answer"}, {"content": "next answer"}])
    napcat.fail_next("send_group_msg", 1200)
    first, _ = mention(group, CAROL, "first question")
    napcat.post(first)
    napcat.wait_sent(lambda s: answers(napcat, group), "the failed send")
    second, _ = mention(group, CAROL, "second question")
    napcat.post(second)
    sent = napcat.wait_sent(lambda s: answers(napcat, group), "the next answer", count=2)
    assert [said(a).strip() for a in sent] == ["lost answer", "next answer"]  # the failed one was not repeated
    logs = "\n".join(p.read_text(errors="replace") for p in (kernel.data / "logs").rglob("*.log*"))
    assert logs.count("send_group_msg failed: retcode 1200") == 1, logs[-2000:]


def test_two_groups_interleaved_keep_separate_sessions(kernel: QQKernel, napcat: FakeNapCat, mock: MockLLM) -> None:
    for i in range(3):
        napcat.post(chatter(GROUP, BOB, f"group one line {i}"))
        napcat.post(chatter(OTHER_GROUP, CAROL, f"group two line {i}"))
    wait_until(
        lambda: kernel.inputs(f"qq:group:{OTHER_GROUP}"), accept=lambda e: len(e) >= 3, timeout=60,
        what="the second group's messages",
    )  # fmt: skip
    wait_until(
        lambda: [e for e in kernel.inputs(f"qq:group:{GROUP}") if "group one line 2" in e["data"]["text"]],
        timeout=60, what="the first group's last message",
    )  # fmt: skip
    one = [e["data"]["text"] for e in kernel.inputs(f"qq:group:{GROUP}") if "line" in e["data"]["text"]]
    two = [e["data"]["text"] for e in kernel.inputs(f"qq:group:{OTHER_GROUP}")]
    assert one[-3:] == [f"user10002 (10002): group one line {i}" for i in range(3)]
    assert two == [f"user10003 (10003): group two line {i}" for i in range(3)]


def test_killed_mid_turn_reconnects_and_answers_once(
    setup: tuple[QQKernel, FakeNapCat, str], kernel: QQKernel, napcat: FakeNapCat, mock: MockLLM
) -> None:
    """The stand-in dies while the turn is in a tool call; the answer is written while it is away; it comes back
    and sends the same event again: one turn, one answer, delivered after the reconnect."""
    group = next(OWN_GROUPS)
    url = setup[2]
    reconnects = int(kernel.plugin()["status"].rsplit("reconnects ", 1)[1].split(";")[0])
    mock.script([{"tool_calls": [{"id": "g1", "name": "gate", "arguments": "{}"}]}, {"content": "made it"}])
    event, mid = mention(group, ALICE, "wait at the gate")
    napcat.post(event)
    wait_until(kernel.gate_started, timeout=60, what="the turn inside its tool call")
    napcat.kill()
    kernel.wait_status("disconnected")
    kernel.open_gate()
    wait_until(
        lambda: [e for e in kernel.session(f"qq:group:{group}") if e["kind"] == "output" and e["data"]["text"] == "made it"],
        timeout=60, what="the turn's end, while NapCat is away",
    )  # fmt: skip
    assert answers(napcat, group) == []
    napcat.dial(url)
    napcat.wait_connected()
    napcat.post(event)  # the same event again: handled once
    napcat.post(chatter(group, BOB, "a marker after it"))  # the group's messages are handled in order: once this
    wait_until(  # is stored, the event sent again has been handled (or ignored)
        lambda: [e for e in kernel.inputs(f"qq:group:{group}") if "a marker after it" in e["data"]["text"]],
        timeout=60, what="the marker stored",
    )  # fmt: skip
    [sent] = napcat.wait_sent(lambda s: answers(napcat, group), "the answer after the reconnect")
    assert said(sent).strip() == "made it" and sent["params"]["message"][0]["data"]["id"] == str(mid)
    kernel.wait_status(f"reconnects {reconnects + 1}")
    assert len(asked(mock, "wait at the gate")) == 2  # one turn: its two requests, no second turn
    assert len([e for e in kernel.inputs(f"qq:group:{group}") if "wait at the gate" in e["data"]["text"]]) == 1
    assert len(answers(napcat, group)) == 1
    # the session stayed valid: its next turn (the request carries the gate call and its result) is accepted
    mock.script([{"content": "still here"}])
    event, _ = mention(group, ALICE, "are you there?")
    napcat.post(event)
    napcat.wait_sent(lambda s: [a for a in answers(napcat, group) if "still here" in said(a)], "the next answer")
    assert mock.rejections == [], "the strict mock accepted every request of the group's session"


def test_a_flood_is_rate_limited_and_the_kernel_stays_responsive(
    kernel: QQKernel, napcat: FakeNapCat, mock: MockLLM
) -> None:
    """200 mentions from 20 people: the group's limit (3 in the window) lets three turns through, one notice says
    the rest are refused, and every message is still recorded; meanwhile `hologram ask` on another session is
    answered normally. The window is an hour: the limiter counts, so the result holds at any speed."""
    mock.script([], default={"content": "ok"})
    for i in range(200):
        event, _ = mention(FLOOD_GROUP, 20000 + i % 20, f"flood {i}")
        napcat.post(event)
    done = kernel.ask("ping from the terminal")
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr
    stored = wait_until(
        lambda: kernel.inputs(f"qq:group:{FLOOD_GROUP}"), accept=lambda e: len(e) >= 200, timeout=120,
        what="every flood message stored",
    )  # fmt: skip
    assert len(stored) == 200
    flood = napcat.wait_sent(lambda s: answers(napcat, FLOOD_GROUP), "three answers and a notice", count=4)
    notices = [a for a in flood if "Too many requests" in said(a)]
    assert len(notices) == 1 and len(flood) == 4, [said(a) for a in flood]
    turns = [r for r in mock.requests if "flood" in json.dumps(r.body["messages"])]
    assert len(turns) == 3
    assert mock.rejections == []
