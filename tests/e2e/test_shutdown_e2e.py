"""SIGTERM while a turn runs and another waits behind it (issue 42: the queued turn was started after the
plugins had stopped, its tool call got "there is no tool named …", and `hologram ask` exited 0 with an answer
built on that).

Now: the kernel stops taking turns, drops the queued one (its client gets ``turn.ended`` ``cancelled`` and
`hologram ask` exits non-zero saying so), lets the running one finish while its plugins are still up (its
approved call reaches the recorder plugin after the SIGTERM), then stops the plugins and exits with no
traceback. The running turn is held at an approval the test answers, so nothing depends on timing.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
from pathlib import Path

from hologram.api import turn as api
from hologram.clients import TurnClient
from mock_llm import MockLLM

from .kernel import HOLOGRAM, env
from .test_approvals_e2e import ApprovalKernel


def call(call_id: str, name: str, **arguments: str) -> dict[str, str]:
    return {"id": call_id, "name": name, "arguments": json.dumps(arguments)}


def test_sigterm_drops_the_queued_turn_and_lets_the_running_one_finish(tmp_path: Path, mock: MockLLM) -> None:
    k = ApprovalKernel(tmp_path, mock)
    mock.script(
        [
            {"reasoning_content": "deploy", "tool_calls": [call("d1", "deploy", target="prod")]},
            {"reasoning_content": "done", "content": "Deployed."},
        ],
        default={"reasoning_content": "late", "content": "too late"},
    )
    k.start()
    assert k.process is not None
    kernel = k.process

    async def main() -> tuple[list[api.TurnEvent], subprocess.CompletedProcess[str]]:
        async with await TurnClient.connect(k.data, client="first", approvals=True) as client:
            session = await client.watch("stopping")
            turn = await client.start("deploy prod", session="stopping")
            seen: list[api.TurnEvent] = []
            events = aiter(session)

            async def until(kind: type) -> api.TurnEvent:
                while True:
                    seen.append(await anext(events))
                    if isinstance(seen[-1], kind):
                        return seen[-1]

            request = await until(api.ApprovalRequested)  # the running turn waits for us
            queued = await asyncio.create_subprocess_exec(
                *HOLOGRAM, "ask", "--data", str(k.data), "--session", "stopping", "and then?",
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env(), cwd=k.root,
            )  # fmt: skip
            await until(api.TurnQueued)  # the ask's turn waits behind ours
            kernel.send_signal(signal.SIGTERM)
            assert isinstance(request, api.ApprovalRequested)
            await client.approve(request, True, "go ahead")
            while sum(isinstance(e, api.TurnEnded) for e in seen) < 2:
                seen.append(await anext(events))
            assert turn.turn == request.turn
            out, err = await asyncio.wait_for(queued.communicate(), 60)
            assert queued.returncode is not None
            return seen, subprocess.CompletedProcess([], queued.returncode, out.decode(), err.decode())

    seen, ask = asyncio.run(asyncio.wait_for(main(), 120))
    output, _ = kernel.communicate(timeout=60)
    k.process = None

    ended = {e.turn: e for e in seen if isinstance(e, api.TurnEnded)}
    [queued_turn] = [e.turn for e in seen if isinstance(e, api.TurnQueued)]
    running_turn = next(e.turn for e in seen if isinstance(e, api.ApprovalRequested))
    assert ended[running_turn].stop_reason == "answer" and ended[running_turn].output == "Deployed.", ended
    assert ended[queued_turn].stop_reason == "cancelled", ended
    assert not any(isinstance(e, api.TurnStarted) and e.turn == queued_turn for e in seen), "the queued turn started"
    assert k.record.read_text().splitlines() == ['{"target": "prod"}'], "the approved call missed its plugin"
    assert ask.returncode != 0 and "cancelled" in ask.stderr, (ask.returncode, ask.stderr)
    assert "too late" not in ask.stdout
    assert len(mock.requests) == 2, "the queued turn reached the model"
    assert kernel.returncode == 0, output
    assert "Traceback" not in output and output.rstrip().endswith("Hologram stopped."), output[-2000:]
