"""Search shows why (issue 39 item 6): a code word said once inside a long message, cooled into L3, is found
first by `hologram memory search` — above the short reply "noted #17" that shares only its number — shown with
the passage it was said in (not the message's first characters) and the match marked; layers are spelled
``L1``/``L2``/``L3`` on every hit; ``memory_recall`` quotes the same passage.

Real stores written the way the kernel writes them, the real `hologram` entry point offline (no kernel), the
cooling by the rules through `hologram memory distill`.

Mutation checks (done, file copied to /tmp and back): without the verbatim-match sort in
``MemoryInspector.search`` the first hit is the reply "noted #17" (BM25 prefers the short event); with the
passage taken from the text's start (``passage`` anchored at 0) the shown passage lacks the code word;
``memory_recall`` without ``focus`` quotes the message's start, without the code word.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from hologram.cli import main
from hologram.config.settings import MemorySettings
from hologram.memory.cold.store import ColdStore
from hologram.memory.graph.service import GraphMemory
from hologram.memory.session_memory import SessionMemory
from hologram.memory.session_records import record_of
from hologram.memory.text.search_match import contains, matched, passage, salient
from hologram.sessions import SessionStore

CODE = "AZURE-17"
FILLER = "We talked about the garden, the weather and the long drive to the coast that weekend. "
LONG = FILLER * 30 + f"Oh, and the door code for the storage unit is {CODE}, keep it safe. " + FILLER * 20


def seed(data: Path) -> tuple[str, str]:
    """A session: the long message (the code at ~2,600 of ~4,400 characters) with a reply "noted #17", and
    chatter sharing the code's parts; the long message's event in L2. Returns (session, that event's id)."""
    data.mkdir(parents=True, exist_ok=True)
    (data / "settings.toml").write_text('[memory.cooling]\nextractor = "rules"\n')
    store = SessionStore.in_data_dir(data)
    memory = SessionMemory.open(data, store, load_model=False)
    sid = store.create_session("cli")
    store.append(sid, "input", {"text": LONG}, turn="t1")
    store.append(sid, "response", {"content": "noted #17"}, turn="t1")
    chatter = [f"we moved service {n} to Azure again" for n in "abcdef"]  # "azure" is common here, "17" is not
    for i, text in enumerate(
        [*chatter, "the sky was azure all day", "I counted 17 boats", "AZURE-175 is another unit"]
    ):
        store.append(sid, "input", {"text": text}, turn=f"t{i + 2}")
        store.append(sid, "response", {"content": "ok"}, turn=f"t{i + 2}")
    long_event = record_of(store.events(sid)[0])
    assert long_event is not None
    memory.cold.put([long_event])
    asyncio.run(memory.aclose())
    store.close()
    return sid, long_event.id


def hologram(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_code_word_buried_in_a_cooled_message_is_found_first_with_its_passage(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    sid, event = seed(data)
    code, out, err = hologram(capsys, "memory", "distill", "--idle-hours", "0", "--data", str(data), "--json")
    assert code == 0 and json.loads(out)["moved"] == 1, (out, err)

    code, out, err = hologram(capsys, "memory", "search", CODE, "--data", str(data), "--json")
    assert code == 0, err
    hits = json.loads(out)["hits"]
    first = hits[0]
    assert first["event_id"] == event and first["layer"] == "L3" and first["session"] == sid, hits[:3]
    assert first["matched"] == [CODE] and CODE in first["passage"] and not LONG.startswith(first["passage"])
    assert [first["passage"][s:e] for s, e in first["marks"]] == [CODE]
    assert all(h["layer"] in ("L1", "L2", "L3") for h in hits), {h["layer"] for h in hits}
    reply = next(i for i, h in enumerate(hits) if h.get("text") == "noted #17")
    assert reply > 0 and not hits[reply]["matched"], "the number alone is not the code"
    assert all(not h["matched"] for h in hits if "AZURE-175" in h.get("text", "")), "AZURE-175 is not AZURE-17"

    code, out, err = hologram(capsys, "memory", "search", CODE, "--data", str(data))
    assert code == 0, err
    row = out.splitlines()[2]  # the header line, the table's head, then the first hit
    assert row.startswith("L3 ") and f"«{CODE}»" in row, out


def test_memory_recall_quotes_the_passage_that_matched(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    seed(data)
    assert hologram(capsys, "memory", "distill", "--idle-hours", "0", "--data", str(data))[0] == 0

    async def recall() -> str:
        store = SessionStore.in_data_dir(data)
        cold = ColdStore(data / "cold.db")
        memory = SessionMemory(store, cold, None)
        memory.graph = GraphMemory.open(data, MemorySettings(), cold)
        try:
            found = await memory.recall_l3(None, f"what was the {CODE} code about", budget_tokens=1200)
        finally:
            await memory.graph.aclose()
            cold.close()
            store.close()
        return found.note

    note = asyncio.run(recall())
    line = next(x for x in note.splitlines() if "storage unit" in x)
    assert CODE in line, note


def test_salient_tokens_and_verbatim_matches() -> None:
    assert salient("AZURE-17") == ["AZURE-17"]
    assert salient("what was my NASA badge 3b5dc6b") == ["NASA", "3b5dc6b"]
    assert salient("Where does Caroline live?") == ["Caroline"], "a name, not the question word"
    assert salient("我的车牌号是沪B62817吗") == ["B62817"], "a code written inside Chinese"
    assert salient("what did we say about pottery") == [], "common words: the ranking underneath decides"
    assert contains("the code is AZURE-17.", "azure-17") and not contains("AZURE-175", "AZURE-17")
    assert contains("车牌号是沪B62817", "B62817") and not contains("XB62817", "B62817")
    assert matched("noted #17", ["AZURE-17"]) == []


def test_a_passage_is_cut_around_the_match_at_word_boundaries() -> None:
    shown = passage(LONG, [CODE], ["storage"], width=120)
    assert shown.text.startswith("…") and shown.text.endswith("…") and len(shown.text) <= 122
    assert [shown.text[s:e] for s, e in shown.marks] == ["storage", CODE]
    inner = shown.text.strip("…")
    assert f" {inner} " in f" {' '.join(LONG.split())} ", "cut at whitespace, never inside a word"
    short = passage("I counted 17 boats", [], ["17"])
    assert short.text == "I counted 17 boats" and short.marks == [(10, 12)]
