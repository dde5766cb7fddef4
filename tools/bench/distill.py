"""The deterministic extractor's yield (memory/graph/extract.py): LoCoMo (English) and a Chinese sample.

    .venv/bin/python tools/bench/distill.py [LOCOMO] [--show 15]

LOCOMO is the LoCoMo directory (default ../shared/data/locomo10, read in place). Each turn ("speaker: text")
becomes an event as the kernel records it (``build_event``, the speaker as partner) and goes through
``DeterministicExtractor.extract``. Printed per corpus: turns, triples, **triples per 100 turns**, the **share
of triples whose value occurs in the source turn** (case-insensitive; the extractor's own gate, checked here
independently), the share of turns with at least one triple, the most frequent predicates, and ``--show`` random
triples with their turn so precision can be judged by eye (no gold triples exist for either corpus).
The Chinese sample is ``tools/bench/data/zh_dialogue.txt`` (49 turns written for this purpose).
``memory.py --protocol stream --l3`` prints the same figures (no samples) after its L3 table, for the turns
of the conversations it ran.
"""

from __future__ import annotations

import argparse
import collections
import random
import time
from pathlib import Path

from hologram.memory.cold.blocks import build_event
from hologram.memory.graph.extract import DeterministicExtractor
from hologram.memory.graph.store import Triple
from memory import load_locomo

ZH_SAMPLE = Path(__file__).resolve().parent / "data" / "zh_dialogue.txt"


def zh_turns(path: Path = ZH_SAMPLE) -> list[str]:
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip() and line[0] != "#"]


def measure(name: str, turns: list[str], show: int) -> dict[str, float]:
    extractor = DeterministicExtractor()
    found: list[tuple[str, Triple]] = []
    with_any = 0
    started = time.perf_counter()
    for k, text in enumerate(turns):
        speaker = text.split(":", 1)[0] if ":" in text[:40] else None
        record = build_event(timestamp=1_700_000_000 + k, input=text, partner=speaker, origin=f"{name}:{k}")
        triples = extractor.extract(record)
        with_any += bool(triples)
        found += [(text, t) for t in triples]
    elapsed = time.perf_counter() - started
    in_text = sum(t.value.casefold() in text.casefold() for text, t in found)
    n = len(found)
    stats = {
        "turns": len(turns),
        "triples": n,
        "per_100_turns": 100 * n / max(1, len(turns)),
        "value_in_source": in_text / max(1, n),
        "turns_with_a_triple": with_any / max(1, len(turns)),
    }
    print(
        f"{name}: {len(turns):,} turns, {n:,} triples = {stats['per_100_turns']:.1f} per 100 turns; value in source "
        f"{stats['value_in_source']:.3f}; turns with >= 1 triple {stats['turns_with_a_triple']:.3f}; "
        f"{1000 * elapsed / max(1, len(turns)):.2f} ms/turn"
    )
    top = collections.Counter(t.predicate for _, t in found).most_common(10)
    print("  predicates: " + ", ".join(f"{p} {c}" for p, c in top))
    for text, t in random.Random(0).sample(found, min(show, n)):
        print(f"  ({t.subject} | {t.predicate} | {t.value})  <- {text[:110]}")
    return stats


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    default = Path(__file__).resolve().parents[3] / "shared" / "data" / "locomo10"
    ap.add_argument("locomo", type=Path, nargs="?", default=default)
    ap.add_argument("--show", type=int, default=15)
    args = ap.parse_args()
    turns = [text for conv in load_locomo(args.locomo) for _, text in conv.turns]
    measure("LoCoMo (English)", turns, args.show)
    measure("Chinese sample", zh_turns(), args.show)


if __name__ == "__main__":
    main()
