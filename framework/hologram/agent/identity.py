"""Who a turn is from (issue 35, item 2): the channel it came in on, the client that started it, the partner.

Why three names and who sets each:

* ``channel`` is set by the kernel, never by a param: for a plugin that calls ``kernel.turns`` ``start`` it is
  the plugin's name (the kernel knows which connection called), for a control-socket client the name it gave
  at ``initialize`` (version 1: the call's ``client``). A stage hook that treats the web differently from a chat
  channel can trust it: a plugin cannot pass itself off as another by choosing a param.
* ``client`` (and its version) is what the caller says it is — ``web``, ``cli 0.9.0``, a chat bridge's name:
  shown as who started the turn and who answered an approval, not trusted for anything.
* ``partner`` is who the turn is with, a user or group id of the channel: memory names it as the speaker of
  the user's words, so facts distilled from a group chat say who said them.

All three go on the turn's stored input event, on ``turn.started``, into the stage views and memory's records.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["TurnIdentity"]


@dataclass(frozen=True, slots=True)
class TurnIdentity:
    channel: str
    client: str = ""
    client_version: str = ""
    partner: str | None = None

    def stored(self) -> dict[str, Any]:
        """The fields the turn's input event carries in the session store. Empty ones are left out, so an
        event written before this existed and one of a turn without a partner read back the same way."""
        out: dict[str, Any] = {}
        if self.client:
            out["client"] = self.client
        if self.client_version:
            out["client_version"] = self.client_version
        if self.partner:
            out["partner"] = self.partner
        return out
