"""Reading an ONNX file's protobuf wire format without loading its weights.

`onnx.load` reads the whole file into one bytes object and then parses it
into a proto holding every weight again: for a 300 MB model, two copies at
once. The importer needs neither for the weights that go to the archive:
their bytes are copied file to file. So the file is scanned as protobuf
records (ModelProto.graph = 7, GraphProto.initializer = 5, TensorProto.name
= 8, raw_data = 9) through an mmap, and the big `raw_data` fields are cut
out before parsing. No protobuf library walks a message without decoding
it, which is why this small reader exists.
"""

from __future__ import annotations

import mmap
from pathlib import Path

_GRAPH, _INITIALIZER, _NAME, _RAW_DATA = 7, 5, 8, 9
_LENGTH_DELIMITED = 2


def _varint(buf, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = buf[i]
        i += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, i
        shift += 7


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _fields(buf, start: int, end: int):
    """(field number, wire type, field start, payload start, payload end) of each field of a message."""
    i = start
    while i < end:
        field_start = i
        key, i = _varint(buf, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            _, j = _varint(buf, i)
        elif wire == _LENGTH_DELIMITED:
            length, i = _varint(buf, i)
            j = i + length
        elif wire in (1, 5):
            j = i + (8 if wire == 1 else 4)
        else:  # groups are not used by ONNX
            raise ValueError(f"unsupported protobuf wire type {wire} at byte {i}")
        if j > end:
            raise ValueError(f"field {number} at byte {field_start} runs past its message")
        yield number, wire, field_start, i, j
        i = j


def _initializers(buf):
    """(graph field, [(tensor field, name, raw_data payload range)]) for the model's graph fields."""
    for number, wire, g_start, g0, g1 in _fields(buf, 0, len(buf)):
        if number != _GRAPH or wire != _LENGTH_DELIMITED:
            continue
        tensors = []
        for n2, w2, t_start, t0, t1 in _fields(buf, g0, g1):
            if n2 != _INITIALIZER or w2 != _LENGTH_DELIMITED:
                continue
            name, data = None, None
            for n3, w3, f_start, a, b in _fields(buf, t0, t1):
                if n3 == _NAME and w3 == _LENGTH_DELIMITED:
                    name = bytes(buf[a:b]).decode("utf-8", "replace")
                elif n3 == _RAW_DATA and w3 == _LENGTH_DELIMITED:
                    data = (f_start, a, b)
            tensors.append(((t_start, t0, t1), name, data))
        yield (g_start, g0, g1), tensors


def _length_delimited(key_bytes: bytes, payload: bytes) -> bytes:
    return key_bytes + _encode_varint(len(payload)) + payload


def model_bytes_without_large_data(path: Path, threshold_bytes: int) -> tuple[bytes, dict[str, tuple[int, int]]]:
    """The model file's bytes with every initializer's `raw_data` of at least
    `threshold_bytes` left out, and {name: (file offset, length)} of what was left out.

    The result parses as the same ModelProto minus those bytes; the caller
    takes them from the file by their ranges.
    """
    cut: dict[str, tuple[int, int]] = {}
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        out = bytearray()
        pos = 0
        for (g_start, g0, g1), tensors in _initializers(buf):
            big = [(span, name, data) for span, name, data in tensors
                   if name is not None and data is not None and data[2] - data[1] >= threshold_bytes]
            if not big:
                continue
            graph = bytearray()
            g_pos = g0
            for (t_start, t0, t1), name, (f_start, a, b) in big:
                graph += buf[g_pos:t_start]
                tensor = bytes(buf[t0:f_start]) + bytes(buf[b:t1])
                graph += _length_delimited(bytes(buf[t_start:_varint(buf, t_start)[1]]), tensor)
                g_pos = t1
                cut[name] = (a, b - a)
            graph += buf[g_pos:g1]
            out += buf[pos:g_start]
            out += _length_delimited(bytes(buf[g_start:_varint(buf, g_start)[1]]), bytes(graph))
            pos = g1
        out += buf[pos:]
    return bytes(out), cut
