"""A2A: a tool result's image (a screenshot) is an artifact of the task — its bytes and media type in a file
part — in the completed task and, streamed, as an artifact update when the result comes; `hologram up` with the
http and a2a plugins and a tool that returns a PNG, the official ``a2a-sdk`` client, the strict mock.

Mutation checks (done): `task_of` not adding the image artifacts turns the first test red; `_updates` not
yielding them turns the second red.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from a2a.types import a2a_pb2 as pb

from mock_llm import MockLLM
from tests.a2a.kernel import A2AKernel, collect, final_task, streamed_text, text_request
from tests.e2e.kernel import PLUGINS
from tests.e2e.plugins.e2e_images import png

pytestmark = pytest.mark.slow

MANIFEST = """\
[plugin]
name = "e2e-images"
version = "0.1.0"
description = "tools that return images"
run = { module = "e2e_images", env = { PYTHONPATH = "{path}" } }

[[tools]]
name = "snap"
description = "a grey PNG"
parameters = { type = "object", properties = { fill = { type = "integer" } }, required = ["fill"] }
"""


class A2AImagesKernel(A2AKernel):
    def __init__(self, root: Path, mock: MockLLM) -> None:
        super().__init__(root, mock)
        code, manifests = root / "code", root / "manifests"
        (code / "e2e_images.py").write_text((PLUGINS / "e2e_images.py").read_text())
        (manifests / "e2e-images.toml").write_text(MANIFEST.replace("{path}", str(code)))
        self.hologram("build", "--no-discover", "-m", str(manifests), "-o", str(self.lock), check=True)


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory, mock: MockLLM) -> Iterator[A2AImagesKernel]:
    k = A2AImagesKernel(tmp_path_factory.mktemp("a2a-images"), mock)
    k.start()
    yield k
    k.stop()


def script(mock: MockLLM, fill: int) -> None:
    mock.reset()
    call = {"id": "c1", "name": "snap", "arguments": json.dumps({"fill": fill})}
    mock.script([{"reasoning_content": "r", "tool_calls": [call]}, {"reasoning_content": "r", "content": "here"}])


def images(artifacts: list[pb.Artifact]) -> list[tuple[str, bytes]]:
    return [(p.media_type, p.raw) for a in artifacts if a.artifact_id.startswith("image.") for p in a.parts]


def test_the_completed_task_carries_the_image_as_an_artifact(kernel: A2AImagesKernel, mock: MockLLM) -> None:
    script(mock, 21)

    async def run() -> list[pb.StreamResponse]:
        async with kernel.a2a(streaming=False) as client:
            return await collect(client, text_request("a picture please"))

    task = final_task(asyncio.run(run()))
    assert task is not None and pb.TaskState.Name(task.status.state) == "TASK_STATE_COMPLETED"
    assert images(list(task.artifacts)) == [("image/png", png(40, 30, 21))]
    [artifact] = [a for a in task.artifacts if a.artifact_id.startswith("image.")]
    assert artifact.parts[0].filename.startswith("snap-") and artifact.parts[0].filename.endswith(".png")
    assert mock.rejections == []


def test_a_stream_sends_the_image_when_the_result_comes(kernel: A2AImagesKernel, mock: MockLLM) -> None:
    script(mock, 99)

    async def run() -> list[pb.StreamResponse]:
        async with kernel.a2a() as client:
            return await collect(client, text_request("stream a picture"))

    events = asyncio.run(run())
    updates = [e.artifact_update.artifact for e in events if e.HasField("artifact_update")]
    assert images(updates) == [("image/png", png(40, 30, 99))]
    assert streamed_text(events) == "here"
    first_image = next(
        i for i, e in enumerate(events) if e.HasField("artifact_update") and images([e.artifact_update.artifact])
    )
    first_text = next(
        i
        for i, e in enumerate(events)
        if e.HasField("artifact_update") and e.artifact_update.artifact.artifact_id == "answer"
    )
    assert first_image < first_text, "the image comes with its tool result, before the answer streams"
    assert mock.rejections == []
