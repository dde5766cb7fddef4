"""The message ids already handled, so each message is handled once — across reconnects, when NapCat sends an
event again, and across restarts of the plugin: kept in the plugin's data directory, bounded.

One line per id, appended as it is handled (before the agent is asked: a crash then costs that message rather
than answering it twice); at twice ``keep`` lines the file is rewritten with the newest ``keep``.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from pathlib import Path


class SeenIds:
    def __init__(self, path: Path, keep: int) -> None:
        self.path = path
        self.keep = keep
        self._ids: OrderedDict[str, None] = OrderedDict()
        self._lines = 0
        if path.exists():
            for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
                if line:
                    self._ids[line] = None
                    self._ids.move_to_end(line)
                    self._lines += 1
            while len(self._ids) > keep:
                self._ids.popitem(last=False)

    def __contains__(self, key: str) -> bool:
        return key in self._ids

    def __len__(self) -> int:
        return len(self._ids)

    def add(self, key: str) -> bool:
        """Remember ``key``; False when it was seen before."""
        key = key.replace("\n", " ")
        if key in self._ids:
            return False
        self._ids[key] = None
        while len(self._ids) > self.keep:
            self._ids.popitem(last=False)
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(key + "\n")
        self._lines += 1
        if self._lines >= 2 * self.keep:
            self._compact()
        return True

    def _compact(self) -> None:
        temporary = self.path.with_suffix(".tmp")
        temporary.write_text("".join(k + "\n" for k in self._ids), encoding="utf-8")
        os.replace(temporary, self.path)
        self._lines = len(self._ids)
