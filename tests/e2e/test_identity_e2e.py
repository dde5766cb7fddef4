"""Who started a turn, end to end (issue 35, item 2): a real `hologram up`, the strict mock, a test channel plugin
that starts a turn through the public SDK (``kernel.turns`` ``start``) claiming to be ``web`` and naming its
partner, and a stage hook (a plugin the bridge requires) that records what its view says.

The turn's channel is the plugin's name whatever ``client`` it passes; its client and partner reach
``turn.started``, the stored input event, the stage hook's view, and the session's channel. A control-socket
client (version 2) is its ``initialize`` name. A ``channel`` param is refused: the kernel sets it.

Mutation checks (done): `TurnService.facility_methods`' start passing ``channel=None`` (the params' client
wins) turns ``test_a_channel_plugins_turn_carries_its_identity`` red (channel ``web``); not adding
``identity.stored()`` to the input in `_Turn._persist_input` turns it red (no partner stored); not putting
``client``/``partner`` in `StageContext.view` turns it red (the hook sees none).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

from hologram.api import turn as api
from hologram.clients import TurnClient
from hologram.kernel.control import call
from mock_llm import MockLLM
from tests.kit.wait import wait_until

from .test_approvals_e2e import ApprovalKernel

pytestmark = pytest.mark.slow

BRIDGE_MANIFEST = """\
[plugin]
name = "qqbridge"
version = "0.3.1"
description = "a chat channel: starts a turn for a group member, records what its on_input hook sees"
run = { module = "qqbridge", env = { PYTHONPATH = "{path}", BRIDGE_LOG = "{root}/bridge.jsonl" } }

[facilities]
requires = ["kernel.turns", "hookrec.views@1"]  # started once the hook below is ready: the turn reaches it
"""

# The stage hook that records what its view says: a plugin of its own that the bridge requires, so the bridge's
# turn (started from its on_start) cannot reach on_input before the hook is ready (a hook of a plugin that is
# still starting is skipped: the same plugin's hook raced its own turn under load).
HOOKREC_MANIFEST = """\
[plugin]
name = "hookrec"
version = "0.1.0"
description = "records what its on_input hook sees"
run = { module = "hookrec", env = { PYTHONPATH = "{path}", BRIDGE_LOG = "{root}/bridge.jsonl" } }

[facilities]
provides = ["hookrec.views@1"]

[stages]
on_input = { order = 20 }
"""

HOOKREC = """\
import json, os
from hologram.sdk import OnInputView, Plugin

plugin = Plugin("hookrec")


@plugin.stage("on_input")
def seen(view: OnInputView):
    with open(os.environ["BRIDGE_LOG"], "a") as f:
        f.write(json.dumps({"hook": {"session": view.session_id, "channel": view.channel, "client": view.client,
                                     "partner": view.partner}}) + "\\n")
    return None


if __name__ == "__main__":
    plugin.run()
"""

BRIDGE = """\
import asyncio, json, os
from hologram.rpc import RpcError
from hologram.sdk import Plugin

plugin = Plugin("qqbridge")
SESSION = "qq-group-1"
tasks = set()


def log(record):
    with open(os.environ["BRIDGE_LOG"], "a") as f:
        f.write(json.dumps(record) + "\\n")


@plugin.on_turn_event
async def on_turn_event(event):
    if event["session"] == SESSION:
        log({"event": event})


@plugin.on_start
async def begin(ctx):
    turns = plugin.facility("kernel.turns")

    async def start():
        try:  # a channel param is not the caller's to set
            await turns.call("start", text="forged", session="qq-forged", channel="web")
            log({"forged": "accepted"})
        except RpcError as exc:
            log({"forged": {"code": int(exc.code), "message": exc.message}})
        await turns.call("start", text="I love pottery.", session=SESSION, client="web", partner="alice")
    tasks.add(asyncio.get_running_loop().create_task(start()))


if __name__ == "__main__":
    plugin.run()
"""


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory, mock: MockLLM) -> Iterator[ApprovalKernel]:
    k = ApprovalKernel(
        tmp_path_factory.mktemp("identity"),
        mock,
        plugins={"qqbridge": (BRIDGE_MANIFEST, BRIDGE), "hookrec": (HOOKREC_MANIFEST, HOOKREC)},
    )
    mock.script([{"reasoning_content": "r", "content": "nice"}])  # the bridge's turn runs as soon as it starts
    k.start()
    yield k
    k.stop()


def bridge_log(kernel: ApprovalKernel) -> list[dict[str, Any]]:
    path = kernel.root / "bridge.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_a_channel_plugins_turn_carries_its_identity(kernel: ApprovalKernel) -> None:
    log = wait_until(
        lambda: bridge_log(kernel),
        accept=lambda seen: any(r.get("event", {}).get("type") == "turn.ended" for r in seen),
        timeout=60,
        what="the bridge plugin to see its turn end",
    )
    forged = next(r["forged"] for r in log if "forged" in r)
    assert forged != "accepted" and forged["code"] == -32602 and "channel" in forged["message"], forged

    events = [r["event"] for r in log if "event" in r]
    started = next(e for e in events if e["type"] == "turn.started")
    assert (started["channel"], started["client"], started["partner"]) == ("qqbridge", "web", "alice")
    assert events[-1]["type"] == "turn.ended" and events[-1]["output"] == "nice", events  # the turn really ran

    hooks = [r["hook"] for r in log if "hook" in r and r["hook"]["session"] == "qq-group-1"]
    assert hooks == [{"session": "qq-group-1", "channel": "qqbridge", "client": "web", "partner": "alice"}]

    stored = kernel.events("qq-group-1")
    first = stored["events"][0]
    assert first["kind"] == "input" and first["data"]["text"] == "I love pottery."
    assert (first["channel"], first["data"]["client"], first["data"]["partner"]) == ("qqbridge", "web", "alice")
    assert all(e["channel"] == "qqbridge" for e in stored["events"])  # the turn's every event, not only the input
    assert stored["messages"][0] == {"role": "user", "content": "I love pottery."}  # the model is sent the text only
    listed = {s["id"]: s for s in call(kernel.data, api.SESSIONS_LIST, {})["sessions"]}
    assert listed["qq-group-1"]["channel"] == "qqbridge"


def test_a_control_client_is_its_initialize_name(kernel: ApprovalKernel, mock: MockLLM) -> None:
    mock.reset()
    mock.script([{"reasoning_content": "r", "content": "hi back"}])

    async def go() -> list[Any]:
        async with await TurnClient.connect(kernel.data, client="tester") as client:  # initialize: "tester"
            client.client = "pretender"  # what its turn/start then says it is
            turn = await client.start("hi", session="ctl-1", partner="bob")
            ended = await turn.result()
            assert ended.output == "hi back"
            return list(turn.events)

    seen = asyncio.run(go())
    started = next(e for e in seen if isinstance(e, api.TurnStarted))
    assert (started.channel, started.client, started.partner) == ("tester", "pretender", "bob")
    first = kernel.events("ctl-1")["events"][0]
    assert first["channel"] == "tester"
    assert first["data"]["client"] == "pretender" and first["data"]["client_version"]  # initialize's version
    assert first["data"]["partner"] == "bob"
