"""The A2A client side, and docs/channels.md's A2A snippets, through two real kernels and the strict mock.

``peer`` is a Hologram serving A2A; ``main`` has it in its settings as the peer ``helper`` — the TOML block of
docs/channels.md, with this peer's URL and token — and its model delegates with ``a2a_send``: the peer's
answer comes back as the tool's live output (``tool.output``) and result, and the peer's token appears in no
log of ``main``. docs/examples/channels/a2a_client.py (the snippet of "Another agent talks to Hologram") runs
against ``peer`` and continues its context.

Mutation checks (run): `peers.send` not publishing its chunks (``live`` never called) turns
`test_the_model_delegates_to_a_peer_and_its_answer_streams_as_tool_output` red; `peers._headers` sending no
token turns it red too (the peer answers 401, the tool result is an error).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from hologram.api import turn as api
from hologram.clients import TurnClient
from mock_llm import MockLLM
from tests.a2a.kernel import A2AKernel

DOCS = Path(__file__).resolve().parents[2] / "docs"


def docs_peer_toml() -> str:
    """The ``[plugins.a2a.peers.…]`` block of docs/channels.md, verbatim."""
    text = (DOCS / "channels.md").read_text()
    [block] = [b for b in re.findall(r"```toml\n(.*?)```", text, re.S) if "[plugins.a2a.peers." in b]
    return block


@pytest.fixture(scope="module")
def kernels(tmp_path_factory: pytest.TempPathFactory, mock: MockLLM) -> Iterator[tuple[A2AKernel, A2AKernel]]:
    peer = A2AKernel(tmp_path_factory.mktemp("peer"), mock)
    peer.start()
    snippet = docs_peer_toml()
    assert 'url = "http://127.0.0.1:8081"' in snippet and 'token = "' in snippet
    url, token = peer.url, peer.token
    settings = re.sub(r'token = "[^"]*"', f'token = "{token}"', snippet.replace("http://127.0.0.1:8081", url))
    main = A2AKernel(tmp_path_factory.mktemp("main"), mock, settings=settings)
    main.start()
    yield main, peer
    main.stop()
    peer.stop()


async def delegate(main: A2AKernel) -> list[object]:
    async with await TurnClient.connect(main.data, client="tester") as client:
        turn = await client.start("ask the helper what 6 times 7 is")
        async with asyncio.timeout(120):
            return [event async for event in turn]


def test_the_model_delegates_to_a_peer_and_its_answer_streams_as_tool_output(
    kernels: tuple[A2AKernel, A2AKernel], mock: MockLLM
) -> None:
    main, peer = kernels
    mock.reset()
    arguments = json.dumps({"agent": "helper", "text": "what is 6 times 7?"})
    mock.script(
        [
            {"reasoning_content": "r", "tool_calls": [{"id": "p1", "name": "a2a_send", "arguments": arguments}]},
            {"reasoning_content": "r", "content": "Forty-two, the answer is", "chunk_delay": 0.005},  # the peer's turn
            {"reasoning_content": "r", "content": "The helper says 42."},
        ]
    )
    events = asyncio.run(delegate(main))
    outputs = [e for e in events if isinstance(e, api.ToolOutput)]
    [result] = [e for e in events if isinstance(e, api.ToolResult)]
    assert "".join(o.text for o in outputs) == "Forty-two, the answer is"
    assert len(outputs) > 1  # in pieces, as the peer streamed it
    assert not result.is_error and result.content.startswith("Forty-two, the answer is")
    assert "agent helper; context " in result.content and "state completed" in result.content
    assert mock.requests[1].body["messages"][-1]["content"] == "what is 6 times 7?"  # the peer's own turn
    assert mock.rejections == []
    assert peer.token not in main.logs()


def test_a2a_agents_lists_the_peer_from_its_card(kernels: tuple[A2AKernel, A2AKernel], mock: MockLLM) -> None:
    main, _ = kernels
    mock.reset()
    mock.script(
        [
            {"reasoning_content": "r", "tool_calls": [{"id": "l1", "name": "a2a_agents", "arguments": "{}"}]},
            {"reasoning_content": "r", "content": "listed"},
        ]
    )
    events = asyncio.run(delegate(main))
    [result] = [e for e in events if isinstance(e, api.ToolResult)]
    assert result.content.startswith("helper — ") and "Hologram:" in result.content and "slowtools" in result.content


def test_the_docs_client_asks_and_continues_its_context(kernels: tuple[A2AKernel, A2AKernel], mock: MockLLM) -> None:
    _, peer = kernels
    path = DOCS / "examples" / "channels" / "a2a_client.py"
    spec = importlib.util.spec_from_file_location("a2a_client", path)
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    mock.reset()
    mock.script([{"content": "noted: blue"}, {"content": "it was blue"}])
    answer, context = asyncio.run(example.ask(peer.url, peer.token, "my colour is blue"))
    again, same = asyncio.run(example.ask(peer.url, peer.token, "what colour?", context))
    assert (answer, again, same) == ("noted: blue", "it was blue", context)
    assert "my colour is blue" in json.dumps(mock.requests[1].body["messages"])
