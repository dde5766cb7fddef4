"""The seam between scenes and recall: what recall needs to know about the active scene, and nothing more.

Recall (L2 across sessions, L3) prefers memory from the scene the turn is in (DESIGN.md "Memory", issue 15
item 4). The scene store (``hologram.memory.scenes.store``) decides which scene is active and remembers which
events happened in which scene; recall only asks "which of these events belong to the active scene?". Keeping
that question behind this protocol lets recall be tested without scenes and scenes without a graph.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

__all__ = ["SCENE_PREFERENCE", "SceneHint"]

#: How much a recall candidate from the active scene is preferred: its score is multiplied by this.
SCENE_PREFERENCE = 1.5


@runtime_checkable
class SceneHint(Protocol):
    """The active scene of a turn, as recall sees it."""

    @property
    def id(self) -> str:
        """The scene's id (stable while the scene lives)."""
        ...

    def holds(self, event_ids: Sequence[str]) -> np.ndarray:
        """A bool array: which of `event_ids` happened in this scene."""
        ...
