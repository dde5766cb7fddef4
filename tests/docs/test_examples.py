"""Every Python example in docs/ is a file the suite runs: each ```python block of docs/*.md starts with a
``# PATH`` line naming its file under docs/examples/ (for authoring.md, under the hologram-weather plugin),
the block is that file verbatim, and each file is exercised below against the real objects it uses.

Mutation checks (done): editing one line of docs/examples/agent/guard.py (``view.deny`` → ``view.respond``)
turns ``test_the_guard_hook_denies_sudo_and_lets_the_rest_through`` red and the page comparison red until the
page is updated too; a ```python block without its ``# PATH`` line fails the first test.
"""

from __future__ import annotations

import asyncio
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from hologram.agent import ToolInvocation, ToolRegistry
from hologram.llm import ProviderSettings
from hologram.sdk.testing import PluginHarness
from hologram.sessions import SessionStore
from mock_llm import MockLLM
from tests.launcher.kit import write_plugin

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
EXAMPLES = DOCS / "examples"
BASE = {"authoring.md": EXAMPLES / "hologram-weather"}  # that page shows a whole plugin repository
BLOCK = re.compile(r"^```python\n(?P<body>.*?)\n```", re.S | re.M)


def _blocks() -> dict[Path, tuple[str, str]]:
    """file → (page, body) for every Python block of the docs."""
    found: dict[Path, tuple[str, str]] = {}
    for page in sorted(DOCS.glob("*.md")):
        for match in BLOCK.finditer(page.read_text(encoding="utf-8")):
            first, _, body = match.group("body").partition("\n")
            assert first.startswith("# "), (
                f"docs/{page.name}: a ```python block must start with '# PATH', the file under docs/examples/ it "
                f"shows (found {first!r}); put the code in that file, where tests/docs/test_examples.py runs it"
            )
            found[BASE.get(page.name, EXAMPLES) / first[2:].strip()] = (page.name, body)
    return found


def _load(relative: str) -> ModuleType:
    path = EXAMPLES / relative
    spec = importlib.util.spec_from_file_location(f"docs_example_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_python_block_of_the_docs_is_an_example_file_verbatim() -> None:
    blocks = _blocks()
    for path, (page, body) in blocks.items():
        assert path.is_file(), f"docs/{page} shows {path.relative_to(ROOT)}, which does not exist"
        assert body == path.read_text(encoding="utf-8").rstrip("\n"), f"docs/{page}: the block differs from {path}"
    shown = set(blocks)
    examples = {p for p in EXAMPLES.rglob("*.py") if p.name != "__init__.py"}
    assert examples <= shown, f"example files no page shows: {sorted(str(p) for p in examples - shown)}"


def test_the_kernel_tool_example_registers_a_tool_the_turn_can_call() -> None:
    example = _load("agent/kernel_tool.py")
    registry = ToolRegistry()
    example.install(registry)
    tools = registry.snapshot()
    tool = tools.get("coldcontext_query")
    assert tool is not None and tool.parallel_safe
    arguments, problem = tools.parse(tool, '{"query": "wifi password"}')
    assert problem is None and arguments == {"query": "wifi password"}
    answer = asyncio.run(example.coldcontext_query(arguments, ToolInvocation("call_1", "s1")))
    assert answer == "nothing older about 'wifi password' in session s1"
    refused, problem = tools.parse(tool, '{"q": 1}')
    assert refused is None and problem is not None and "query" in problem


@pytest.mark.slow
def test_the_guard_hook_denies_sudo_and_lets_the_rest_through(tmp_path: Path) -> None:
    manifest = write_plugin(
        tmp_path,
        "guard",
        command=[sys.executable, str(EXAMPLES / "agent" / "guard.py")],
        extra="[stages]\nbefore_toolcall = { order = 10 }\n",
    )

    def view(name: str, command: str) -> dict[str, Any]:
        call = {"id": "c1", "name": name, "plugin": "shell", "arguments": {"command": command}}
        return {"stage": "before_toolcall", "session_id": "s1", "turn_id": "t1", "tool_call": call, "data": {}}

    async def scenario() -> None:
        async with PluginHarness.from_manifest(manifest) as harness:
            assert await harness.call_stage("before_toolcall", view("shell_run", "sudo rm -rf x")) == {
                "deny": "this machine's guard refuses sudo"
            }
            assert await harness.call_stage("before_toolcall", view("shell_run", "ls")) is None
            assert await harness.call_stage("before_toolcall", view("files_read", "sudo")) is None

    asyncio.run(scenario())


def test_the_provider_chain_example_completes_and_streams(mock_llm: MockLLM) -> None:
    example = _load("providers/chain.py")
    mock_llm.script([{"content": "Sunny."}, {"content": "Still sunny."}])
    settings = ProviderSettings(name="m", kind="openai", base_url=mock_llm.base_url, model="gpt-4o-mini")
    result, shown = asyncio.run(example.ask([settings], "Weather?"))
    assert result.content == "Still sunny."
    assert "".join(shown) == "Sunny.Still sunny."
    assert [len(r.body["messages"]) for r in mock_llm.requests] == [2, 4], "the answer went into the history"


def test_the_mock_server_example_scripts_a_tool_call_a_429_and_an_answer() -> None:
    example = _load("providers/mock_server.py")
    results, requests = asyncio.run(example.scripted())
    assert [c.name for c in results[0].tool_calls] == ["f"] and results[0].reasoning == "…"
    assert results[1].content == "done" and results[1].usage.cached_tokens == 10
    assert [r.status for r in requests] == [200, 429, 200]


def test_the_session_memory_example_prunes_and_recalls(tmp_path: Path) -> None:
    example = _load("memory/session_memory.py")
    store = SessionStore(tmp_path / "sessions.db")
    sid = store.create_session()
    for n in range(40):
        store.append(sid, "input", {"text": f"note {n}: the lake house wifi password is pike-{n} " + "filler " * 30})
        store.append(sid, "response", {"content": f"noted {n}", "reasoning": None})
    store.commit()
    try:
        messages, (recalled, pruned), shown, again, hits = asyncio.run(
            example.requests(tmp_path, store, sid, "what is the lake house wifi password?")
        )
    finally:
        store.close()
    assert messages[0].role == "system" and len(messages) > 1
    assert pruned, "40 long exchanges do not fit a 2000-token window: the oldest moved to L2"
    assert isinstance(recalled, list) and shown.messages and again.messages
    assert hits == [], "no call group of the shell tool in this session"
