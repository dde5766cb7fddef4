"""The English stemmer is snowballstemmer's own, loaded without the 33 other languages (memory/tokenize.py)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import snowballstemmer

from hologram.memory import tokenize

ROOT = Path(__file__).resolve().parents[2]


def test_the_stems_are_the_reference_implementations_on_the_docs_vocabulary() -> None:
    text = " ".join(p.read_text(errors="replace") for p in (ROOT / "docs").rglob("*.md"))
    words = sorted(set(re.findall(r"[a-z]+", text.lower())))
    assert len(words) > 1000
    reference = snowballstemmer.stemmer("english")
    assert [tokenize._ENGLISH.stemWord(w) for w in words] == [reference.stemWord(w) for w in words]


def test_importing_tokenize_loads_only_the_english_stemmer() -> None:
    probe = "import sys, json, hologram.memory.tokenize; print(json.dumps(sorted(sys.modules)))"
    modules = json.loads(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                                        check=True).stdout)  # fmt: skip
    stemmers = [m for m in modules if m.endswith("_stemmer")]
    assert stemmers == ["_hologram_snowball.english_stemmer"]
