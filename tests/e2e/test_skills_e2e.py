"""A skill is read and followed, end to end: `hologram up` with the shipped skills and files plugins, a skill in
<data>/skills (and a broken one beside it), the strict DeepSeek mock as the model.

The model's first request carries the skill's name and description in its system prompt (the skills plugin's
pre_action hook) and names ``skill_read`` in ``tools_load`` (deferred); the scripted model calls
``skill_read`` by name, gets the instructions — which name a tool, a file and a word the model had no other way
to know — and does what they say (``files_write``), and the file is in the workspace. The strict mock accepts
every request's history.

Mutation checks (done): the pre_action hook answering ``{}`` always turns the test red (no listing in the
system prompt); ``skill_read`` returning the front matter's description instead of the body turns it red."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hologram.clients import TurnClient
from mock_llm import MockLLM
from tests.kit.manifests import copy_shipped
from tests.kit.providers import provider_toml, write_settings

from .kernel import E2EKernel

pytestmark = pytest.mark.slow

SKILL = """\
---
name: weekly-report
description: Write the user's weekly report. Use when asked for the weekly report.
license: Apache-2.0
---
# Weekly report

1. Call files_write with path `reports/week.md`.
2. Its content is the single line `status: amber-42`.
3. Then tell the user the report is written.
"""


class SkillsKernel(E2EKernel):
    """skills and files from the shipped manifests, a skill and a broken one in <data>/skills."""

    def __init__(self, root: Path, mock: MockLLM) -> None:  # no super(): its own graph
        self.root, self.mocks, self.process = root, [mock], None
        self.data, self.lock = root / "data", root / "hologram.lock"
        manifests = root / "manifests"
        for name in ("skills", "files"):
            copy_shipped(name, manifests)
        self.hologram("build", "--no-discover", "-m", str(manifests), "-o", str(self.lock), check=True)
        (self.data / "skills" / "weekly-report").mkdir(parents=True)
        (self.data / "skills" / "weekly-report" / "SKILL.md").write_text(SKILL)
        (self.data / "skills" / "broken").mkdir()
        (self.data / "skills" / "broken" / "SKILL.md").write_text("---\nname: broken\n---\nno description\n")
        write_settings(self.data / "settings.toml", "[agent]\nmax_steps = 6\n\n" + provider_toml(mock))


@pytest.fixture
def kernel(tmp_path: Path, mock: MockLLM) -> Iterator[SkillsKernel]:
    mock.reset()
    k = SkillsKernel(tmp_path, mock)
    k.start()
    yield k
    k.stop()


def call(call_id: str, tool: str, **arguments: Any) -> dict[str, str]:
    return {"id": call_id, "name": tool, "arguments": json.dumps(arguments)}


def test_a_skill_is_read_and_followed(kernel: SkillsKernel, mock: MockLLM) -> None:
    mock.script(
        [
            {"reasoning_content": "a skill fits", "tool_calls": [call("c1", "skill_read", name="weekly-report")]},
            {
                "reasoning_content": "the skill says",
                "tool_calls": [call("c2", "files_write", path="reports/week.md", content="status: amber-42\n")],
            },
            {"reasoning_content": "done", "content": "Your weekly report is written."},
        ]
    )

    async def go() -> str:
        async with await TurnClient.connect(kernel.data, client="e2e") as client:
            turn = await client.start("write my weekly report")
            return (await turn.result()).output

    assert asyncio.run(go()) == "Your weekly report is written."
    first, second, third = (r.body for r in mock.requests)
    system = first["messages"][0]
    assert system["role"] == "system"
    assert system["content"].endswith(
        "Skills (instructions for particular tasks): when a task fits one, first read it with skill_read.\n"
        "- weekly-report: Write the user's weekly report. Use when asked for the weekly report."
    )
    assert "broken" not in system["content"]
    tools = {t["function"]["name"]: t["function"] for t in first["tools"]}
    assert "skill_read" not in tools and "skill_read" in tools["tools_load"]["description"]  # deferred, named
    [read] = [m["content"] for m in second["messages"] if m["role"] == "tool"]
    assert read.startswith(
        f"Skill weekly-report — its folder is {(kernel.data / 'skills' / 'weekly-report').resolve()}"
    )
    assert "1. Call files_write with path `reports/week.md`." in read and "`status: amber-42`" in read
    assert len([m for m in third["messages"] if m["role"] == "tool"]) == 2
    assert (kernel.data / "workspace" / "reports" / "week.md").read_text() == "status: amber-42\n"
    assert mock.rejections == []
    # the broken one is said where a person looks: the plugin's status line
    [skills] = [p for p in kernel.status()["plugins"] if p["name"] == "skills"]
    assert (
        "1 skill(s); 1 not listed: " in skills["status"] and "broken/SKILL.md: field 'description'" in skills["status"]
    )
