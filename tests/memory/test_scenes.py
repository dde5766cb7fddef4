"""Scenes (hologram.memory.scenes.store): birth on the second occurrence, evidence per bucket, join, the recall
threshold, decay to deletion, declared scenes, Chinese topic keywords, a damaged scenes.db.

Real SQLite files in a temp dir, a controllable clock; the features are built the way the turn builds them.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from hologram.config.settings import SceneSettings
from hologram.memory.scenes.scene_features import similarity, topic_keywords
from hologram.memory.scenes.scene_hint import SceneHint
from hologram.memory.scenes.store import (
    JOIN,
    RECALL,
    SCENES_DB,
    SceneFeatures,
    SceneStore,
    declared_features,
    features_of,
    fingerprint,
    scene_key_problem,
)
from hologram.memory.text.tokenizer import wait_for_jieba, warm_up

DAY = 86_400.0
NOON = time.mktime((2026, 3, 2, 13, 0, 0, 0, 0, -1))  # local time: the afternoon


class Clock:
    def __init__(self, now: float = NOON) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def feats(
    channel: str | None = "qq",
    partner: str | None = "alice",
    tools: tuple[str, ...] = ("shell",),
    topic: tuple[str, ...] = ("deploy", "log", "servic"),
    tod: str | None = "afternoon",
) -> SceneFeatures:
    return SceneFeatures(channel, partner, frozenset(tools), topic, tod)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(tmp_path: Path, clock: Clock) -> Iterator[SceneStore]:
    s = SceneStore.open(tmp_path / SCENES_DB, SceneSettings(), clock=clock)
    yield s
    s.close()


def test_similarity_is_weighted_jaccard_per_feature() -> None:
    """Each feature's Jaccard, averaged by the features' weights (scene_features docstring). Mutation check
    (done): counting every keyword as an element of its own again fails the topic and the chat cases."""
    a = feats()
    assert similarity(a, a) == 1.0
    # one of three keywords differs: topic J = 2/4; (1 + 1 + .8 + .4 * .5 + .2) / 3.4
    b = feats(topic=("deploy", "log", "payment"))
    assert similarity(a, b) == pytest.approx(3.2 / 3.4)
    # another partner, no shared keyword: (1 + 0 + .8 + 0 + .2) / 3.4
    c = feats(partner="bob", topic=("x1", "y1", "z1"))
    assert similarity(a, c) == pytest.approx(2.0 / 3.4)
    # one chat on one channel whose topic moves on stays one situation: (1 + .2) / (1 + .4 + .2) >= join
    chat = feats(partner=None, tools=(), topic=("hike", "alp", "lake"))
    assert similarity(chat, feats(partner=None, tools=(), topic=("sourdough", "levain", "proof"))) == pytest.approx(
        1.2 / 1.6
    )
    # however many keywords a scene merged, topic stays 0.4 of the comparison
    wide = feats(topic=tuple(f"k{i}" for i in range(6)))
    assert similarity(wide, feats(topic=("q1", "q2", "q3"))) == pytest.approx(3.0 / 3.4)
    # a missing scalar neither matches nor counts against
    assert similarity(feats(partner=None), feats(partner=None)) == 1.0
    assert similarity(SceneFeatures(None, None, frozenset(), (), None), feats()) == 0.0


def test_a_scene_is_born_on_the_second_occurrence_with_both_turns_events(store: SceneStore, clock: Clock) -> None:
    """Mutation check (done): creating the scene on the first occurrence (no evidence step) fails here."""
    assert store.observe(feats(), ["ev_1", "ev_2"]) is None
    assert store.count() == 0
    clock.now += 3600
    scene = store.observe(feats(topic=("deploy", "log", "payment")), ["ev_3"])
    assert scene is not None and scene.strength == 2.0 and scene.key is None
    assert store.count() == 1
    assert store.events_of(scene.id) == {"ev_1", "ev_2", "ev_3"}
    assert set(scene.features.topic) == {"deploy", "log", "servic", "payment"}  # merged
    active = store.active(feats())
    assert isinstance(active, SceneHint)
    assert active.holds(["ev_1", "ev_9", "ev_3"]).tolist() == [True, False, True]
    assert active.holds([]).dtype == np.bool_


def test_creating_one_scene_keeps_the_evidence_of_other_buckets(store: SceneStore) -> None:
    """Mutation check (done): deleting all evidence when a scene is born (``DELETE FROM evidence``) fails here:
    the second bob turn then leaves evidence instead of creating bob's scene."""
    bob = feats(partner="bob", tools=("browser",), topic=("paint", "canvas", "color"))
    assert store.observe(feats(), ["ev_a1"]) is None
    assert store.observe(bob, ["ev_b1"]) is None  # another bucket
    assert fingerprint(bob) != fingerprint(feats())
    alice = store.observe(feats(), ["ev_a2"])
    assert alice is not None and store.count() == 1
    second = store.observe(bob, ["ev_b2"])
    assert second is not None and second.id != alice.id
    assert store.events_of(second.id) == {"ev_b1", "ev_b2"}


def test_join_adds_strength_and_merges_features(store: SceneStore, clock: Clock) -> None:
    store.observe(feats(), ["ev_1"])
    born = store.observe(feats(), ["ev_2"])
    assert born is not None
    other = feats(tools=("shell", "python"), topic=("deploy", "log", "payment"))
    assert similarity(other, born.features) >= JOIN
    joined = store.observe(other, ["ev_3"])
    assert joined is not None and joined.id == born.id
    assert joined.strength == pytest.approx(3.0)
    assert joined.features.tools == {"shell", "python"}
    assert "payment" in joined.features.topic
    assert store.events_of(born.id) == {"ev_1", "ev_2", "ev_3"}
    assert store.count() == 1


def test_recall_threshold_decides_the_active_scene(store: SceneStore) -> None:
    """Mutation check (done): comparing with JOIN instead of RECALL in `active` fails the 0.4 case."""
    store.observe(feats(), ["ev_1"])
    store.observe(feats(), ["ev_2"])
    scene = store.list()[0]
    # same channel and time, another partner and tool, one keyword of five: (1 + .4 * .2 + .2) / 3.4 = 0.376
    near = feats(partner="bob", tools=("web",), topic=("deploy", "x2", "y2"))
    sim = similarity(near, scene.features)
    assert RECALL <= sim < JOIN
    active = store.active(near)
    assert active is not None and active.id == scene.id and active.similarity == pytest.approx(sim)
    far = feats(partner="carol", tools=(), topic=("x3", "y3", "z3"), tod="night")
    assert similarity(far, scene.features) < RECALL
    assert store.active(far) is None


def test_strength_decays_by_half_life_and_a_scene_below_the_floor_is_deleted(tmp_path: Path, clock: Clock) -> None:
    """Mutation check (done): without `_sweep` deleting dead scenes, the count stays 1 after 140 days."""
    settings = SceneSettings(half_life_days=30, floor=0.1)
    store = SceneStore.open(tmp_path / SCENES_DB, settings, clock=clock)
    store.observe(feats(), ["ev_1"])
    scene = store.observe(feats(), ["ev_2"])
    assert scene is not None
    clock.now += 30 * DAY
    assert store.list()[0].strength == pytest.approx(1.0)  # 2.0 halved once
    clock.now += 30 * DAY
    assert store.list()[0].strength == pytest.approx(0.5)
    # 2 * 0.5**(t/30) < 0.1 once t > 30 * log2(20) ≈ 129.7 days
    clock.now = NOON + 129 * DAY
    assert store.count() == 1
    clock.now = NOON + 131 * DAY
    assert store.count() == 0
    assert store.active(feats()) is None
    store.close()
    with sqlite3.connect(tmp_path / SCENES_DB) as db:  # gone from the file too, with its tags
        assert db.execute("SELECT count(*) FROM scenes").fetchone() == (0,)
        assert db.execute("SELECT count(*) FROM scene_events").fetchone() == (0,)


def test_a_join_restarts_decay_from_the_decayed_strength(store: SceneStore, clock: Clock) -> None:
    store.observe(feats(), ["ev_1"])
    store.observe(feats(), ["ev_2"])
    clock.now += 30 * DAY
    joined = store.observe(feats(), ["ev_3"])
    assert joined is not None and joined.strength == pytest.approx(2.0)  # 1.0 decayed + 1


def test_old_evidence_expires_and_gives_no_scene(store: SceneStore, clock: Clock) -> None:
    store.observe(feats(), ["ev_1"])
    clock.now += 31 * DAY  # more than one half-life later: a first occurrence no longer counts
    assert store.observe(feats(), ["ev_2"]) is None
    assert store.count() == 0
    assert store.observe(feats(), ["ev_3"]) is not None


def test_declared_scenes_are_created_at_once_from_the_key_only(store: SceneStore) -> None:
    key = "chan:qq/peer:group_1"
    assert declared_features(key) == SceneFeatures("qq", "group_1", frozenset(), (), None)
    assert store.active(feats(), declared=key) is None  # not known yet
    first = store.observe(feats(), ["ev_1"], declared=key)
    assert first is not None and first.key == key and first.strength == 1.0
    assert first.features == declared_features(key)  # the turn's own features do not enter
    again = store.observe(feats(partner="zed", topic=("a1", "b1", "c1")), ["ev_2"], declared=key)
    assert again is not None and again.id == first.id and again.strength == pytest.approx(2.0)
    active = store.active(SceneFeatures(None, None, frozenset(), (), None), declared=key)
    assert active is not None and active.id == first.id and active.key == key
    assert active.holds(["ev_1", "ev_2", "ev_3"]).tolist() == [True, True, False]
    # a turn that declares nothing is matched against learned scenes only
    assert store.active(declared_features(key)) is None
    assert store.count() == 1


@pytest.mark.parametrize(
    "key",
    ["chan:qq", "chan:qq/peer:group_1", "chan:mail.v2/peer:alice@example.org", "chan:qq/peer:群一"],
)
def test_good_scene_keys(key: str) -> None:
    assert scene_key_problem(key) is None


@pytest.mark.parametrize(
    "key", ["", "qq/peer:1", "chan:", "chan:q q", "chan:qq/peer:", "chan:qq/peer:a/b", "chan:qq/user:1", "chan:qq/"]
)
def test_bad_scene_keys_name_the_grammar(key: str) -> None:
    problem = scene_key_problem(key)
    assert problem is not None and "chan:<name>[/peer:<id>]" in problem
    with pytest.raises(ValueError, match="chan:qq/peer:group_1"):
        declared_features(key)


def test_chinese_topic_keywords_come_from_jieba() -> None:
    """Mutation check (done): dropping the "inside a chosen keyword" rule makes 北京 and 大学 crowd the topic."""
    warm_up()
    assert wait_for_jieba(60)
    words = topic_keywords("我想明天去北京大学看看图书馆的展览，北京大学的图书馆很大")
    assert words[:2] == ("北京大学", "图书馆")
    assert len(words) == 3 and not {"北京", "大学", "图书", "书馆"} & set(words)
    assert all(len(w) > 1 for w in words)


def test_topic_keywords_prefer_rare_terms_by_the_stores_idf(store: SceneStore) -> None:
    """Ranking is tf x BM25 IDF over the inputs the store has seen: a word in every input sinks."""
    for i in range(5):
        store.observe(feats(), [f"ev_{i}"], text=f"please deploy project{i} today")
    f = store.features(channel="qq", partner=None, tools=[], text="please deploy the invoice generator")
    assert f.topic[:2] == ("generat", "invoic") or set(f.topic[:2]) == {"generat", "invoic"}
    assert "deploy" not in f.topic[:2]


def test_features_of_reads_the_local_time_of_day() -> None:
    def at(hour: int) -> str | None:
        ts = time.mktime((2026, 3, 2, hour, 30, 0, 0, 0, -1))
        return features_of(channel="cli", partner=None, tools=["shell"], text="hello", ts=ts).time_of_day

    assert [at(h) for h in (0, 5, 6, 11, 12, 17, 18, 23)] == [
        "night", "night", "morning", "morning", "afternoon", "afternoon", "evening", "evening",
    ]  # fmt: skip


def test_scenes_survive_a_reopen(tmp_path: Path, clock: Clock) -> None:
    path = tmp_path / SCENES_DB
    store = SceneStore.open(path, SceneSettings(), clock=clock)
    store.observe(feats(), ["ev_1"])
    store.close()
    store = SceneStore.open(path, SceneSettings(), clock=clock)  # the evidence is on disk
    scene = store.observe(feats(), ["ev_2"])
    store.close()
    store = SceneStore.open(path, SceneSettings(), clock=clock)
    assert scene is not None and [s.id for s in store.list()] == [scene.id]
    assert store.events_of(scene.id) == {"ev_1", "ev_2"}
    store.close()


def test_a_damaged_file_is_moved_aside_with_a_warning(
    tmp_path: Path, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    """Mutation check (done): without the move-aside branch the open raises DamagedDatabaseError."""
    path = tmp_path / SCENES_DB
    store = SceneStore.open(path, SceneSettings(), clock=clock)
    store.observe(feats(), ["ev_1"])
    store.close()
    raw = bytearray(path.read_bytes())
    raw[:16] = b"garbage garbage!"
    path.write_bytes(bytes(raw))
    with caplog.at_level(logging.WARNING, logger="hologram.memory"):
        store = SceneStore.open(path, SceneSettings(), clock=clock)
    assert any("scenes.db was damaged" in r.getMessage() for r in caplog.records)
    aside = list(tmp_path.glob("scenes.db.damaged-*"))
    assert len(aside) == 1 and aside[0].read_bytes()[:16] == b"garbage garbage!"
    assert store.count() == 0 and store.observe(feats(), ["ev_2"]) is None  # a new, working store
    store.close()


def test_a_damaged_page_the_open_reads_is_set_aside_not_raised(
    tmp_path: Path, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    """A damaged ``meta`` page — past the header check and the ``count(*)`` probes, read by the store's own
    open — is set aside like a damaged header; it was a ``sqlite3.DatabaseError`` traceback out of `hologram
    up` (issue 42). Mutation check (done): `_connect` without its reads — the open raises."""
    path = tmp_path / SCENES_DB
    store = SceneStore.open(path, SceneSettings(), clock=clock)
    store.observe(feats(), ["ev_1"])
    store.close()
    db = sqlite3.connect(path)
    page = int(db.execute("SELECT rootpage FROM sqlite_master WHERE name = 'meta'").fetchone()[0])
    size = int(db.execute("PRAGMA page_size").fetchone()[0])
    db.close()
    raw = bytearray(path.read_bytes())
    raw[(page - 1) * size : (page - 1) * size + 8] = b"\xff" * 8
    path.write_bytes(bytes(raw))
    with caplog.at_level(logging.WARNING, logger="hologram.memory"):
        store = SceneStore.open(path, SceneSettings(), clock=clock)
    assert any("scenes.db was damaged" in r.getMessage() for r in caplog.records)
    assert len(list(tmp_path.glob("scenes.db.damaged-*"))) == 1
    assert store.count() == 0  # a new, working store
    store.close()


def test_a_long_lived_scene_still_takes_a_turn_of_its_situation_sharing_one_keyword(store: SceneStore) -> None:
    """The merged topic is bounded (two turns' worth): after many joins with new words each time, a turn in
    the same situation sharing one keyword with the last turn still joins. Mutation check (done): keeping 12
    keywords (``MAX_TOPIC_MERGED = 12``) fails here — the scene is diluted below the join threshold."""
    first = ("k0", "z0a", "z0b")
    store.observe(feats(topic=first), ["ev_0"])
    scene = store.observe(feats(topic=first), ["ev_1"])
    assert scene is not None
    for i in range(1, 10):  # each turn shares one keyword with the one before, two words are new
        joined = store.observe(feats(topic=(f"k{i - 1}", f"k{i}", f"z{i}")), [f"ev_j{i}"])
        assert joined is not None and joined.id == scene.id, i
    assert len(store.list()[0].features.topic) == 6 and store.count() == 1


def test_holds_looks_tags_up_when_asked_and_prefers_nothing_once_closed(tmp_path: Path, clock: Clock) -> None:
    """A busy scene's tags are not loaded per turn: `holds` reads the asked ids (in chunks of 500), sees tags
    written after the scene became active, and answers all-False (no exception) once the store is closed."""
    store = SceneStore.open(tmp_path / SCENES_DB, SceneSettings(), clock=clock)
    key = "chan:qq/peer:g"
    store.observe(declared_features(key), [f"ev_{i}" for i in range(1200)], declared=key)
    active = store.active(declared_features(key), declared=key)
    assert active is not None
    asked = [f"ev_{i}" for i in range(0, 1200, 2)] + ["ev_late", "ev_other"]
    store.observe(declared_features(key), ["ev_late"], declared=key)
    assert active.holds(asked).tolist() == [True] * 600 + [True, False]
    store.close()
    assert active.holds(["ev_1", "ev_2"]).tolist() == [False, False]
