"""A turn's scene: which scene it is in (asked before the first LLM request, handed to memory's recall) and
what it adds to the scene store when it ends (docs/scenes.md).

Features (hologram.memory.scenes.scene_features): the channel (the declared key's, else the turn's), the partner the
client named, the tools — when asking, those the session's *previous* turn used (this turn has used none yet);
when observing, this turn's — the input's topic keywords and the local time of day. The store is SQLite:
both calls run in a worker thread (``asyncio.to_thread``), never on the event loop, and a failure of the scene
store is logged and never fails the turn — scenes are a preference, not a requirement.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from hologram.memory.scenes.scene_features import declared_features
from hologram.memory.session_records import record_of

if TYPE_CHECKING:
    from hologram.memory.scenes.store import ActiveScene, SceneFeatures, SceneStore
    from hologram.sessions import Event

log = logging.getLogger("hologram.agent")


class TurnScene:
    """One turn's side of scenes: `begin` before the first request, `used` per response, `end` at the end."""

    def __init__(
        self, store: SceneStore, sid: str, turn: str, channel: str | None, *, declared: str | None, partner: str | None
    ) -> None:
        self.store = store
        self.sid = sid
        self.turn = turn
        self.declared = declared
        self.partner = partner
        self.channel = channel
        if declared is not None:  # a declared key names the channel (and the peer) the turn is in
            key = declared_features(declared)
            self.channel = key.channel
            self.partner = partner or key.partner
        self.text = ""
        self.active: ActiveScene | None = None
        self.tools: list[str] = []  # the tools this turn called, in order

    def used(self, names: Iterable[str]) -> None:
        for name in names:
            if name not in self.tools:
                self.tools.append(name)

    def _features(self, tools: Iterable[str]) -> SceneFeatures:
        return self.store.features(channel=self.channel, partner=self.partner, tools=tools, text=self.text)

    async def begin(self, text: str, log_events: Sequence[Event]) -> ActiveScene | None:
        """The scene the turn is in (None: none), from its input and the session's previous turn's tools."""
        self.text = text
        previous = previous_turn_tools(log_events, self.turn)

        def ask() -> ActiveScene | None:
            return self.store.active(self._features(previous), declared=self.declared)

        try:
            self.active = await asyncio.to_thread(ask)
        except Exception as exc:  # a broken scenes.db must not fail the turn: recall just prefers nothing
            log.warning("scenes: could not find the active scene of turn %s: %s", self.turn, exc)
            self.active = None
        return self.active

    async def end(self, log_events: Sequence[Event]) -> None:
        """The turn ended: observe it with this turn's tools and its memory events (``record_of(event).id``)."""
        mine = [e for e in log_events if e.turn == self.turn]

        def observe() -> None:
            # the ids only: an id does not depend on the terms, and tokenising the turn's every event again (a
            # long turn's 120 KB answer, its 400 results) refilled the tokenizer's word cache at the turn's end,
            # between its freed objects, where what it kept held their memory (docs/memory.md, "Fifth round")
            ids = [record.id for e in mine if (record := record_of(e, lexical=False)) is not None]
            self.store.observe(self._features(self.tools), ids, declared=self.declared, text=self.text)

        try:
            await asyncio.to_thread(observe)
        except Exception as exc:
            log.warning("scenes: could not record turn %s: %s", self.turn, exc)


def previous_turn_tools(events: Sequence[Event], current: str) -> list[str]:
    """The tools the session's last turn before `current` called (from its stored responses), in order."""
    names: list[str] = []
    previous: str | None = None
    for event in reversed(events):
        if event.turn is None or event.turn == current:
            continue
        if previous is None:
            previous = event.turn
        elif event.turn != previous:
            break
        if event.kind == "response":
            for call in reversed(event.data.get("tool_calls") or ()):
                name = call.get("name") if isinstance(call, dict) else None
                if isinstance(name, str) and name:
                    names.append(name)
    return list(dict.fromkeys(reversed(names)))
