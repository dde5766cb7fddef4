"""jieba's segmentation, token for token, from a compact form of jieba's own data.

Why this exists (issues 11 and 22): ``jieba.initialize()`` turns dict.txt into a Python dict of ~498k words
and prefixes, ~85 MB resident and ~1.6 s to load, and ``import jieba`` alone adds ~20 MB of HMM tables. The
kernel's whole idle footprint target is 90 MB. The index only needs two of jieba's calls, ``lcut`` and
``lcut_for_search`` (HMM on), so this module reimplements exactly those over the same data in a compact form:

* the dictionary is a MARISA trie (``marisa-trie``): one ``iter_prefixes_with_ids`` call at a position is
  the row of jieba's DAG there (every dictionary word that starts at that position);
* per trie key id, ``log(freq) - log(total)`` as a double (the first operation of jieba's ``calc``, done
  once at build time, so the route arithmetic is the same float operations in the same order) and the
  part-of-speech code from dict.txt's third column;
* the HMM tables of ``jieba.finalseg`` as dense double arrays indexed by code point.

All of it is built once from the files of the installed jieba package (jieba stays the dependency that ships
the data; it is never imported here), by a child process, into one file under the user's cache directory
named after jieba's version and keyed by the sizes and CRC-32s of those files; later starts map it (~3 MB)
in a few milliseconds. Without a writable cache directory the same bytes are built in memory.

Exactness is the contract: the stored term vectors are tagged ``"jieba"`` and must stay valid, so every quirk
is kept, including ones that look like bugs (see the comments at each). tests/memory/test_segment.py compares
against real jieba on a written corpus and a large synthetic one. Not reproduced: jieba's user dictionaries,
``add_word``/``del_word`` (so ``Force_Split_Words`` is always empty), ``cut_all``, paddle, and words whose
frequency is 0 (jieba never segments them; none are in the shipped dict.txt).
"""

from __future__ import annotations

import array
import contextlib
import json
import logging
import math
import mmap
import os
import re
import struct
import sys
import zlib
from importlib import util
from pathlib import Path
from typing import Any

import marisa_trie

__all__ = ["Segmenter", "default_cache_dir", "load_segmenter"]

_log = logging.getLogger(__name__)

# jieba/__init__.py and jieba/finalseg/__init__.py, verbatim (as raw strings: the same patterns).
_RE_BLOCK = re.compile(r"([\u4E00-\u9FD5a-zA-Z0-9+#&\._%\-]+)", re.U)  # re_han_default
_RE_SKIP = re.compile(r"(\r\n|\s)", re.U)  # re_skip_default
_RE_HMM_HAN = re.compile(r"([\u4E00-\u9FD5]+)")  # finalseg.re_han
_RE_HMM_SKIP = re.compile(r"([a-zA-Z0-9]+(?:\.\d+)?%?)")  # finalseg.re_skip

_MIN_FLOAT = -3.14e100  # finalseg.MIN_FLOAT: the log-probability of an emission or transition not in the tables
_HAN_FIRST = 0x4E00  # the HMM only ever sees characters of finalseg.re_han, so a dense array covers them all
_HAN_COUNT = 0x9FD5 - 0x4E00 + 1
_STATES = "BMES"  # jieba's state letters; their index here is the state's number below
_B, _M, _E, _S = range(4)
_NO_TAG = 255

_MAGIC = b"HOLOSEG\x00"
_FORMAT = 1  # bump when the file layout or the build changes: it is part of the cache key
_DATA_FILES = ("dict.txt", "finalseg/prob_start.py", "finalseg/prob_trans.py", "finalseg/prob_emit.py")


class Segmenter:
    """jieba 0.42's default tokenizer (``lcut``/``lcut_for_search`` with HMM) over the compact tables.

    Immutable once made, so one instance serves every thread. Build one with :func:`load_segmenter`.
    """

    __slots__ = (
        "_buffer",
        "_codes",
        "_emit",
        "_key",
        "_maxlen",
        "_start",
        "_tag_names",
        "_tags",
        "_trans",
        "_trie",
        "_unk",
        "_weights",
    )

    def __init__(self, buffer: Any, key: str) -> None:
        """Read the tables from `buffer` (a cache file's bytes or mmap), which must stay alive with self."""
        view = memoryview(buffer)
        if len(view) < 16 or bytes(view[:8]) != _MAGIC:
            raise ValueError("not a segmenter file")
        (header_len,) = struct.unpack_from("<Q", view, 8)
        header = json.loads(bytes(view[16 : 16 + header_len]))
        if header.get("format") != _FORMAT or header.get("key") != key:
            raise ValueError("segmenter file is for other data")
        payload = view[16 + header_len : 16 + header_len + header["payload"]]
        if len(payload) != header["payload"] or zlib.crc32(payload) != header["crc"]:
            raise ValueError("segmenter file is damaged")

        def section(name: str) -> memoryview:
            offset, size = header["sections"][name]
            return payload[offset : offset + size]

        n_keys = header["keys"]
        self._buffer = buffer
        self._key = key
        self._trie = marisa_trie.Trie()
        self._trie.map(section("trie"))
        self._codes = section("codes").cast(header["code_type"])
        weights = array.array("d")
        weights.frombytes(section("weights"))
        self._weights = weights.tolist()  # few; a list indexes fastest
        self._tags = section("tags")
        emit = section("emit").cast("d")
        if len(self._trie) != n_keys or len(self._codes) != n_keys or len(self._tags) != n_keys:
            raise ValueError("segmenter file is damaged")
        if len(emit) != 4 * _HAN_COUNT:
            raise ValueError("segmenter file is damaged")
        self._emit = tuple(emit[i * _HAN_COUNT : (i + 1) * _HAN_COUNT] for i in range(4))
        self._tag_names: list[str] = header["tag_names"]
        self._maxlen: int = header["maxlen"]
        self._start: list[float] = header["start"]  # B, M, E, S; JSON keeps a double's repr, so exactly
        trans = header["trans"]  # [from][to]
        self._trans = tuple(trans[a][b] for a, b in _TRANSITIONS)
        # calc() scores a character that is no dictionary word as log(1) - log(total) (FREQ.get(..) or 1).
        self._unk: float = math.log(1) - math.log(header["total"])

    @property
    def key(self) -> str:
        """What identifies the jieba data files this segmenter was built from (sizes and CRCs)."""
        return self._key

    def lcut(self, text: str) -> list[str]:
        """``jieba.lcut(text)`` (accurate mode, HMM on for runs of unknown characters)."""
        out: list[str] = []
        for block in _RE_BLOCK.split(text):
            if not block:
                continue
            if _RE_BLOCK.match(block):
                self._cut_block(block, out)
            else:
                # Outside blocks jieba yields each whitespace unit (\r\n or one \s) and every other character
                # alone: punctuation, emoji, kana... never merged.
                for piece in _RE_SKIP.split(block):
                    if _RE_SKIP.match(piece):
                        out.append(piece)
                    else:
                        out.extend(piece)
        return out

    def lcut_for_search(self, text: str) -> list[str]:
        """``jieba.lcut_for_search(text)``: each word of :meth:`lcut`, preceded by its dictionary 2- and 3-grams."""
        prefixes = self._trie.prefixes
        out: list[str] = []
        for word in self.lcut(text):
            n = len(word)
            if n > 2:
                # One prefix search at i answers both "is word[i:i+2] a word" and "is word[i:i+3]".
                grams2: list[str] = []
                grams3: list[str] = []
                for i in range(n - 1):
                    for gram in prefixes(word[i : i + 3]):
                        if len(gram) == 2:
                            grams2.append(gram)
                        elif len(gram) == 3:
                            grams3.append(gram)
                out.extend(grams2)
                if n > 3:
                    out.extend(grams3)
            out.append(word)
        return out

    def tag(self, word: str) -> str | None:
        """dict.txt's part-of-speech tag for a dictionary word (nr, ns, nt, nz, t, m, ...), else None."""
        key_id = self._trie.get(word)
        if key_id is None:
            return None
        code = self._tags[key_id]
        return None if code == _NO_TAG else self._tag_names[code]

    def _cut_block(self, block: str, out: list[str]) -> None:
        """``Tokenizer.__cut_DAG``: best route through the DAG, then the HMM on runs of single characters."""
        n = len(block)
        prefixes = self._trie.iter_prefixes_with_ids
        codes = self._codes
        weights = self._weights
        unk = self._unk
        maxlen = self._maxlen
        # get_DAG + calc, right to left. jieba takes max over (logprob, end) tuples: the highest logprob, and
        # on an exact tie the later end. Prefixes come shortest first, so `>=` keeps that tie-break.
        score = [0.0] * (n + 1)
        end = list(range(n))
        for k in range(n - 1, -1, -1):
            best = None
            for word, key_id in prefixes(block[k : k + maxlen]):
                x = k + len(word)
                p = weights[codes[key_id]] + score[x]
                if best is None or p >= best:
                    best = p
                    end[k] = x
            if best is None:  # no word starts here: the character alone, as if its frequency were 1
                best = unk + score[k + 1]
                end[k] = k + 1
            score[k] = best

        # Consecutive single characters of the route are collected in a buffer; a buffer of two or more that
        # is not itself a dictionary word goes to the HMM, one that is a word comes out character by character
        # (jieba's choice: the route preferred them apart).
        trie = self._trie
        buf = -1  # start of the buffer, -1 when empty
        x = 0
        while x < n:
            y = end[x]
            if y - x == 1:
                if buf < 0:
                    buf = x
            else:
                if buf >= 0:
                    self._flush(block[buf:x], out, trie)
                    buf = -1
                out.append(block[x:y])
            x = y
        if buf >= 0:
            self._flush(block[buf:], out, trie)

    def _flush(self, buf: str, out: list[str], trie: marisa_trie.Trie) -> None:
        if len(buf) == 1:
            out.append(buf)
        elif buf not in trie:
            self._hmm_cut(buf, out)
        else:
            out.extend(buf)

    def _hmm_cut(self, text: str, out: list[str]) -> None:
        """``finalseg.cut``: Viterbi on Han runs; Latin/digit runs (with a decimal part and %) kept whole."""
        for block in _RE_HMM_HAN.split(text):
            if _RE_HMM_HAN.match(block):
                self._viterbi_cut(block, out)
            else:
                out.extend(piece for piece in _RE_HMM_SKIP.split(block) if piece)

    def _viterbi_cut(self, obs: str, out: list[str]) -> None:
        """``finalseg.viterbi`` + ``finalseg.__cut`` with the same sums in the same order.

        jieba picks each state's predecessor by max over (prob, state letter) tuples, so an exact tie goes to
        the later letter: B from (E, S) → S, M from (M, B) → M, S from (S, E) → S, E from (B, M) → M, and the
        final state from (E, S) → S. Ties are common, not rare: -3.14e100 absorbs any log-probability added
        to it, so characters missing from the emission tables give equal scores.
        """
        em_b, em_m, em_e, em_s = self._emit
        t_bm, t_be, t_mm, t_me, t_eb, t_es, t_sb, t_ss = self._trans
        start_b, start_m, start_e, start_s = self._start
        c = ord(obs[0]) - _HAN_FIRST
        v_b = start_b + em_b[c]
        v_m = start_m + em_m[c]
        v_e = start_e + em_e[c]
        v_s = start_s + em_s[c]
        back: list[tuple[int, int, int, int]] = []
        for ch in obs[1:]:
            c = ord(ch) - _HAN_FIRST
            em = em_b[c]
            p, q = v_e + t_eb + em, v_s + t_sb + em
            n_b, b_b = (q, _S) if q >= p else (p, _E)
            em = em_m[c]
            p, q = v_m + t_mm + em, v_b + t_bm + em
            n_m, b_m = (p, _M) if p >= q else (q, _B)
            em = em_e[c]
            p, q = v_b + t_be + em, v_m + t_me + em
            n_e, b_e = (q, _M) if q >= p else (p, _B)
            em = em_s[c]
            p, q = v_s + t_ss + em, v_e + t_es + em
            n_s, b_s = (p, _S) if p >= q else (q, _E)
            back.append((b_b, b_m, b_e, b_s))
            v_b, v_m, v_e, v_s = n_b, n_m, n_e, n_s
        state = _S if v_s >= v_e else _E
        path = [state]
        for pointers in reversed(back):
            state = pointers[state]
            path.append(state)
        path.reverse()
        # __cut: B opens a word, E closes it from the last B (even a stale one), S is a word, M nothing;
        # whatever follows the last E or S is one more word.
        begin = nexti = 0
        for i, state in enumerate(path):
            if state == _B:
                begin = i
            elif state == _E:
                out.append(obs[begin : i + 1])
                nexti = i + 1
            elif state == _S:
                out.append(obs[i])
                nexti = i + 1
        if nexti < len(obs):
            out.append(obs[nexti:])


# The eight transitions the Viterbi step reads, as (from, to) in the order Segmenter._trans unpacks them.
_TRANSITIONS = ((_B, _M), (_B, _E), (_M, _M), (_M, _E), (_E, _B), (_E, _S), (_S, _B), (_S, _S))


def default_cache_dir() -> Path:
    """$XDG_CACHE_HOME/hologram, else ~/.cache/hologram."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "hologram"


def load_segmenter(cache_dir: Path | None = None, *, use_cache: bool = True) -> Segmenter:
    """The segmenter for the installed jieba: mapped from the cache file, else built (and cached if possible).

    `cache_dir` defaults to :func:`default_cache_dir`. A missing, stale or damaged cache is rebuilt in a child
    process: the build's transient ~30 MB (C++ trie builder, parsed dict.txt) would otherwise stay in this
    process's heap for good, and this process is the kernel. Without a writable cache directory, or if the
    child fails, the tables are built here and kept in memory. Raises ImportError if jieba is not installed.
    """
    jieba_dir = _jieba_dir()
    key = _data_key(jieba_dir)
    if not use_cache:
        return Segmenter(build_tables(jieba_dir, key), key)
    directory = cache_dir if cache_dir is not None else default_cache_dir()
    path = directory / f"jieba-{_jieba_version(jieba_dir)}-{zlib.crc32(key.encode()):08x}.seg"
    try:
        return _open_cached(path, key)
    except FileNotFoundError:
        pass
    except (OSError, ValueError) as exc:
        _log.info("rebuilding the segmenter cache %s: %s", path, exc)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        writable = os.access(directory, os.W_OK | os.X_OK)
    except OSError:
        writable = False
    if writable:
        try:
            _build_in_child(jieba_dir, key, path)
            return _open_cached(path, key)
        except (OSError, ValueError) as exc:
            _log.warning("segmenter cache %s not built by a child process (%s); building it here", path, exc)
    data = build_tables(jieba_dir, key)
    if writable:
        try:
            _write_atomic(path, data)
            return _open_cached(path, key)
        except (OSError, ValueError) as exc:
            _log.info("segmenter cache %s not written (%s)", path, exc)
    return Segmenter(data, key)


def _jieba_dir() -> Path:
    """The installed jieba package's directory, found without importing it (its import loads the HMM)."""
    spec = util.find_spec("jieba")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("jieba is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


def _jieba_version(jieba_dir: Path) -> str:
    # importlib.metadata would cost ~3 MB and ~0.15 s of imports for one string.
    with open(jieba_dir / "__init__.py", encoding="utf-8") as f:
        found = re.search(r"""^__version__\s*=\s*['"]([\w.+-]+)['"]""", f.read(4096), re.M)
    return found.group(1) if found else "unknown"


def _data_key(jieba_dir: Path) -> str:
    """Size and CRC-32 of each data file, and the format: a new jieba or edited data means a new cache.

    Not a cryptographic hash on purpose: the point is to notice change, not tampering (whoever can write
    jieba's files can change its code too), and hashlib's import alone would cost more than the trie.
    """
    parts = [f"format {_FORMAT}"]
    for name in _DATA_FILES:
        crc = size = 0
        with open(jieba_dir / name, "rb") as f:
            while chunk := f.read(1 << 20):
                crc = zlib.crc32(chunk, crc)
                size += len(chunk)
        parts.append(f"{name} {size} {crc:08x}")
    return "; ".join(parts)


def _open_cached(path: Path, key: str) -> Segmenter:
    with open(path, "rb") as f:
        # The mapping outlives the file object; its pages are clean and shared with other processes.
        mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    return Segmenter(mapped, key)


def _build_in_child(jieba_dir: Path, key: str, path: Path) -> None:
    """Run this file as a script that builds and writes the cache; OSError if it did not."""
    import subprocess  # only on the cold path

    # -I: neither the environment nor this file's directory on sys.path (whose tokenize.py would shadow the
    # standard library's); the builder needs only the standard library and marisa_trie.
    try:
        subprocess.run(
            [sys.executable, "-I", os.path.abspath(__file__), str(jieba_dir), key, str(path)],
            check=True,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=_CHILD_TIMEOUT_S,
        )
    except subprocess.CalledProcessError as exc:
        raise OSError(f"exit status {exc.returncode}: {exc.stderr.decode(errors='replace')[-500:]}") from None
    except subprocess.SubprocessError as exc:
        raise OSError(str(exc)) from None


def _write_atomic(path: Path, data: bytes) -> None:
    """Write through a temporary file and rename, so a reader sees no file or a whole one."""
    import tempfile  # only on the cold path: it pulls in random, hashlib and more

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    # Caches of this jieba version built from other data are stale; another version's may belong to another
    # environment sharing this cache directory, and deleting it would make the two rebuild in turn.
    for stale in path.parent.glob(path.name.rsplit("-", 1)[0] + "-*.seg"):
        if stale != path:
            with contextlib.suppress(OSError):
                stale.unlink()


def _read_dict(path: Path) -> tuple[dict[str, tuple[int, str | None]], int]:
    """dict.txt as jieba's gen_pfdict reads it: word -> (frequency, tag) of its last line, and the total.

    gen_pfdict strips each line as bytes (ASCII whitespace only), splits on single spaces and adds every
    line's frequency to the total, a repeated word's too.
    """
    with open(path, "rb") as f:
        lines = f.read().decode("utf-8").split("\n")
    if lines and not lines[-1]:
        lines.pop()  # the file's final newline, not a line
    entries: dict[str, tuple[int, str | None]] = {}
    total = 0
    for lineno, raw in enumerate(lines, 1):
        fields = raw.strip(" \t\n\r\x0b\x0c").split(" ")  # what bytes.strip() removes
        try:
            freq = int(fields[1])
        except (IndexError, ValueError):
            raise ValueError(f"invalid dictionary entry in {path} at line {lineno}: {raw!r}") from None
        entries[fields[0]] = (freq, fields[2] if len(fields) > 2 else None)
        total += freq
    return entries, total


def _load_table(path: Path) -> Any:
    """The ``P`` of one of jieba's finalseg/prob_*.py modules, run alone (not as part of the jieba package).

    These modules are the tables jieba itself runs with (the .p pickles beside them are for Jython); run
    from their cached bytecode they load in milliseconds, where parsing them as literals takes seconds.
    """
    spec = util.spec_from_file_location("_hologram_jieba_" + path.stem, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.P


def build_tables(jieba_dir: Path, key: str) -> bytes:
    """The segmenter file for jieba's data in `jieba_dir` (what the cache holds)."""
    entries, total = _read_dict(jieba_dir / "dict.txt")
    # A word of frequency 0 is no word to get_DAG, calc or cut_for_search; jieba 0.42's dict.txt has none.
    trie = marisa_trie.Trie(word for word, (freq, _) in entries.items() if freq > 0)
    n_keys = len(trie)
    # Every key's weight is log(freq) - log(total), done here once, exactly as calc() does it per lookup. There
    # are few distinct frequencies (5k for 349k words): a key stores an index into a table of weights.
    log_total = math.log(total)
    distinct = sorted({freq for freq, _ in entries.values() if freq > 0})
    index_of = {freq: i for i, freq in enumerate(distinct)}
    code_type = "H" if len(distinct) <= 0xFFFF else "I"
    codes = array.array(code_type, bytes(array.array(code_type).itemsize * n_keys))
    tags = bytearray([_NO_TAG]) * n_keys
    tag_codes: dict[str, int] = {}
    for word, key_id in trie.iteritems():
        freq, tag = entries[word]
        codes[key_id] = index_of[freq]
        if tag is not None:
            tags[key_id] = tag_codes.setdefault(tag, len(tag_codes))
    if len(tag_codes) >= _NO_TAG:
        raise ValueError("too many part-of-speech tags in dict.txt")
    weights = array.array("d", (math.log(freq) - log_total for freq in distinct))

    start_p = _load_table(jieba_dir / "finalseg/prob_start.py")
    trans_p = _load_table(jieba_dir / "finalseg/prob_trans.py")
    emit_p = _load_table(jieba_dir / "finalseg/prob_emit.py")
    emit = array.array("d", [_MIN_FLOAT]) * (4 * _HAN_COUNT)
    for state, letter in enumerate(_STATES):
        for ch, p in emit_p[letter].items():
            c = ord(ch) - _HAN_FIRST
            if 0 <= c < _HAN_COUNT:  # finalseg never looks anything else up
                emit[state * _HAN_COUNT + c] = p

    sections = {
        "trie": trie.tobytes(),
        "codes": codes.tobytes(),
        "weights": weights.tobytes(),
        "tags": bytes(tags),
        "emit": emit.tobytes(),
    }
    payload = bytearray()
    layout: dict[str, tuple[int, int]] = {}
    for name, blob in sections.items():
        payload += bytes(-len(payload) % 8)  # doubles stay aligned
        layout[name] = (len(payload), len(blob))
        payload += blob
    header = json.dumps(
        {
            "format": _FORMAT,
            "key": key,
            "keys": n_keys,
            "total": total,
            "maxlen": max((len(word) for word, (freq, _) in entries.items() if freq > 0), default=1),
            "code_type": code_type,
            "tag_names": sorted(tag_codes, key=tag_codes.__getitem__),
            "start": [start_p[a] for a in _STATES],
            "trans": [[trans_p[a].get(b, _MIN_FLOAT) for b in _STATES] for a in _STATES],
            "sections": layout,
            "payload": len(payload),
            "crc": zlib.crc32(payload),
        },
        ensure_ascii=False,
    ).encode()
    header += b" " * (-(len(_MAGIC) + 8 + len(header)) % 8)
    return _MAGIC + struct.pack("<Q", len(header)) + header + bytes(payload)


_CHILD_TIMEOUT_S = 300.0

if __name__ == "__main__":  # the cache builder that load_segmenter runs: segment.py JIEBA_DIR KEY PATH
    _write_atomic(Path(sys.argv[3]), build_tables(Path(sys.argv[1]), sys.argv[2]))
