"""Guards on counts over a short soak of the default graph (every shipped plugin, a real `hologram up`,
the strict mock, turns through `hologram.clients.TurnClient` as a channel sends them):

- the one-word request ("hello" in a new session) stays within its documented size in bytes, as the mock
  receives it (the tool schemas are nearly all of it), and still offers every shipped tool: its schema, or
  its name in ``tools_load``'s description when the manifest defers it (agent/tools.py);
- over tool-using turns in several sessions, with pruning and cold context active (a small context window),
  after a warm-up: open file descriptors of the whole process tree do not grow at all; the Python allocator's
  block count (``kernel.allocated_blocks`` in `status`) grows by at most a documented number per turn; PSS
  of the tree grows by at most a documented (generous) fraction.

Bounds live in docs/guards.md (with what they were measured at); no time is asserted.

Mutation checks (done):
- a bloated tool schema (500 more characters in one description of manifests/files.toml: 5,669 bytes
  against 5,600) makes `test_one_word_request_within_documented_size` fail; so do deferral switched off
  (``deferred=False`` in `ToolRegistry.snapshot`: 9,546 bytes) and the deferred tools neither sent nor named
  (``self.waiting`` left out of ``tools_load``'s description);
- a deliberate leak — `TurnHub.emit` appending every event to a module-level list — makes
  `test_soak_does_not_grow` fail on the block count (about 2,200 blocks a turn against ~180) and on PSS
  (+16% against ~5%); a quarter of that leak (every fourth event kept) measured 559 blocks a turn, which
  the first bound (600) let through and the bound since the soak branch (250; 20-85 measured) does not;
- an fd leak — `os.open("/dev/null", os.O_RDONLY)`, never closed, for each ``turn.ended`` event in
  `TurnHub.emit` — fails it on the descriptor count (295 → 394).
- ``[memory] embedder`` defaulting to "onnx" again fails `test_the_kernel_embeds_without_onnxruntime` on the
  model's name; `_preload` importing onnxruntime whatever the build fails it on the kernel's mappings (10
  naming onnxruntime against 0); the int8 build reading its rows through a mapping (``rows="mmap"``) fails it
  on the embedding table's mapping.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import tomli

from hologram.clients import TurnClient
from hologram.kernel.control import call
from mock_llm import MockLLM

from .documented import GUARDS_MD, bound
from .kernel import GuardKernel

pytestmark = pytest.mark.slow

TURNS, WARM_UP, SESSIONS = 150, 50, 4
TURN_DEADLINE_S = 30  # a failure bound (a wedged kernel fails the guard), not an expected duration
# A paragraph-long answer streamed in the mock's 4-character chunks: ~500 delta events a turn, as a real model
# sends them, so that a leak of events is a leak of many objects.
ANSWER = ("The workspace holds these files, listed above. " * 50)[:2000]
TOOL_TURN = {
    "by_last_role": {
        "user": {"tool_calls": [{"id": "call-{n}", "name": "files_list", "arguments": "{}"}]},
        "tool": {"content": ANSWER},
    }
}


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory, mock: MockLLM) -> Iterator[GuardKernel]:
    k = GuardKernel(tmp_path_factory.mktemp("guard"), mock)
    k.start()
    yield k
    k.stop()


async def _turn(client: TurnClient, text: str, session: str | None = None) -> None:
    stream = await client.start(text, session=session)
    ended = await asyncio.wait_for(stream.result(), TURN_DEADLINE_S)
    assert ended.stop_reason == "answer", f"turn {text!r} ended {ended.stop_reason}: {ended.errors}"


def test_one_word_request_within_documented_size(kernel: GuardKernel, mock: MockLLM) -> None:
    mock.reset()
    mock.script([{"content": "Hi!"}])

    async def hello() -> None:
        async with await TurnClient.connect(kernel.data) as client:
            await _turn(client, "hello")

    asyncio.run(hello())
    [request] = mock.requests
    size = int(request.headers["content-length"])  # the bytes on the wire
    tools = {t["function"]["name"]: t["function"] for t in request.body.get("tools") or []}
    limit = bound("one_word_request_bytes")
    shipped = {t["name"] for p in tomli.loads(kernel.lock.read_text())["plugin"] for t in p.get("tools", [])}
    named = set(re.findall(r"[\w-]+", tools["tools_load"]["description"])) if "tools_load" in tools else set()
    assert len(shipped) >= 19, f"every shipped plugin should be locked: {sorted(shipped)}"
    assert not (missing := shipped - tools.keys() - named), f"shipped tools neither sent nor named: {missing}"
    assert size <= limit, (
        f"the one-word request is {size} bytes (≈ {size // 4} tokens), over the {limit:.0f} documented in "
        f"{GUARDS_MD} (one_word_request_bytes). The tool schemas are most of it: shorten the description that "
        f"grew, or, if the growth is worth its tokens on every request, raise the bound there and say why."
    )


def test_one_word_request_with_a_hundred_skills(kernel: GuardKernel, mock: MockLLM) -> None:
    """A hundred agent skills in <data>/skills, each with a long description: the skills plugin's listing in
    the system prompt is capped (``max_listing_chars``), so the one-word request stays within its own bound —
    issue 22's 1.5k tokens. The skills are removed after (the plugin reads the folder every turn).
    Mutation check (done): the listing uncapped (every skill with its description) makes it 52,106 bytes."""
    skills = kernel.data / "skills"
    for i in range(100):
        (skills / f"skill-{i:03d}").mkdir(parents=True)
        description = f"Skill {i}: what it does and when to use it, in words enough to fill its line. " * 6
        (skills / f"skill-{i:03d}" / "SKILL.md").write_text(
            f"---\nname: skill-{i:03d}\ndescription: {description}\n---\nDo it.\n"
        )
    try:
        mock.reset()
        mock.script([{"content": "Hi!"}])

        async def hello() -> None:
            async with await TurnClient.connect(kernel.data) as client:
                await _turn(client, "hello")

        asyncio.run(hello())
    finally:
        shutil.rmtree(skills)
    [request] = mock.requests
    size = int(request.headers["content-length"])
    system = request.body["messages"][0]["content"]
    assert "- skill-000: Skill 0: what it does" in system and "… and " in system, system  # listed, capped
    limit = bound("one_word_request_with_skills_bytes")
    assert size <= limit, (
        f"the one-word request with 100 skills is {size} bytes (≈ {size // 4} tokens), over the {limit:.0f} "
        f"documented in {GUARDS_MD} (one_word_request_with_skills_bytes): the skills listing grew past its cap "
        f"([plugins.skills] max_listing_chars) or the request did."
    )


def test_soak_does_not_grow(kernel: GuardKernel, mock: MockLLM) -> None:
    mock.reset()
    mock.script([], default=TOOL_TURN)
    samples: dict[str, tuple[int, int, dict[int, list[str]]]] = {}

    def sample(name: str) -> None:
        blocks = int(call(kernel.data, "status")["kernel"]["allocated_blocks"])
        samples[name] = (blocks, kernel.pss_kb(), kernel.fds())

    async def soak() -> None:
        async with await TurnClient.connect(kernel.data) as client:
            for i in range(TURNS):
                if i == WARM_UP:
                    sample("warm")
                await _turn(client, f"list the workspace files ({i})", session=f"guard-soak-{i % SESSIONS}")
        sample("end")

    asyncio.run(soak())
    assert len(mock.requests) == 2 * TURNS and not mock.rejections, "every turn: a tool call, then the answer"
    (blocks0, pss0, fds0), (blocks1, pss1, fds1) = samples["warm"], samples["end"]
    turns = TURNS - WARM_UP

    problems = []
    grown = {pid: sorted((Counter(fds1[pid]) - Counter(fds0.get(pid, []))).elements()) for pid in fds1}
    if sum(map(len, fds1.values())) > sum(map(len, fds0.values())):
        problems.append(
            f"open file descriptors grew over {turns} turns after warm-up: {sum(map(len, fds0.values()))} → "
            f"{sum(map(len, fds1.values()))}; new, by pid: { {pid: new[:5] for pid, new in grown.items() if new} }"
        )
    per_turn = (blocks1 - blocks0) / turns
    if per_turn > (limit := bound("soak_blocks_per_turn")):
        problems.append(
            f"the kernel's allocated blocks grew {blocks0} → {blocks1} over {turns} turns after warm-up: "
            f"{per_turn:.0f} a turn, over the {limit:.0f} documented (soak_blocks_per_turn): something keeps "
            f"objects per turn (an event, a request, a result)"
        )
    growth = (pss1 - pss0) / pss0
    if growth > (limit := bound("soak_pss_growth_percent") / 100):
        problems.append(
            f"PSS of the kernel's process tree grew {pss0 // 1024} → {pss1 // 1024} MB ({growth:+.1%}) over "
            f"{turns} turns after warm-up, over the {limit:.0%} documented (soak_pss_growth_percent)"
        )
    assert not problems, f"the soak grew (bounds in {GUARDS_MD}):\n- " + "\n- ".join(problems)


EMBED_DEADLINE_S = 120  # a failure bound for the model's load and first use, not an expected duration


def test_the_kernel_embeds_without_onnxruntime(kernel: GuardKernel, mock: MockLLM) -> None:
    """After `hologram up` and turns on the default graph, the kernel has embedded text with the default
    build (the int8 graph in numpy) and has mapped nothing of onnxruntime — its ~21 MB of libraries stayed out
    (docs/performance.md) — nor the 65 MB embedding table, which it reads row by row."""
    mock.reset()
    mock.script([], default={"content": "Noted."})

    def memory() -> dict[str, object]:
        section: dict[str, object] = call(kernel.data, "status")["memory"]
        return section

    async def turns() -> None:
        async with await TurnClient.connect(kernel.data) as client:
            deadline = time.monotonic() + EMBED_DEADLINE_S
            i = 0
            # the model loads after the first answer (hologram/kernel/preload.py); later turns' events get indexed
            while not (memory().get("texts_embedded") or 0) and time.monotonic() < deadline:
                await _turn(client, f"my favourite colour is teal, and 我喜欢喝绿茶 ({i})", session="guard-embed")
                i += 1
                # what a turn leaves to index is embedded in the background: wait for it, not a fixed time
                for _ in range(50):
                    if memory().get("texts_embedded"):
                        break
                    await asyncio.sleep(0.1)

    asyncio.run(turns())
    section = memory()
    assert section["embedder"] == "use-multilingual-v3/int8-numpy", section
    assert int(section["texts_embedded"] or 0) >= 1, f"no text was embedded within {EMBED_DEADLINE_S} s: {section}"
    pid = int(call(kernel.data, "status")["kernel"]["pid"])
    maps = Path(f"/proc/{pid}/maps").read_text().splitlines()
    onnxruntime = [line.split()[-1] for line in maps if "onnxruntime" in line]
    table = [line for line in maps if line.endswith("/weights.bin")]
    assert len(onnxruntime) <= bound("kernel_onnxruntime_mappings"), (
        f"the kernel mapped onnxruntime ({len(onnxruntime)} mappings: {sorted(set(onnxruntime))[:3]}): something "
        f"imported it though the default embedder runs without it ({GUARDS_MD}, kernel_onnxruntime_mappings)"
    )
    assert len(table) <= bound("kernel_table_mappings"), f"the embedding table is mapped: {table[:2]}"
