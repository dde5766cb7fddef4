"""`hologram acp`: a tool result's image reaches the editor (ACP's image content block in the tool call's
update), live and when another `hologram acp` loads the session — the editor's client side of the
`agent-client-protocol` package against a real `hologram up`, the strict mock as the model.

Mutation check (done): the agent not sending `with_images` after a live result turns the live half red; the
replay not reading `stored_images` turns the load half red.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from acp import text_block
from acp.schema import ImageContentBlock, ToolCallProgress

from mock_llm import MockLLM

from .kernel import PLUGINS
from .plugins.e2e_images import png
from .test_acp_e2e import AcpKernel, Editor, acp, run
from .test_approvals_e2e import ApprovalKernel

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


class AcpImagesKernel(AcpKernel):
    def __init__(self, root: Path, mock: MockLLM) -> None:  # AcpKernel's graph is fixed: the images plugin instead
        source = (PLUGINS / "e2e_images.py").read_text()
        ApprovalKernel.__init__(self, root, mock, {"e2e_images": (MANIFEST, source)})


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory, mock: MockLLM) -> Iterator[AcpImagesKernel]:
    k = AcpImagesKernel(tmp_path_factory.mktemp("acp-images"), mock)
    k.start()
    yield k
    k.stop()


def images_of(editor: Editor) -> list[tuple[str, bytes]]:
    return [
        (block.content.mime_type, base64.b64decode(block.content.data))
        for update in editor.of(ToolCallProgress)
        for block in update.content or []
        if isinstance(block.content, ImageContentBlock)
    ]


def test_a_tool_image_reaches_the_editor_live_and_on_load(kernel: AcpImagesKernel, mock: MockLLM) -> None:
    live, loaded = Editor(), Editor()
    expected = png(40, 30, 77)
    mock.reset()
    mock.script(
        [
            {
                "reasoning_content": "r",
                "tool_calls": [{"id": "c1", "name": "snap", "arguments": json.dumps({"fill": 77})}],
            },
            {"reasoning_content": "r", "content": "there"},
        ]
    )

    async def go() -> None:
        async with acp(kernel, live) as (conn, _):
            session = (await conn.new_session(cwd=str(kernel.root), mcp_servers=[])).session_id
            await conn.prompt(session_id=session, prompt=[text_block("a picture")])
        async with acp(kernel, loaded) as (conn, _):
            await conn.load_session(cwd=str(kernel.root), session_id=session, mcp_servers=[])

    run(go())
    assert images_of(live) == [("image/png", expected)]
    [shown] = [
        u for u in live.of(ToolCallProgress) if any(isinstance(b.content, ImageContentBlock) for b in u.content or [])
    ]
    assert shown.status == "completed" and shown.content[0].content.text == f"snapped {len(expected)} bytes"
    assert images_of(loaded) == [("image/png", expected)]
    assert mock.rejections == []
