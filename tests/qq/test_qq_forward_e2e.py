"""The qq channel through `hologram up` over NapCat's forward WebSocket: the plugin dials the stand-in's server and
dials again, with backoff, when it dies; a wrong token is refused as NapCat refuses it (a retcode 1403 answer,
then close) and said in the status. And an unconfigured plugin is ready, idle and says so.

Mutation checks (done, each red): `Link._dial_forever` returning after the first connection (no redial) turns
``test_killed_and_restarted_mid_turn_the_answer_comes_once`` red; not reading NapCat's 1403 answer (its branch
in `Link._run` dropped) turns ``test_a_wrong_token_is_refused_and_said`` red on the status; `Channel.on_event`
not consulting `SeenIds` turns the mid-turn test red (the event sent again starts a second turn).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from mock_llm import MockLLM
from tests.kit.wait import wait_until

from .kernel import ALICE, BOT, GROUPS, TOKEN, QQKernel
from .napcat import FakeNapCat, at, group_message, text

pytestmark = pytest.mark.slow
IDS = iter(range(70_000, 10**9))


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory, mock: MockLLM) -> Iterator[tuple[QQKernel, FakeNapCat, int]]:
    napcat = FakeNapCat(self_id=BOT, token=TOKEN)
    port = napcat.serve()
    kernel = QQKernel(tmp_path_factory.mktemp("qq-forward"), mock, f'connect = "ws://127.0.0.1:{port}"')
    try:
        kernel.start()
        napcat.wait_connected()
        kernel.wait_status(f"bot {BOT}")
        yield kernel, napcat, port
    finally:
        napcat.close()
        kernel.stop()


def answers(napcat: FakeNapCat, group: int) -> list[dict[str, Any]]:
    return [a for a in napcat.sent("send_group_msg") if a["params"]["group_id"] == group]


def test_a_mention_is_answered(setup: tuple[QQKernel, FakeNapCat, int], mock: MockLLM) -> None:
    kernel, napcat, _ = setup
    mock.reset()
    mock.script([{"content": "forward hello"}])
    mid = next(IDS)
    napcat.post(group_message(GROUPS[0], ALICE, f"[CQ:at,qq={BOT}] hello over forward", message_id=mid))
    [sent] = napcat.wait_sent(lambda s: answers(napcat, GROUPS[0]), "the answer")
    assert sent["params"]["message"][0] == {"type": "reply", "data": {"id": str(mid)}}
    assert sent["params"]["message"][-1]["data"]["text"].strip() == "forward hello"
    status = kernel.plugin()["status"]
    assert status.startswith("connected; forward ws to ws://127.0.0.1:") and "last event " in status, status


def test_killed_and_restarted_mid_turn_the_answer_comes_once(
    setup: tuple[QQKernel, FakeNapCat, int], mock: MockLLM
) -> None:
    kernel, napcat, port = setup
    mock.reset()
    kernel.reset_gate()
    group = GROUPS[1]
    mock.script([{"tool_calls": [{"id": "g1", "name": "gate", "arguments": "{}"}]}, {"content": "through"}])
    event = group_message(group, ALICE, [at(BOT), text(" hold the line")], message_id=next(IDS))
    napcat.post(event)
    wait_until(kernel.gate_started, timeout=60, what="the turn inside its tool call")
    napcat.kill()
    kernel.wait_status("disconnected")
    kernel.open_gate()
    wait_until(
        lambda: [e for e in kernel.session(f"qq:group:{group}") if e["kind"] == "output"],
        timeout=60, what="the turn's end while NapCat is down",
    )  # fmt: skip
    napcat.serve(port)  # NapCat back on its port: the plugin dials again
    napcat.wait_connected()
    napcat.post(event)  # sent again after the restart: handled once
    marker = group_message(group, ALICE, [text("a marker after it")], message_id=next(IDS))
    napcat.post(marker)  # handled in order: once it is stored, the event sent again was handled (or ignored)
    wait_until(
        lambda: [e for e in kernel.inputs(f"qq:group:{group}") if "a marker after it" in e["data"]["text"]],
        timeout=60, what="the marker stored",
    )  # fmt: skip
    assert len([e for e in kernel.inputs(f"qq:group:{group}") if "hold the line" in e["data"]["text"]]) == 1
    [sent] = napcat.wait_sent(lambda s: answers(napcat, group), "the answer after the reconnect")
    assert sent["params"]["message"][-1]["data"]["text"].strip() == "through"
    assert len([r for r in mock.requests if "hold the line" in json.dumps(r.body["messages"])]) == 2  # one turn
    status = kernel.wait_status("connected;")
    assert "reconnects 0" not in status, status


def test_a_wrong_token_is_refused_and_said(setup: tuple[QQKernel, FakeNapCat, int]) -> None:
    """The plugin restarted with another token (settings edited, `hologram plugin restart qq`): NapCat answers
    1403 and closes; the status says so, and no event is taken from that connection."""
    kernel = setup[0]
    settings = kernel.data / "settings.toml"
    original = settings.read_text()
    try:
        settings.write_text(original.replace(f'access_token = "{TOKEN}"', 'access_token = "not-the-token"'))
        restarted = kernel.hologram("plugin", "restart", "qq", "--data", str(kernel.data))
        assert restarted.returncode == 0, restarted.stdout + restarted.stderr
        status = kernel.wait_status("refused the access token")
        assert status.startswith("disconnected"), status
    finally:
        settings.write_text(original)
        kernel.hologram("plugin", "restart", "qq", "--data", str(kernel.data))
    kernel.wait_status("connected;")


def test_without_listen_or_connect_it_is_ready_and_idle(
    tmp_path_factory: pytest.TempPathFactory, mock: MockLLM
) -> None:
    kernel = QQKernel(tmp_path_factory.mktemp("qq-idle"), mock, "")
    settings = kernel.data / "settings.toml"
    settings.write_text(settings.read_text().replace('access_token = "napcat-secret-token"\n', ""))
    kernel.start()
    try:
        plugin = kernel.plugin()
        assert plugin["state"] == "ready"
        status = kernel.wait_status("not configured")
        assert "[plugins.qq]" in status
        shown = kernel.hologram("status", "--data", str(kernel.data))
        assert "not configured" in shown.stdout, shown.stdout
    finally:
        kernel.stop()
