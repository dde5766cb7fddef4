"""What a request remembers for the next one gives the answers a fresh computation gives, and is used.

Two memos keep a long session's requests from redoing work over the whole session (issue 22, the soak):

- which layer holds each event (`hologram.memory.layers.Layers`, keyed by the cold store's
  ``membership_stamp``): a request asks the cold store only about events added since the session's last
  request, and updates what it moved itself; any other change of the session's L2/L3 membership — a recall
  by ``coldcontext_query``, cooling into L3 — makes the next request ask about every event again;
- the sealed segments' cosines to the last dense query (`SessionIndex._cosine`): the requests of one turn
  share the input, and a segment never changes; kept for one session at a time.

Each test checks the answer against a fresh computation *and* counts the work the memo saves, so it proves it
reached the path it claims. Mutation checks (done): `Layers.of` that ignores the stamp (keeps its answer after
a recall) turns ``test_layers_follow_recalls_and_cooling`` red; `moved_to_l2` that drops its answer instead
of updating it turns ``test_layers_ask_only_about_new_events`` red (every request asks about the whole
session); ``ColdStore.remove`` without bumping the session's stamp turns the recall test red; a cosine memo
keyed without the query's vector turns ``test_sealed_cosines_are_kept_for_the_turns_query`` red (a second
query gets the first one's cosines), and so does one never dropped for the session not in use.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import hologram.memory.index.session_index as session_index
from hologram.memory.cold.overflow import NOTE_ITEMS
from hologram.memory.cold.store import ColdStore
from hologram.memory.session_memory import SessionMemory
from hologram.memory.session_records import recall_note

from .test_sealed_index import TOPICS, _memory, _settle, _turns
from .test_session_memory import window_for


class _Lookups:
    """Sizes of the hash arrays a cold store is asked about (L2 membership)."""

    def __init__(self, cold: ColdStore, patch: pytest.MonkeyPatch) -> None:
        self.sizes: list[int] = []
        real = cold.holds_hashes

        def counted(hashes: np.ndarray) -> np.ndarray:
            self.sizes.append(int(hashes.size))
            return real(hashes)

        patch.setattr(cold, "holds_hashes", counted)


@pytest.fixture
def patch() -> Iterator[pytest.MonkeyPatch]:
    with pytest.MonkeyPatch.context() as p:
        yield p


def _fresh(mem: SessionMemory, sid: str) -> tuple[np.ndarray, np.ndarray]:
    index = mem._sessions[sid].index
    with index.reading():
        hashes = index.hashes
        return mem.cold._ids.contains(hashes), mem.cold._l3.contains(hashes)


def _layers(mem: SessionMemory, sid: str) -> tuple[np.ndarray, np.ndarray]:
    state = mem._sessions[sid]
    with state.index.reading():
        return mem._layers(sid, state)


def test_layers_ask_only_about_new_events(tmp_path: Path, patch: pytest.MonkeyPatch) -> None:
    mem = _memory(tmp_path, "m", sealed=True)
    for sid in ("s1", "s2"):
        mem.store.create_session("cli", sid)
    lookups = _Lookups(mem.cold, patch)

    async def run() -> None:
        moved = 0
        for t in range(16):  # two sessions interleaved: the other's moves must not cost this one a full lookup
            for sid in ("s1", "s2"):
                got = await _turns([mem], sid, t, 1)
                moved += sum(len(p.pruned_seqs) for p in got)
        assert moved > 0, "the test's premise: events moved to L2"
        n = len(mem._sessions["s1"].index)
        lookups.sizes.clear()
        await _turns([mem], "s1", 16, 1)  # 4 events and 4 requests, each moving what lost
        assert lookups.sizes and max(lookups.sizes) <= 4, (
            f"a request asked about {max(lookups.sizes)} of the session's {n} events, not just the new ones"
        )
        in_cold, in_l3 = _layers(mem, "s1")
        fresh_cold, fresh_l3 = _fresh(mem, "s1")
        assert in_cold.tolist() == fresh_cold.tolist() and in_l3.tolist() == fresh_l3.tolist()

    asyncio.run(run())
    asyncio.run(mem.aclose())


def test_layers_follow_recalls_and_cooling(tmp_path: Path, patch: pytest.MonkeyPatch) -> None:
    mem = _memory(tmp_path, "m", sealed=True)
    mem.store.create_session("cli", "s1")
    lookups = _Lookups(mem.cold, patch)

    async def run() -> None:
        await _turns([mem], "s1", 0, 12)
        in_cold, _ = _layers(mem, "s1")
        held = [mem._sessions["s1"].index.id_at(i) for i in np.flatnonzero(in_cold).tolist()]
        assert len(held) >= 4, "the test's premise: L2 holds events of the session"
        # a recall by coldcontext_query: the events leave L2 (the tool's own path)
        mem.cold.remove(held[:2])
        lookups.sizes.clear()
        in_cold, _ = _layers(mem, "s1")
        n = len(mem._sessions["s1"].index)
        assert lookups.sizes == [n], "after a recall every event is asked about again"
        assert in_cold.tolist() == _fresh(mem, "s1")[0].tolist()
        # cooling into L3
        mem.cold.remove(held[2:4], into_l3=True)
        in_cold, in_l3 = _layers(mem, "s1")
        fresh_cold, fresh_l3 = _fresh(mem, "s1")
        assert in_l3.sum() == 2 and in_l3.tolist() == fresh_l3.tolist()
        assert in_cold.tolist() == fresh_cold.tolist()
        # and the next requests rank with it: what L3 holds is never sent again
        got = await _turns([mem], "s1", 12, 2)
        l3_seqs = set(mem._sessions["s1"].index.seqs[np.flatnonzero(in_l3)].tolist())
        assert not any(l3_seqs & set(p.seqs) for p in got)

    asyncio.run(run())
    asyncio.run(mem.aclose())


def test_sealed_cosines_are_kept_for_the_turns_query(tmp_path: Path, patch: pytest.MonkeyPatch) -> None:
    mem = _memory(tmp_path, "m", sealed=True)
    for sid in ("s1", "s2"):
        mem.store.create_session("cli", sid)
    computed: list[int] = []
    real = session_index._segment_cosines

    def counted(seg: session_index.Segment, dense: np.ndarray) -> np.ndarray:
        computed.append(int(seg["matrix"].shape[0]))
        return real(seg, dense)

    patch.setattr(session_index, "_segment_cosines", counted)

    async def run() -> None:
        await _turns([mem], "s1", 0, 10)
        await _turns([mem], "s2", 0, 10)
        await _settle(mem, "s1")
        index = mem._sessions["s1"].index
        assert index.segments >= 2, "the test's premise: sealed segments"

        async def preview(text: str) -> list[int]:
            out = await mem.preview("s1", text, window_tokens=window_for(260), fixed_tokens=0)
            return out.seqs

        computed.clear()
        first = await preview("glacier hiking in Iceland")
        assert len(computed) == index.segments, "the first request scores every segment"
        computed.clear()
        again = await preview("glacier hiking in Iceland")
        assert computed == [] and again == first, "the same input: the segments' cosines are reused"
        await preview("the jazz concert tickets")
        assert len(computed) == index.segments, "another input: scored again"
        # remembered or not, the scores are the same
        state = mem._sessions["s1"]
        with index.reading():
            queries = [await mem._query("s1", state, text, now=None, current_input=None)
                       for text in ("glacier hiking in Iceland", "the jazz concert tickets")]  # fmt: skip
            for query in (*queries, *queries[::-1]):  # each after the other's cosines were kept
                remembered = index.scores(query)
                index.forget_cosines()
                fresh = index.scores(query)
                assert remembered.tolist() == fresh.tolist() == index.scores(query).tolist()
        # another session's request drops s1's cosines: one session's are kept at a time
        assert index._sealed_cosines is not None
        await mem.preview("s2", "anything", window_tokens=window_for(260), fixed_tokens=0)
        assert index._sealed_cosines is None

    asyncio.run(run())
    asyncio.run(mem.aclose())


def test_the_recall_note_counts_what_it_does_not_quote(tmp_path: Path) -> None:
    """The recalled events' ids and tokens come from the index, and only the quoted ones are rebuilt as
    records: the note must say what a note made from every recalled record says. (Mutation check, done:
    tokens summed without the per-message overhead taken off turns this red.)"""
    mem = _memory(tmp_path, "m", sealed=True)
    mem.store.create_session("cli", "s1")

    async def run() -> None:
        got = []
        for t in range(64):  # twelve subjects in turn: each request recalls the old turns of its own
            topic = TOPICS[t % len(TOPICS)]
            mem.store.append("s1", "input", {"text": f"turn {t}: tell me about {topic}"})
            mem.store.append("s1", "response", {"content": f"About {topic}: noted, turn {t}."})
            await _settle(mem, "s1")
            got.append(await mem.prepare("s1", topic, window_tokens=window_for(300), fixed_tokens=0))
        got = [p for p in got if len(p.recalled_seqs) > NOTE_ITEMS]
        assert got, "the test's premise: requests that recall more events than a note quotes"
        state = mem._sessions["s1"]
        for prepared in got[-3:]:
            with state.index.reading():
                positions = [state.index.position_of_seq(s) for s in prepared.recalled_seqs]
                records = mem._records_at("s1", state, [p for p in positions if p is not None])
            assert [r.id for r in records] == prepared.recalled
            assert prepared.note is not None and recall_note(records) in (prepared.note.content or "")

    asyncio.run(run())
    asyncio.run(mem.aclose())
