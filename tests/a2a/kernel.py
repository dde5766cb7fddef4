"""A real `hologram up` with the http and a2a plugins (shipped manifests), shell, code and the approval-needing
recorder of the approvals e2e tests, and a plugin of parallel-safe tools (one of them slow, to cancel during a
call), against the strict mock; and the official ``a2a-sdk`` client pointed at it with the token."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
from a2a.client import Client, ClientConfig, ClientFactory
from a2a.helpers.proto_helpers import new_text_message
from a2a.types import a2a_pb2 as pb

from mock_llm import MockLLM
from tests.httpapi.kernel import HttpKernel
from tests.kit.manifests import copy_shipped

TOOLS_MANIFEST = """\
[plugin]
name = "slowtools"
version = "0.1.0"
description = "parallel-safe tools for the A2A tests"
run = { module = "slowtools", env = { PYTHONPATH = "{path}", SLOW_MARK = "{root}/slow-started" } }

[[tools]]
name = "weather"
description = "the weather in a city"
parallel_safe = true
parameters = { type = "object", properties = { city = { type = "string" } }, required = ["city"] }

[[tools]]
name = "slow"
description = "takes its time"
parallel_safe = true
parameters = { type = "object", properties = { seconds = { type = "number" } }, required = ["seconds"] }
"""

TOOLS = r"""
import asyncio, os
from pathlib import Path
from hologram.sdk import Plugin

plugin = Plugin("slowtools")


@plugin.tool("weather")
async def weather(city: str) -> str:
    return f"sunny in {city}"


@plugin.tool("slow")
async def slow(seconds: float) -> str:
    Path(os.environ["SLOW_MARK"]).write_text("started")
    await asyncio.sleep(seconds)
    return "slept"


if __name__ == "__main__":
    plugin.run()
"""


class A2AKernel(HttpKernel):
    def __init__(self, root: Path, mock: MockLLM, settings: str = "") -> None:
        super().__init__(root, mock)
        manifests = root / "manifests"
        copy_shipped("a2a", manifests)
        (root / "code" / "slowtools.py").write_text(TOOLS)
        (manifests / "slowtools.toml").write_text(
            TOOLS_MANIFEST.replace("{path}", str(root / "code")).replace("{root}", str(root))
        )
        self.hologram("build", "--no-discover", "-m", str(manifests), "-o", str(self.lock), check=True)
        if settings:
            path = self.data / "settings.toml"
            path.write_text(path.read_text() + "\n" + settings)

    @property
    def slow_mark(self) -> Path:
        return self.root / "slow-started"

    @asynccontextmanager
    async def a2a(self, *, streaming: bool = True, token: str | None = None) -> AsyncIterator[Client]:
        """The official client, its card resolved from the well-known path with the token (as docs/channels.md
        says to), speaking the version the card offers first (1.0)."""
        headers = {"authorization": f"Bearer {token or self.token}"}
        async with httpx.AsyncClient(headers=headers, timeout=120) as http:
            factory = ClientFactory(ClientConfig(streaming=streaming, httpx_client=http))
            client = await factory.create_from_url(self.url)
            try:
                yield client
            finally:
                await client.close()


def text_request(text: str, *, context: str = "", task: str = "", immediately: bool = False) -> pb.SendMessageRequest:
    message = new_text_message(text, context_id=context or None, task_id=task or None, role=pb.ROLE_USER)
    request = pb.SendMessageRequest(message=message)
    if immediately:
        request.configuration.return_immediately = True
    return request


async def collect(client: Client, request: pb.SendMessageRequest) -> list[pb.StreamResponse]:
    return [event async for event in client.send_message(request)]


def final_task(events: list[pb.StreamResponse]) -> pb.Task | None:
    tasks = [e.task for e in events if e.HasField("task")]
    return tasks[-1] if tasks else None


def answer_text(task: pb.Task) -> str:
    return "".join(p.text for a in task.artifacts if a.artifact_id == "answer" for p in a.parts)


def streamed_text(events: list[pb.StreamResponse]) -> str:
    return "".join(p.text for e in events if e.HasField("artifact_update") for p in e.artifact_update.artifact.parts)


def states(events: list[pb.StreamResponse]) -> list[str]:
    out = []
    for e in events:
        if e.HasField("task"):
            out.append(pb.TaskState.Name(e.task.status.state))
        elif e.HasField("status_update"):
            out.append(pb.TaskState.Name(e.status_update.status.state))
    return out


__all__ = ["A2AKernel", "Any", "answer_text", "collect", "final_task", "states", "streamed_text", "text_request"]
