"""What one turn event costs the kernel to make and put on the wire: the turn API's slotted dataclass (what the
kernel builds for every delta of every turn) against a pydantic model of the same fields, in one run.

    .venv/bin/python tools/bench/event_cost.py [--number 200000] [--repeat 5]

Why kept as dataclasses while the params are pydantic models (issue 34): params are validated once a request,
events are made per streamed delta; the ratio printed is what moving them would cost on that path.
"""

from __future__ import annotations

import argparse
import timeit

from pydantic import BaseModel

from hologram.api import turn as api


class DeltaModel(BaseModel):
    """`api.ContentDelta`'s fields as a pydantic model."""

    session: str
    turn: str
    seq: int = 0
    type: str = "content.delta"
    text: str = ""
    by: str | None = None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--number", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    def dataclass_event() -> object:
        return api.wire(api.ContentDelta(session="s", turn="t", seq=3, text="hello"))

    def model_event() -> object:
        return DeltaModel(session="s", turn="t", seq=3, text="hello").model_dump()

    def constructed_event() -> object:
        return DeltaModel.model_construct(session="s", turn="t", seq=3, text="hello").model_dump()

    rows = []
    for name, make in (("dataclass + wire", dataclass_event), ("pydantic validate + dump", model_event),
                       ("pydantic construct + dump", constructed_event)):  # fmt: skip
        best = min(timeit.repeat(make, number=args.number, repeat=args.repeat)) / args.number
        rows.append((name, best))
    base = rows[0][1]
    for name, best in rows:
        print(f"{name:28s} {best * 1e6:6.2f} µs an event   {best / base:4.2f}x")


if __name__ == "__main__":
    main()
