"""Scenes: the recurring situations a kernel works in, learned from turns or declared by plugins, and which
memory events happened in which scene — so recall can prefer memory from the scene a turn is in.

The features and their similarity are :mod:`hologram.memory.scenes.scene_features` (re-exported here); this is the
store, ``<data>/scenes.db`` (SQLite, WAL, ``synchronous=FULL``; docs/scenes.md has the whole story):

* **Birth on the second occurrence.** A turn that joins no scene leaves *evidence* under its bucket (the
  features' :func:`fingerprint`); when a later turn falls into a bucket that holds evidence, the scene is born
  from both (strength 2) and the first turn's events are tagged too. Evidence is kept per bucket: a scene born
  from one bucket leaves every other bucket's evidence where it is. Evidence older than one half-life is
  dropped (a situation seen once a season is no scene).
* **Join** at similarity ≥ :data:`JOIN` (0.5): strength + 1, features merged (:func:`merge`), the turn's
  events tagged.
* **Active** (what recall is told, :meth:`SceneStore.active`) at similarity ≥ :data:`RECALL` (0.35): the most
  similar scene, ties to the stronger.
* **Decay**: strength halves every ``half_life_days`` (``[memory.scenes]``, default 30) without a join; a
  scene whose strength falls below ``floor`` (0.1) is deleted with its event tags. Strength is stored with the
  time it was last set and decayed when read, so nothing runs in the background.
* **Declared** scenes (``chan:qq/peer:group_1``, :func:`declared_features`) are known at once: the first turn
  that declares one creates it (strength 1), every later one joins it; their features come from the key only.
  A turn that declares nothing is matched against learned scenes only — a declared scene is joined by
  declaring it.

``scene_events`` tags events (memory event ids, ``record_of(event).id``) with the scene they happened in;
:class:`ActiveScene` (a :class:`~hologram.memory.scenes.scene_hint.SceneHint`) answers recall's one question, "which
of these events happened here?", by looking the asked ids up (a read-only connection of its own: recall asks on
the event loop, and must never wait for a write's fsync).

A damaged file is moved aside (``scenes.db.damaged-<time>``) with a warning and a new one started, as
``vectors.db`` does: scenes are learned again, nothing a person wrote is lost. Thread-safe (one connection, a
lock): the turn calls it through ``asyncio.to_thread``. The clock is injectable for tests.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from hologram.config.settings import SceneSettings
from hologram.memory.scenes.scene_features import (
    WEIGHTS,
    Elements,
    SceneFeatures,
    bm25_idf,
    declared_features,
    elements,
    features_of,
    fingerprint,
    merge,
    scene_key_problem,
    similarity,
    similarity_of,
)
from hologram.memory.text.bounds import indexed
from hologram.memory.text.tokenizer import tokenize
from hologram.storage import idle_cache
from hologram.storage.caches import CACHES
from hologram.storage.dbfile import open_checked, open_or_set_aside
from hologram.storage.sqlmem import SMALL_CACHE_KIB, limit_cache

__all__ = [
    "JOIN",
    "RECALL",
    "SCENES_DB",
    "WEIGHTS",
    "ActiveScene",
    "Scene",
    "SceneFeatures",
    "SceneStore",
    "declared_features",
    "features_of",
    "fingerprint",
    "scene_key_problem",
    "similarity",
]

log = logging.getLogger("hologram.memory")

SCENES_DB = "scenes.db"
JOIN = 0.5  # an observation this similar to a scene joins it
RECALL = 0.35  # a scene this similar to a turn is the turn's active scene
BORN_STRENGTH = 2.0  # a learned scene is born from two occurrences
DECLARED_STRENGTH = 1.0  # a declared scene is born from one
_DAY = 86_400.0
_SCHEMA = """
CREATE TABLE IF NOT EXISTS scenes (
    id TEXT PRIMARY KEY,
    key TEXT UNIQUE,
    features TEXT NOT NULL,
    strength REAL NOT NULL,
    last_seen REAL NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS scene_events (
    scene TEXT NOT NULL,
    event TEXT NOT NULL,
    PRIMARY KEY (scene, event)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS evidence (
    bucket TEXT PRIMARY KEY,
    features TEXT NOT NULL,
    last_seen REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS evidence_age ON evidence (last_seen);
CREATE TABLE IF NOT EXISTS evidence_events (
    bucket TEXT NOT NULL,
    event TEXT NOT NULL,
    PRIMARY KEY (bucket, event)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS terms (
    term TEXT PRIMARY KEY,
    df INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS meta (
    name TEXT PRIMARY KEY,
    value REAL NOT NULL
) WITHOUT ROWID;
"""


@dataclass(frozen=True)
class Scene:
    """A scene as stored; `strength` is decayed to the store's clock when read."""

    id: str
    key: str | None
    features: SceneFeatures
    strength: float
    last_seen: float

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "key": self.key,
            "strength": round(self.strength, 4),
            "last_seen": self.last_seen,
            "features": self.features.to_json(),
        }


@dataclass(frozen=True)
class ActiveScene:
    """The scene a turn is in, as recall sees it (satisfies `SceneHint`): which events happened in it. The
    tags are looked up when asked — a busy scene has 100,000 of them, and loading them all cost ~350 ms a turn
    where recall asks about a few hundred candidates (~0.2 ms, on a read-only connection that never waits for
    the store's writes)."""

    id: str
    key: str | None
    similarity: float
    strength: float
    lookup: Callable[[str, Sequence[str]], set[str]] = field(repr=False, compare=False)

    def holds(self, event_ids: Sequence[str]) -> np.ndarray:
        found = self.lookup(self.id, event_ids) if len(event_ids) else set()
        return np.fromiter((e in found for e in event_ids), dtype=bool, count=len(event_ids))


class SceneStore:
    """``scenes.db`` (module docstring). Scenes are few (decay deletes the unused) and kept in memory too;
    event tags and evidence live in SQLite only."""

    def __init__(self, path: Path, settings: SceneSettings, *, clock: Callable[[], float] = time.time) -> None:
        self.path = path
        self.settings = settings
        self.clock = clock
        self._lock = threading.Lock()
        self._db = open_or_set_aside(path, self._connect, lost=CACHES[SCENES_DB], log=log)
        self._reader = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
        limit_cache(self._reader, SMALL_CACHE_KIB)
        self._reader_lock = threading.Lock()  # never held while writing: `ActiveScene.holds` runs on the loop
        idle_cache.register(self.release_cache)
        self._scenes: dict[str, Scene] = {}
        self._elements: dict[str, tuple[Elements, float]] = {}
        self._expiry: dict[str, float] = {}
        self._swept_evidence = -math.inf
        self._load()
        row = self._db.execute("SELECT value FROM meta WHERE name = 'docs'").fetchone()
        self._docs = int(row[0]) if row else 0

    def _load(self) -> None:
        """The scenes as stored (at open, and after a write failed: memory never runs ahead of the file)."""
        self._scenes = {}
        self._elements = {}
        self._expiry = {}
        for sid, key, feats, strength, seen in self._db.execute(
            "SELECT id, key, features, strength, last_seen FROM scenes"
        ):
            features = SceneFeatures.from_json(json.loads(feats))
            self._remember(Scene(str(sid), key, features, float(strength), float(seen)))

    def _remember(self, scene: Scene) -> None:
        """Keep `scene` in memory with its elements (one turn is compared with every scene) and the time its
        strength falls below the floor: ``s · 0.5^(age / half-life) < floor`` ⇔ ``age > half-life · log2(s /
        floor)`` — so a sweep compares times, not powers."""
        self._scenes[scene.id] = scene
        self._elements[scene.id] = elements(scene.features)
        half_life = self.settings.half_life_days * _DAY
        ratio = scene.strength / self.settings.floor
        self._expiry[scene.id] = scene.last_seen + (half_life * math.log2(ratio) if ratio > 1 else 0.0)

    def _forget(self, sid: str) -> None:
        self._scenes.pop(sid, None)
        self._elements.pop(sid, None)
        self._expiry.pop(sid, None)

    @classmethod
    def open(cls, path: Path, settings: SceneSettings, *, clock: Callable[[], float] = time.time) -> SceneStore:
        return cls(Path(path), settings, clock=clock)

    @staticmethod
    def _connect(path: Path) -> sqlite3.Connection:
        """Open, and read what the store reads at open (the scenes, its counters): a damaged page there is
        found inside `open_or_set_aside` (set aside, a new file), not as a traceback from `hologram up`."""
        db = open_checked(path, _SCHEMA, synchronous="FULL", probe=("scenes", "scene_events"))
        try:
            limit_cache(db, SMALL_CACHE_KIB)  # a turn writes a few keyed rows (storage/sqlmem.py)
            db.execute("SELECT id, key, features, strength, last_seen FROM scenes").fetchall()
            db.execute("SELECT name, value FROM meta").fetchall()
        except sqlite3.DatabaseError:
            db.close()
            raise
        return db

    def close(self) -> None:
        with self._lock, self._reader_lock:
            self._reader.close()
            self._db.close()

    def release_cache(self) -> bool:
        """Let both connections' page caches go while the kernel is idle (hologram.storage.idle_cache)."""
        return idle_cache.shrink(self._db, self._lock) & idle_cache.shrink(self._reader, self._reader_lock)

    def tagged(self, scene_id: str, event_ids: Sequence[str]) -> set[str]:
        """Which of `event_ids` are tagged with the scene (an empty set once the store is closed or failing:
        recall then prefers nothing, it does not fail)."""
        found: set[str] = set()
        wanted = list(dict.fromkeys(event_ids))
        try:
            with self._reader_lock:
                for i in range(0, len(wanted), 500):
                    chunk = wanted[i : i + 500]
                    rows = self._reader.execute(
                        f"SELECT event FROM scene_events WHERE scene = ? AND event IN ({','.join('?' * len(chunk))})",
                        (scene_id, *chunk),
                    )
                    found.update(str(r[0]) for r in rows)
        except sqlite3.Error as exc:
            log.warning("scenes: could not read the tags of scene %s: %s", scene_id, exc)
            return set()
        return found

    # -- reading ----------------------------------------------------------------------------------------

    def idf(self, term: str) -> float:
        """The BM25 IDF of `term` over the inputs observed so far (topic keywords are picked by it)."""
        with self._lock:
            row = self._db.execute("SELECT df FROM terms WHERE term = ?", (term,)).fetchone()
        return bm25_idf(self._docs, int(row[0]) if row else 0)

    def features(
        self, *, channel: str | None, partner: str | None, tools: Iterable[str], text: str, ts: float | None = None
    ) -> SceneFeatures:
        """`features_of` with this store's IDF and clock."""
        when = self.clock() if ts is None else ts
        return features_of(channel=channel, partner=partner, tools=tools, text=text, ts=when, idf=self.idf)

    def count(self) -> int:
        with self._lock:
            self._sweep(self.clock())
            return len(self._scenes)

    def list(self) -> list[Scene]:
        """Every living scene, strongest first, strength decayed to now."""
        with self._lock:
            now = self.clock()
            self._sweep(now)
            scenes = [self._decayed(s, now) for s in self._scenes.values()]
        return sorted(scenes, key=lambda s: (-s.strength, s.id))

    def events_of(self, scene_id: str) -> frozenset[str]:
        with self._lock:
            return self._events_of(scene_id)

    def active(self, features: SceneFeatures, *, declared: str | None = None) -> ActiveScene | None:
        """The scene a turn with `features` is in: the declared one if it exists, else the most similar learned
        scene at similarity ≥ `RECALL` (ties: the stronger). None: no scene (recall prefers nothing)."""
        with self._lock:
            now = self.clock()
            self._sweep(now)
            if declared is not None:
                scene = self._by_key(declared)
                if scene is None:
                    return None
                return self._activate(scene, 1.0, now)
            best = self._best(features)
            if best is None or best[1] < RECALL:
                return None
            return self._activate(best[0], best[1], now)

    # -- writing ----------------------------------------------------------------------------------------

    def observe(
        self,
        features: SceneFeatures,
        event_ids: Sequence[str],
        *,
        declared: str | None = None,
        text: str | None = None,
    ) -> Scene | None:
        """A turn with `features` ended; its memory events are `event_ids`. Joins, creates or leaves evidence
        (module docstring); returns the scene the events now belong to, or None (evidence only). `text`: the
        turn's input, counted into the IDF topic keywords are ranked by."""
        events = list(dict.fromkeys(event_ids))
        with self._lock:
            now = self.clock()
            docs = self._docs
            try:
                self._sweep(now)
                with self._transaction():
                    if text:
                        self._count_terms(text)
                    if declared is not None:
                        return self._observe_declared(declared, events, now)
                    best = self._best(features)
                    if best is not None and best[1] >= JOIN:
                        scene = self._decayed(best[0], now)
                        joined = Scene(scene.id, None, merge(scene.features, features), scene.strength + 1.0, now)
                        self._save(joined, events)
                        return joined
                    return self._evidence(features, events, now)
            except BaseException:
                self._docs = docs
                with contextlib.suppress(sqlite3.Error):  # memory must not run ahead of the file
                    self._load()
                raise

    def _observe_declared(self, key: str, events: Sequence[str], now: float) -> Scene:
        scene = self._by_key(key)
        if scene is None:
            sid = "sc_" + hashlib.sha256(key.encode()).hexdigest()[:16]
            made = Scene(sid, key, declared_features(key), DECLARED_STRENGTH, now)
        else:
            made = Scene(scene.id, key, scene.features, self._decayed(scene, now).strength + 1.0, now)
        self._save(made, events, created=now)
        return made

    def _evidence(self, features: SceneFeatures, events: Sequence[str], now: float) -> Scene | None:
        bucket = fingerprint(features)
        db = self._db
        row = db.execute("SELECT features, last_seen FROM evidence WHERE bucket = ?", (bucket,)).fetchone()
        if row is None or row[1] < now - self.settings.half_life_days * _DAY:  # none, or too old to count
            db.execute("DELETE FROM evidence_events WHERE bucket = ?", (bucket,))
            db.execute(
                "INSERT OR REPLACE INTO evidence VALUES (?, ?, ?)",
                (bucket, json.dumps(features.to_json(), ensure_ascii=False), now),
            )
            db.executemany("INSERT OR IGNORE INTO evidence_events VALUES (?, ?)", [(bucket, e) for e in events])
            return None
        first = SceneFeatures.from_json(json.loads(row[0]))
        earlier = [str(r[0]) for r in db.execute("SELECT event FROM evidence_events WHERE bucket = ?", (bucket,))]
        scene = Scene("sc_" + uuid.uuid4().hex[:16], None, merge(first, features), BORN_STRENGTH, now)
        self._save(scene, [*earlier, *events], created=now)
        # only this bucket's evidence became the scene: every other bucket keeps its own
        db.execute("DELETE FROM evidence WHERE bucket = ?", (bucket,))
        db.execute("DELETE FROM evidence_events WHERE bucket = ?", (bucket,))
        return scene

    # -- internals (the lock is held) -------------------------------------------------------------------------

    def _transaction(self) -> _Transaction:
        return _Transaction(self._db)

    def _count_terms(self, text: str) -> None:
        terms = sorted(set(tokenize(indexed(text))))
        self._db.executemany(
            "INSERT INTO terms VALUES (?, 1) ON CONFLICT(term) DO UPDATE SET df = df + 1", [(t,) for t in terms]
        )
        self._docs += 1
        self._db.execute("INSERT OR REPLACE INTO meta VALUES ('docs', ?)", (self._docs,))

    def _save(self, scene: Scene, events: Sequence[str], *, created: float | None = None) -> None:
        self._db.execute(
            "INSERT INTO scenes VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET "
            "features = excluded.features, strength = excluded.strength, last_seen = excluded.last_seen",
            (
                scene.id,
                scene.key,
                json.dumps(scene.features.to_json(), ensure_ascii=False),
                scene.strength,
                scene.last_seen,
                created if created is not None else scene.last_seen,
            ),
        )
        self._db.executemany("INSERT OR IGNORE INTO scene_events VALUES (?, ?)", [(scene.id, e) for e in events])
        self._remember(scene)

    def _by_key(self, key: str) -> Scene | None:
        return next((s for s in self._scenes.values() if s.key == key), None)

    def _best(self, features: SceneFeatures) -> tuple[Scene, float] | None:
        best: tuple[Scene, float] | None = None
        mine = elements(features)
        for sid, scene in self._scenes.items():
            if scene.key is not None:
                continue
            sim = similarity_of(mine, self._elements[sid])
            if best is None or (sim, scene.strength) > (best[1], best[0].strength):
                best = (scene, sim)
        return best

    def _activate(self, scene: Scene, sim: float, now: float) -> ActiveScene:
        return ActiveScene(scene.id, scene.key, sim, self._decayed(scene, now).strength, self.tagged)

    def _events_of(self, scene_id: str) -> frozenset[str]:
        rows = self._db.execute("SELECT event FROM scene_events WHERE scene = ?", (scene_id,))
        return frozenset(str(r[0]) for r in rows)

    def _decayed(self, scene: Scene, now: float) -> Scene:
        age = max(0.0, now - scene.last_seen)
        factor = 0.5 ** (age / (self.settings.half_life_days * _DAY))
        return Scene(scene.id, scene.key, scene.features, scene.strength * factor, scene.last_seen)

    def _sweep(self, now: float) -> None:
        """Delete scenes decayed below the floor (with their tags); at most once a minute (of the clock) also
        evidence older than a half-life — `_evidence` ignores such evidence anyway, this only frees the rows."""
        dead = [sid for sid, t in self._expiry.items() if now > t]
        stale: list[tuple[str]] = []
        if now - self._swept_evidence >= 60.0:
            horizon = now - self.settings.half_life_days * _DAY
            stale = self._db.execute("SELECT bucket FROM evidence WHERE last_seen < ?", (horizon,)).fetchall()
            self._swept_evidence = now
        if not dead and not stale:
            return
        with self._transaction():
            for sid in dead:
                self._db.execute("DELETE FROM scenes WHERE id = ?", (sid,))
                self._db.execute("DELETE FROM scene_events WHERE scene = ?", (sid,))
                self._forget(sid)
            for (bucket,) in stale:
                self._db.execute("DELETE FROM evidence WHERE bucket = ?", (bucket,))
                self._db.execute("DELETE FROM evidence_events WHERE bucket = ?", (bucket,))
        if dead:
            log.info("scenes: %d decayed below the floor (%s) and were deleted", len(dead), self.settings.floor)


class _Transaction:
    """BEGIN … COMMIT, ROLLBACK on error; nested use is a no-op (the outer one commits)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        self.owner = False

    def __enter__(self) -> None:
        if not self.db.in_transaction:
            self.db.execute("BEGIN IMMEDIATE")
            self.owner = True

    def __exit__(self, kind: object, value: object, tb: object) -> None:
        if not self.owner:
            return
        self.db.execute("COMMIT" if kind is None else "ROLLBACK")
