"""The English stemmer is snowballstemmer's own, loaded without the 33 other languages (memory/text/tokenizer.py)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import snowballstemmer

from hologram.memory.text import tokenizer as tokenize

ROOT = Path(__file__).resolve().parents[2]


def test_the_stems_are_the_reference_implementations_on_the_docs_vocabulary() -> None:
    text = " ".join(p.read_text(errors="replace") for p in (ROOT / "docs").rglob("*.md"))
    words = sorted(set(re.findall(r"[a-z]+", text.lower())))
    assert len(words) > 1000
    reference = snowballstemmer.stemmer("english")
    assert [tokenize._ENGLISH.stemWord(w) for w in words] == [reference.stemWord(w) for w in words]


def test_importing_tokenize_loads_only_the_english_stemmer() -> None:
    probe = "import sys, json, hologram.memory.text.tokenizer; print(json.dumps(sorted(sys.modules)))"
    modules = json.loads(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                                        check=True).stdout)  # fmt: skip
    stemmers = [m for m in modules if m.endswith("_stemmer")]
    assert stemmers == ["_hologram_snowball.english_stemmer"]


def test_the_stem_cache_holds_at_most_two_generations_and_keeps_the_working_vocabulary() -> None:
    """A long session's feed of always-new words (numbers, ids) must not grow the kernel: the cache that
    replaced ``lru_cache(100_000)`` holds at most ``2 * size`` words, stems as the reference does, and a word
    in use keeps being found across the turnover of generations."""
    cache = tokenize._StemCache(64)
    reference = snowballstemmer.stemmer("english")
    hot = ["painting", "meetings", "budgets"]
    sizes = []
    for i in range(2_000):
        word = f"word{i}ing"
        assert cache(word) == reference.stemWord(word)
        assert [cache(w) for w in hot] == [reference.stemWord(w) for w in hot]
        sizes.append(len(cache))
    assert max(sizes) <= 2 * cache.size
    assert min(sizes[500:]) > cache.size  # the path under test: generations turned over, the old one kept
    assert all(w in cache.young or w in cache.old for w in hot)
    assert len(tokenize._stem) <= 2 * tokenize._stem.size == 2 * 4096
