"""Notices: what a part of the kernel has to tell the person running `hologram up`.

Library code has no terminal (and must not print: a kernel embedded in a test or another program would
write into someone else's output). It logs, and hands the sentence here; `hologram up` prints what it is
given (`cli/up_cmd.py`). Notices given before anyone listens (the agent's "no provider" while the kernel is
assembled) are kept and replayed to a new listener, so the order of assembly does not lose them.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

log = logging.getLogger("hologram.kernel")
KEPT = 100  # notices replayed to a late listener; older ones are only in the log


@dataclass(frozen=True)
class Notice:
    source: str  # who says it: "agent", "watch", …
    text: str
    warning: bool = False


NoticeListener = Callable[[Notice], None]


class Notices:
    def __init__(self) -> None:
        self._past: deque[Notice] = deque(maxlen=KEPT)
        self._listeners: list[NoticeListener] = []

    def publish(self, notice: Notice) -> None:
        self._past.append(notice)
        for listener in list(self._listeners):
            try:
                listener(notice)
            except Exception:  # a broken display must not stop the kernel
                log.exception("notice listener failed")

    def subscribe(self, listener: NoticeListener) -> None:
        """Call ``listener`` for every notice from now on, after the ones already given (in order)."""
        for notice in list(self._past):
            listener(notice)
        self._listeners.append(listener)
