"""hologram.memory.text.segment gives jieba's tokens exactly, and its cache behaves (issues 11 and 22).

The stored term vectors are tagged "jieba", so equality with real jieba 0.42 (loaded here: it is a
dependency) is the contract, asserted on the written corpus (tests/data/zh_corpus.txt), on texts whose tokens
jieba's tie-breaks decide, and on a large seeded synthetic corpus; the corpora come from tools/bench/segment.py,
which prints the same counts next to memory, load time and throughput.

Mutation checks (done by hand on this file's tests, each run against the written corpus, the tie cases and
5,000 synthetic texts; every one failed them): the route's tie-break (`>=` → `>`: 1,750 tie texts), the
Viterbi's tie-break for each of B, M, E, S and the final state (22, 65, 89, 8,740 and 9,090 texts), the E
emissions read from the M table (590), the B emission index off by one (3,417), skipping the dictionary check
before the HMM (259), scoring an unknown character log 1 - log total as 0 (16), and search mode emitting
the 3-grams of 3-character words (4,336).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from bench.segment import synthetic_corpus, tie_corpus, written_corpus
from hologram.memory.text import segment as seg
from hologram.memory.text.segment import Segmenter, load_segmenter


@pytest.fixture(scope="module")
def jieba() -> Any:
    import jieba as module

    module.setLogLevel(60)
    module.initialize()
    return module


@pytest.fixture(scope="module")
def segmenter() -> Segmenter:
    """The segmenter the kernel uses: from the default cache directory, built there on first use."""
    return load_segmenter()


@pytest.fixture(scope="module")
def prebuilt() -> bytes:
    """One in-process build, so the cache tests need not build again (the child's build is tested once)."""
    jieba_dir = seg._jieba_dir()
    return seg.build_tables(jieba_dir, seg._data_key(jieba_dir))


def mismatches(segmenter: Segmenter, jieba: Any, texts: Iterable[str]) -> list[tuple[str, str, list[str], list[str]]]:
    """(call, text, jieba's tokens, ours) for every text and call where the two differ."""
    out = []
    for text in texts:
        for call in ("lcut", "lcut_for_search"):
            expected, got = getattr(jieba, call)(text), getattr(segmenter, call)(text)
            if got != expected:
                out.append((call, text, expected, got))
    return out


# --- exactness ------------------------------------------------------------------------------------------


def test_written_corpus_gives_jiebas_tokens(segmenter: Segmenter, jieba: Any) -> None:
    texts = written_corpus()
    assert len(texts) >= 400
    whole = "\n".join(texts)
    assert mismatches(segmenter, jieba, [*texts, whole, whole.replace("\n", "\r\n")])[:5] == []


def test_texts_decided_by_jiebas_tie_breaks_give_its_tokens(segmenter: Segmenter, jieba: Any) -> None:
    ties = tie_corpus(jieba)
    # The finder must keep finding cases for every rule, or a wrong tie-break would pass unnoticed.
    assert len(ties["calc"]) >= 1000
    assert all(len(ties[rule]) >= 5 for rule in ("B", "M", "E", "S", "final")), {k: len(v) for k, v in ties.items()}
    texts = sorted(set(itertools.chain.from_iterable(ties.values())))
    assert mismatches(segmenter, jieba, texts)[:5] == []


@pytest.mark.slow
def test_synthetic_corpus_gives_jiebas_tokens(segmenter: Segmenter, jieba: Any) -> None:
    texts = synthetic_corpus(20000, seed=1)
    assert synthetic_corpus(3, seed=1) == texts[:3]  # seeded: a failure can be replayed
    assert mismatches(segmenter, jieba, texts)[:5] == []


def test_edge_inputs_give_jiebas_tokens(segmenter: Segmenter, jieba: Any) -> None:
    texts = ["", " ", "\r\n", "\n\n", "中", "a", "。", "1.5%", "-", "B超", "c++", "AT&T", "T恤衫", "γ射线"]
    texts += ["鿕" * 50, "的" * 300, "我爱北京天安门" * 400, "abc" * 100 + "中文" * 100]
    assert mismatches(segmenter, jieba, texts)[:5] == []


def test_tags_are_those_jieba_posseg_looks_up(segmenter: Segmenter) -> None:
    import jieba.posseg

    table: dict[str, str] = jieba.posseg.dt.word_tag_tab
    assert len(table) > 340_000
    assert [word for word, tag in table.items() if segmenter.tag(word) != tag][:5] == []
    assert (segmenter.tag("北京"), segmenter.tag("下午"), segmenter.tag("张三")) == ("ns", "t", None)
    assert segmenter.tag("不是一个词") is None


# --- the cache -------------------------------------------------------------------------------------------


def no_build(*_: object) -> Any:
    raise AssertionError("built although the cache was valid")


def cache_files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def test_cold_start_builds_in_a_child_then_the_cache_is_only_mapped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jieba: Any
) -> None:
    monkeypatch.setattr(seg, "build_tables", no_build)  # this process must not build: the child does
    first = load_segmenter(tmp_path)
    (name,) = cache_files(tmp_path)
    assert name.startswith("jieba-0.42") and name.endswith(".seg")
    monkeypatch.setattr(seg, "_build_in_child", no_build)
    again = load_segmenter(tmp_path)
    text = "小明硕士毕业于中国科学院计算所，后在日本京都大学深造"
    assert again.lcut_for_search(text) == first.lcut_for_search(text) == jieba.lcut_for_search(text)


def test_damaged_or_foreign_cache_is_rebuilt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, prebuilt: bytes) -> None:
    built: list[Path] = []

    def child(jieba_dir: Path, key: str, path: Path) -> None:
        built.append(path)
        seg._write_atomic(path, prebuilt)

    monkeypatch.setattr(seg, "_build_in_child", child)
    load_segmenter(tmp_path)
    (path,) = tmp_path.iterdir()
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    assert load_segmenter(tmp_path).lcut("北京大学") == ["北京大学"]
    path.write_bytes(b"not a segmenter file")
    assert load_segmenter(tmp_path).lcut("北京大学") == ["北京大学"]
    assert len(built) == 3 and path.read_bytes() == prebuilt


def test_a_file_built_from_other_data_is_refused(prebuilt: bytes) -> None:
    with pytest.raises(ValueError, match="other data"):
        Segmenter(prebuilt, "format 1; dict.txt 3 00000000")


def test_the_key_follows_the_data_files(tmp_path: Path) -> None:
    jieba_dir = seg._jieba_dir()
    copy = tmp_path / "jieba"
    (copy / "finalseg").mkdir(parents=True)
    for name in seg._DATA_FILES:
        (copy / name).write_bytes((jieba_dir / name).read_bytes())
    before = seg._data_key(copy)
    assert before == seg._data_key(jieba_dir)
    with open(copy / "dict.txt", "ab") as f:
        f.write("新词语 3 n\n".encode())
    assert seg._data_key(copy) != before


def test_without_a_writable_cache_dir_the_tables_stay_in_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, prebuilt: bytes
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setattr(seg, "_build_in_child", no_build)
    monkeypatch.setattr(seg, "build_tables", lambda jieba_dir, key: prebuilt)
    segmenter = load_segmenter(blocker / "cache")  # mkdir fails: a file is in the way (root ignores modes)
    assert segmenter.lcut("我来到北京清华大学") == ["我", "来到", "北京", "清华大学"]
    assert cache_files(tmp_path) == ["a-file"]


def test_a_failing_child_is_replaced_by_a_build_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, prebuilt: bytes
) -> None:
    monkeypatch.setattr(seg.sys, "executable", "/bin/false")
    monkeypatch.setattr(seg, "build_tables", lambda jieba_dir, key: prebuilt)
    assert load_segmenter(tmp_path).lcut("我来到北京清华大学") == ["我", "来到", "北京", "清华大学"]
    assert len(cache_files(tmp_path)) == 1  # and written for the next start


def test_writing_a_cache_removes_this_versions_stale_ones_only(tmp_path: Path, prebuilt: bytes) -> None:
    (tmp_path / "jieba-0.42.1-00000000.seg").write_bytes(b"old data")
    (tmp_path / "jieba-0.39-00000000.seg").write_bytes(b"another environment's")
    seg._write_atomic(tmp_path / "jieba-0.42.1-12345678.seg", prebuilt)
    assert cache_files(tmp_path) == ["jieba-0.39-00000000.seg", "jieba-0.42.1-12345678.seg"]


def test_the_default_cache_dir_follows_xdg(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", "/somewhere")
    assert seg.default_cache_dir() == Path("/somewhere/hologram")
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert seg.default_cache_dir() == Path(os.path.expanduser("~/.cache/hologram"))
