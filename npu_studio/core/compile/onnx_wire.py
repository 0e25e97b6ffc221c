"""Reading an ONNX file's protobuf wire format without loading its weights.

`onnx.load` reads the whole file into one bytes object and then parses it
into a proto holding every weight again: for a 300 MB model, two copies at
once. The importer needs neither for the weights that go to the archive:
their bytes are copied file to file. So the file is scanned as protobuf
records (ModelProto.graph = 7, GraphProto.initializer = 5, TensorProto.name
= 8, raw_data = 9) through an mmap, and the big `raw_data` fields are cut
out before parsing. No protobuf library walks a message without decoding
it, which is why this small reader exists.

A file that is not ONNX is refused as soon as its records stop looking like a
ModelProto (field 0, an unknown top-level field, a wire type its schema does
not have, a singular field repeated, a varint over 10 bytes), so even a huge
file of zeros or noise fails within the first records, in bounded memory.
"""

from __future__ import annotations

import mmap
from pathlib import Path

_GRAPH, _INITIALIZER, _NAME, _RAW_DATA = 7, 5, 8, 9
_VARINT, _LENGTH_DELIMITED = 0, 2
_MAX_VARINT_BYTES = 10  # a 64-bit value
# ModelProto's fields (onnx.proto): number -> (wire type, repeated)
_MODEL_FIELDS = {1: (_VARINT, False), 2: (2, False), 3: (2, False), 4: (2, False), 5: (_VARINT, False),
                 6: (2, False), 7: (2, False), 8: (2, True), 14: (2, True), 20: (2, True), 25: (2, True),
                 26: (2, True)}


def _varint(buf, i: int) -> tuple[int, int]:
    value = shift = 0
    for i in range(i, i + _MAX_VARINT_BYTES):
        byte = buf[i]
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, i + 1
        shift += 7
    raise ValueError(f"a varint longer than {_MAX_VARINT_BYTES} bytes at byte {i}")


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
        if number == 0:
            raise ValueError(f"field number 0 at byte {field_start}")
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


def _model_fields(buf):
    """The top-level fields, each checked against ModelProto's schema."""
    seen: set[int] = set()
    for number, wire, start, a, b in _fields(buf, 0, len(buf)):
        expected = _MODEL_FIELDS.get(number)
        if expected is None:
            raise ValueError(f"no ModelProto field {number} (at byte {start})")
        if wire != expected[0]:
            raise ValueError(f"ModelProto field {number} has wire type {wire} (at byte {start})")
        if not expected[1]:
            if number in seen:
                raise ValueError(f"ModelProto field {number} appears twice (at byte {start})")
            seen.add(number)
        yield number, wire, start, a, b


def _initializers(buf):
    """(graph field, [(tensor field, name, raw_data payload range)]) for the model's graph fields."""
    for number, wire, g_start, g0, g1 in _model_fields(buf):
        if number != _GRAPH:
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
        try:
            return _without_large_data(buf, threshold_bytes, cut), cut
        except IndexError:  # a varint cut off by the end of the file
            raise ValueError("the file ends inside a record") from None


def _without_large_data(buf, threshold_bytes: int, cut: dict[str, tuple[int, int]]) -> bytes:
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
    return bytes(out)
