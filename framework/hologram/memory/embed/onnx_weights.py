"""An ONNX model rewritten with its large weights in a side file that onnxruntime maps instead of copying.

onnxruntime copies every initializer of a self-contained ``.onnx`` file into its heap, resident for the
process's life. An initializer stored as *external data* at a page-aligned offset is ``mmap``-ed instead: its
pages are file-backed, faulted in only when read and reclaimable by the OS. For the USE model that matters:
65.5 of its 69 MB of weights are the int8 token-embedding table (17 shards of 7530x512), which is only ever
read by ``Gather`` for the tokens of the text at hand, so an idle kernel has none of it resident and a busy one
the rows it used (kernel idle RSS -60 MB, ``tools/bench/footprint.py``). The computation is unchanged: the
same bytes, the same graph, bit-identical vectors (``tests/memory/test_embed.py``).

The rewrite is a protobuf splice done here, without the ``onnx`` package: each ``TensorProto`` (graph field 5)
whose ``raw_data`` is at least :data:`MIN_BYTES` loses it and gains ``external_data`` entries (location,
offset, length) and ``data_location = EXTERNAL``; every other byte of the model is copied as it is. It runs
once per installed model file and is cached (:func:`external_weights_model`).

The same splice also cuts out the graph's SentencePiece tokenizer op (:func:`split_tokenizer`): its C++
processor held 27 MB of the session's heap; hologram.memory.embed.use_tokenizer computes the same ids from mapped
tables, and the graph takes them as its inputs (vectors still bit-identical).
"""

from __future__ import annotations

import os
import shutil
import struct
import tempfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "MIN_BYTES",
    "TOKENIZER_INPUTS",
    "Initializer",
    "external_weights_model",
    "initializers",
    "operators",
    "split_tokenizer",
    "split_weights",
]

MIN_BYTES = 1 << 20
"""Initializers at least this large go to the side file; the small ones stay inline."""
_ALIGN = 65536  # onnxruntime maps external data only at offsets aligned to the allocation granularity
_FORMAT = 3  # bump when the rewrite changes: it is part of the cache key
MODEL_NAME, WEIGHTS_NAME = "model.onnx", "weights.bin"
TOKENIZER_INPUTS = ("tokens", "token_splits")
"""The rewritten graph's inputs, in place of its string input: the tokenizer op's two outputs (the ids of every
text concatenated, int32, and the row splits, int64) — hologram.memory.embed.use_tokenizer computes them."""

# protobuf field numbers (onnx.proto): ModelProto.graph, GraphProto.initializer, TensorProto.{raw_data,
# external_data, data_location}, StringStringEntryProto.{key, value}; TensorProto.EXTERNAL
_MODEL_GRAPH, _GRAPH_INITIALIZER = 7, 5
# GraphProto.{node, input}, NodeProto.{input, output, op_type, attribute}, AttributeProto.{name, s},
# TensorProto.name, ValueInfoProto.{name, type}, TypeProto.tensor_type, TypeProto.Tensor.{elem_type, shape},
# TensorShapeProto.dim, Dimension.dim_param; TensorProto.DataType INT32 and INT64
_GRAPH_NODE, _GRAPH_INPUT = 1, 11
_NODE_INPUT, _NODE_OUTPUT, _NODE_OP, _NODE_ATTRIBUTE, _ATTR_NAME, _ATTR_S, _TENSOR_NAME = 1, 2, 4, 5, 1, 4, 8
_VALUE_NAME, _VALUE_TYPE, _TYPE_TENSOR, _TENSOR_ELEM, _TENSOR_SHAPE, _SHAPE_DIM, _DIM_PARAM = 1, 2, 1, 1, 2, 1, 2
_INT32, _INT64 = 6, 7
_TOKENIZER_OP = b"SentencepieceTokenizer"
_TENSOR_RAW_DATA, _TENSOR_EXTERNAL_DATA, _TENSOR_DATA_LOCATION, _EXTERNAL = 9, 13, 14, 1
_ENTRY_KEY, _ENTRY_VALUE = 1, 2
# TensorProto.{dims, data_type, float_data, int32_data, int64_data}
_TENSOR_DIMS, _TENSOR_TYPE, _TENSOR_FLOATS, _TENSOR_INT32S, _TENSOR_INT64S = 1, 2, 4, 5, 7


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        byte = buf[i]
        i += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return result, i


def _encode_varint(n: int) -> bytes:
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | 0x80 if n else low)
        if not n:
            return bytes(out)


def _records(buf: bytes, lo: int, hi: int) -> Iterator[tuple[int, tuple[int, int] | None, bytes]]:
    """(field number, payload span for length-delimited fields else None, the field's raw bytes) of a
    message in buf[lo:hi]."""
    i = lo
    while i < hi:
        start = i
        key, i = _varint(buf, i)
        number, wire = key >> 3, key & 7
        span: tuple[int, int] | None = None
        if wire == 0:
            _, i = _varint(buf, i)
        elif wire == 1:
            i += 8
        elif wire == 2:
            length, i = _varint(buf, i)
            span = (i, i + length)
            i += length
        elif wire == 5:
            i += 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire} at byte {start}")
        if i > hi:
            raise ValueError("truncated protobuf message")
        yield number, span, buf[start:i]


def _delimited(number: int, payload: bytes) -> bytes:
    return _encode_varint(number << 3 | 2) + _encode_varint(len(payload)) + payload


def split_weights(model: bytes, weights_name: str = WEIGHTS_NAME) -> tuple[bytes, bytes]:
    """(the model with its large initializers external, the side file's bytes, to be saved as `weights_name`
    beside it). Raises ValueError on bytes that do not parse as a model."""
    side = bytearray()

    def tensor(lo: int, hi: int) -> bytes:
        fields = list(_records(model, lo, hi))
        raw = next((span for number, span, _ in fields if number == _TENSOR_RAW_DATA), None)
        if raw is None or raw[1] - raw[0] < MIN_BYTES:
            return model[lo:hi]
        side.extend(b"\0" * (-len(side) % _ALIGN))
        offset = len(side)
        side.extend(model[raw[0] : raw[1]])
        body = b"".join(data for number, _, data in fields if number != _TENSOR_RAW_DATA)
        for key, value in (("location", weights_name), ("offset", str(offset)), ("length", str(raw[1] - raw[0]))):
            entry = _delimited(_ENTRY_KEY, key.encode()) + _delimited(_ENTRY_VALUE, value.encode())
            body += _delimited(_TENSOR_EXTERNAL_DATA, entry)
        return body + _encode_varint(_TENSOR_DATA_LOCATION << 3) + _encode_varint(_EXTERNAL)

    def graph(lo: int, hi: int) -> bytes:
        return b"".join(
            _delimited(number, tensor(*span)) if number == _GRAPH_INITIALIZER and span else data
            for number, span, data in _records(model, lo, hi)
        )

    out = b"".join(
        _delimited(number, graph(*span)) if number == _MODEL_GRAPH and span else data
        for number, span, data in _records(model, 0, len(model))
    )
    if not side:
        raise ValueError("no initializer large enough to move out")
    return out, bytes(side)


def _strings(buf: bytes, lo: int, hi: int, number: int) -> list[bytes]:
    return [buf[span[0] : span[1]] for n, span, _ in _records(buf, lo, hi) if n == number and span]


def _tensor_input(name: str, elem_type: int) -> bytes:
    """A graph input of rank 1 and unknown length."""
    dim = _delimited(_SHAPE_DIM, _delimited(_DIM_PARAM, f"{name}_length".encode()))
    tensor = _encode_varint(_TENSOR_ELEM << 3) + _encode_varint(elem_type) + _delimited(_TENSOR_SHAPE, dim)
    return _delimited(_VALUE_NAME, name.encode()) + _delimited(_VALUE_TYPE, _delimited(_TYPE_TENSOR, tensor))


def split_tokenizer(model: bytes) -> tuple[bytes, bytes]:
    """(the model without its SentencePiece tokenizer op, whose two outputs become the graph's inputs
    :data:`TOKENIZER_INPUTS` in place of its string input; the op's SentencePiece model). The op's constant
    inputs (nbest, alpha, add BOS/EOS, reverse) go with it when nothing else reads them. Raises ValueError
    when the graph has no such op, or more than one, or the op does not read the graph's only input."""
    found: list[tuple[list[bytes], list[bytes], bytes]] = []
    for number, span, _ in _records(model, 0, len(model)):
        if number == _MODEL_GRAPH and span:
            for n, node, _ in _records(model, *span):
                if n == _GRAPH_NODE and node and _strings(model, *node, _NODE_OP) == [_TOKENIZER_OP]:
                    attrs = [a for m, a, _ in _records(model, *node) if m == _NODE_ATTRIBUTE and a]
                    sp = [_strings(model, *a, _ATTR_S) for a in attrs if _strings(model, *a, _ATTR_NAME) == [b"model"]]
                    found.append(
                        (
                            _strings(model, *node, _NODE_INPUT),
                            _strings(model, *node, _NODE_OUTPUT),
                            sp[0][0] if sp and sp[0] else b"",
                        )
                    )
    if len(found) != 1 or len(found[0][1]) != 2 or not found[0][2]:
        raise ValueError(f"expected one {_TOKENIZER_OP.decode()} op with a model, found {len(found)}")
    inputs, outputs, sp_model = found[0]
    renamed = dict(zip(outputs, (name.encode() for name in TOKENIZER_INPUTS), strict=True))

    def graph(lo: int, hi: int) -> bytes:
        fields = list(_records(model, lo, hi))
        nodes = [span for n, span, _ in fields if n == _GRAPH_NODE and span]
        kept = [s for s in nodes if _strings(model, *s, _NODE_OP) != [_TOKENIZER_OP]]
        read = {name for s in kept for name in _strings(model, *s, _NODE_INPUT)}
        dropped = set(inputs) - read
        graph_inputs = [_strings(model, *s, _VALUE_NAME) for n, s, _ in fields if n == _GRAPH_INPUT and s]
        if graph_inputs != [[inputs[0]]]:
            raise ValueError("the tokenizer op does not read the graph's only input")
        out = bytearray()
        for n, span, data in fields:
            if n == _GRAPH_NODE and span:
                if span in kept:
                    out += _delimited(_GRAPH_NODE, _rename(span, renamed))
            elif n == _GRAPH_INITIALIZER and span and _strings(model, *span, _TENSOR_NAME)[0] in dropped:
                continue
            elif n == _GRAPH_INPUT:
                out += _delimited(_GRAPH_INPUT, _tensor_input(TOKENIZER_INPUTS[0], _INT32))
                out += _delimited(_GRAPH_INPUT, _tensor_input(TOKENIZER_INPUTS[1], _INT64))
            else:
                out += data
        return bytes(out)

    def _rename(span: tuple[int, int], names: dict[bytes, bytes]) -> bytes:
        return b"".join(
            _delimited(n, names.get(model[s[0] : s[1]], model[s[0] : s[1]])) if n == _NODE_INPUT and s else data
            for n, s, data in _records(model, *span)
        )

    out = b"".join(
        _delimited(number, graph(*span)) if number == _MODEL_GRAPH and span else data
        for number, span, data in _records(model, 0, len(model))
    )
    return out, sp_model


@dataclass(frozen=True)
class Initializer:
    """One initializer of a graph, as stored: its bytes inline, or where in the side file they are."""

    name: str
    dims: tuple[int, ...]
    data_type: int
    """onnx.proto's TensorProto.DataType: 1 float, 2 uint8, 3 int8, 6 int32, 7 int64."""
    raw: bytes | None
    """Little-endian element bytes (``raw_data``, or the typed field repacked); None when external."""
    external: tuple[str, int, int] | None
    """(file name, offset, length) of external data, else None."""


def _varints(buf: bytes, lo: int, hi: int) -> list[int]:
    """A packed repeated varint field's values, as signed 64-bit integers."""
    out = []
    while lo < hi:
        value, lo = _varint(buf, lo)
        out.append(value - (1 << 64) if value >= 1 << 63 else value)
    return out


_INT_CODES = {2: "B", 3: "b", 4: "H", 5: "h", 6: "i", 7: "q", 9: "?"}
"""struct codes of the integer TensorProto types whose values may sit in int32_data / int64_data."""


def _initializer(buf: bytes, lo: int, hi: int) -> Initializer:
    name, dims, data_type = "", [], 0
    raw: bytes | None = None
    ints: list[int] | None = None
    entries: dict[str, str] = {}
    for number, span, data in _records(buf, lo, hi):
        if number == _TENSOR_NAME and span:
            name = buf[span[0] : span[1]].decode()
        elif number == _TENSOR_DIMS:
            dims.extend(_varints(buf, *span) if span else _varints(data, 1, len(data)))
        elif number == _TENSOR_TYPE and span is None:
            data_type = _varint(data, 1)[0]
        elif number == _TENSOR_RAW_DATA and span:
            raw = buf[span[0] : span[1]]
        elif number == _TENSOR_FLOATS and span:
            raw = buf[span[0] : span[1]]  # packed fixed32: already little-endian float32
        elif number in (_TENSOR_INT32S, _TENSOR_INT64S):
            ints = (ints or []) + (_varints(buf, *span) if span else _varints(data, 1, len(data)))
        elif number == _TENSOR_EXTERNAL_DATA and span:
            kv = {n: buf[s[0] : s[1]].decode() for n, s, _ in _records(buf, *span) if s}
            entries[kv.get(_ENTRY_KEY, "")] = kv.get(_ENTRY_VALUE, "")
    if ints is not None and raw is None:
        code = _INT_CODES.get(data_type)
        if code is None:
            raise ValueError(f"initializer {name!r}: integer data for tensor type {data_type}")
        raw = struct.pack(f"<{len(ints)}{code}", *ints)
    if entries:
        external = (entries.get("location", ""), int(entries.get("offset", "0")), int(entries.get("length", "-1")))
        return Initializer(name, tuple(dims), data_type, None, external)
    return Initializer(name, tuple(dims), data_type, raw or b"", None)


def initializers(model: bytes) -> dict[str, Initializer]:
    """Every initializer of `model`'s graph by name, read without the ``onnx`` package (a few ms for the USE
    model's rewrite). Raises ValueError on bytes that do not parse as a model."""
    out: dict[str, Initializer] = {}
    for number, span, _ in _records(model, 0, len(model)):
        if number == _MODEL_GRAPH and span:
            for n, tensor, _ in _records(model, *span):
                if n == _GRAPH_INITIALIZER and tensor:
                    init = _initializer(model, *tensor)
                    out[init.name] = init
    return out


def operators(model: bytes) -> Counter[str]:
    """How many nodes of each operator type `model`'s graph has (its top level: a subgraph shows as its
    ``If``/``Loop`` node). Raises ValueError on bytes that do not parse as a model."""
    out: Counter[str] = Counter()
    for number, span, _ in _records(model, 0, len(model)):
        if number == _MODEL_GRAPH and span:
            for n, node, _ in _records(model, *span):
                if n == _GRAPH_NODE and node:
                    out.update(op.decode("utf-8", "replace") for op in _strings(model, *node, _NODE_OP))
    return out


def external_weights_model(source: Path, cache_dir: Path) -> Path:
    """The path of `source` rewritten by :func:`split_tokenizer` and :func:`split_weights` (beside it the side
    file and the tokenizer's tables, hologram.memory.embed.use_tokenizer), built into `cache_dir` if not there yet.

    Keyed by the source's size and mtime and the rewrite's format, in a directory of its own that appears
    whole (renamed into place) or not at all. Raises OSError or ValueError if it can be neither found nor
    built; the caller then loads `source` itself."""
    stat = source.stat()
    target = cache_dir / f"{source.stem}-{_FORMAT}-{stat.st_size}-{stat.st_mtime_ns}"
    model = target / MODEL_NAME
    from hologram.memory.embed.use_tokenizer import TABLES_FILE, TRIE_FILE, compile_tokenizer

    if all((target / name).is_file() for name in (MODEL_NAME, WEIGHTS_NAME, TRIE_FILE, TABLES_FILE)):
        return model
    cache_dir.mkdir(parents=True, exist_ok=True)
    untokenized, tokenizer = split_tokenizer(source.read_bytes())
    graph, side = split_weights(untokenized)
    building = Path(tempfile.mkdtemp(prefix=target.name + ".", suffix=".tmp", dir=cache_dir))
    try:
        (building / WEIGHTS_NAME).write_bytes(side)
        compile_tokenizer(tokenizer, building)
        (building / MODEL_NAME).write_bytes(graph)
        for name in (WEIGHTS_NAME, TRIE_FILE, TABLES_FILE, MODEL_NAME):
            with open(building / name, "rb") as f:
                os.fsync(f.fileno())
        os.chmod(building, 0o755)
        try:
            os.replace(building, target)
        except OSError:
            if not model.is_file():  # not another process that got there first
                raise
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return model
