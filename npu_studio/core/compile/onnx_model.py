"""What the importer and the parameter archive both ask of an ONNX model.

Its external data files (found from the tensors' headers, without loading
any data), the ONNX checker's message turned into one reason, and what a file
that is no ONNX model looks like instead (`not_onnx_reason`).
"""

from __future__ import annotations

import re
from pathlib import Path

from .onnx_wire import model_bytes_without_large_data


def tensor_nbytes(tensor) -> int | None:
    """Bytes of an ONNX TensorProto's data, or None for non-numeric tensors."""
    import math

    import numpy as np
    from onnx import TensorProto, helper

    if tensor.data_type in (TensorProto.STRING, TensorProto.UNDEFINED):
        return None
    try:
        itemsize = np.dtype(helper.tensor_dtype_to_np_dtype(tensor.data_type)).itemsize
    except (KeyError, TypeError):
        return None
    return math.prod(tensor.dims) * itemsize


def external_ref(tensor) -> tuple[str, int, int | None]:
    """(location, offset, length or None) of a tensor's external data, as written in the model."""
    info = {e.key: e.value for e in tensor.external_data}
    length = int(info["length"]) if "length" in info else None
    return info.get("location", ""), int(info.get("offset", 0) or 0), length


def check_external_data(model, source: Path) -> None:
    """Every tensor's external data is a file inside the model's folder, long enough for the tensor.

    Raises ImportFailed naming the model and the tensor. Nothing outside the
    folder is opened or even looked at: a location is judged from its
    resolved path (symbolic links followed) before the file is touched.
    """
    from onnx.external_data_helper import _get_all_tensors, uses_external_data

    from ..errors import ImportFailed

    source = Path(source)
    folder = source.parent.resolve()
    for tensor in _get_all_tensors(model):
        if not uses_external_data(tensor):
            continue
        name = tensor.name
        try:
            location, offset, length = external_ref(tensor)
        except ValueError:
            raise ImportFailed(source, f"tensor {name!r}: external data offset or length is not a number") from None
        if not location:
            raise ImportFailed(source, f"tensor {name!r}: external data names no file")
        if offset < 0 or (length is not None and length < 0):
            raise ImportFailed(source, f"tensor {name!r}: external data has a negative offset or length")
        if Path(location).is_absolute():
            raise ImportFailed(source, f"tensor {name!r}: external data file {location!r} is an absolute path; "
                                       "it must be relative to the model's folder")
        path = (folder / location).resolve()
        if not path.is_relative_to(folder) or path == folder:
            raise ImportFailed(source, f"tensor {name!r}: external data file {location!r} is outside "
                                       "the model's folder")
        if not path.is_file():
            raise ImportFailed(source, f"tensor {name!r}: missing external data file {location!r} "
                                       "(expected next to the model)")
        nbytes = tensor_nbytes(tensor)
        if length is not None and nbytes is not None and length != nbytes:
            raise ImportFailed(source, f"tensor {name!r}: external data length {length} does not match "
                                       f"its shape, which needs {nbytes} bytes")
        needed = length if length is not None else nbytes
        size = path.stat().st_size
        if needed is not None and offset + needed > size:
            raise ImportFailed(source, f"tensor {name!r}: external data file {location!r} has "
                                       f"{max(size - offset, 0)} bytes from offset {offset}; the tensor needs {needed}")


def load_external_data(tensor, source: Path) -> None:
    """Read a tensor's external data into the tensor (after check_external_data passed on its model).

    Done here rather than by onnx's loader, whose checks and error types change
    between releases and which cannot take a folder whose name is not UTF-8.
    """
    from onnx import TensorProto

    location, offset, length = external_ref(tensor)
    with open(Path(source).parent / location, "rb") as f:
        f.seek(offset)
        tensor.raw_data = f.read(-1 if length is None else length)
    tensor.data_location = TensorProto.DEFAULT
    del tensor.external_data[:]


def external_data_files(source: Path) -> list[Path]:
    """The external data files an ONNX model names (read without loading any data)."""
    import onnx
    from onnx.external_data_helper import _get_all_tensors, uses_external_data

    try:  # embedded weights are left out too: only the tensors' headers are needed
        model = onnx.ModelProto.FromString(model_bytes_without_large_data(source, 0)[0])
    except Exception:
        return []
    names = {next((e.value for e in t.external_data if e.key == "location"), "")
             for t in _get_all_tensors(model) if uses_external_data(t)}
    folder = Path(source).parent.resolve()
    files = {(folder / n).resolve() for n in names if n}
    return sorted(f for f in files if f.is_file() and f.is_relative_to(folder))


def checker_reason(message: str) -> str:
    first = next((ln for ln in message.splitlines() if ln.strip()), message)
    if "No Op registered for" in first or "No opset import for domain" in first:
        return f"unsupported op: {first.strip()}"
    return f"invalid ONNX model: {first.strip()}"


# Files people give by mistake, by their first bytes: what the message says they look like.
_MAGIC = ((b"PK\x03\x04", "a zip archive"), (b"ML\xefR", "MLIR bytecode (name it .mlirbc)"),
          (b"\x89HDF", "an HDF5 file"), (b"\x89PNG", "a PNG image"), (b"%PDF", "a PDF document"),
          (b"\x7fELF", "an executable"), (b"\x1f\x8b", "a gzip archive"))
_MLIR_WORDS = re.compile(r"^\s*(module\b|func\.func\b|util\.func\b|#\w+\s*=|//)", re.MULTILINE)


def looks_like(source: Path) -> str | None:
    """What the start of `source` looks like when it is plainly not a protobuf, else None."""
    try:
        with open(source, "rb") as f:
            head = f.read(4096)
    except OSError:
        return None
    what = next((w for magic, w in _MAGIC if head.startswith(magic)), None)
    if what is not None or not head:
        return what
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as exc:  # a character cut at the end of the sample is still text
        if exc.start < len(head) - 3:
            return None
        text = head[:exc.start].decode("utf-8")
    if any(not c.isprintable() and c not in "\t\n\r\f" for c in text):
        return None  # control bytes: a binary file, for the protobuf parser to judge
    start = text.lstrip("\ufeff \t\r\n")
    if start[:1] in ("{", "["):
        return "JSON text"
    if start.startswith("ir_version"):
        return "ONNX in protobuf text format (save it in binary)"
    if _MLIR_WORDS.search(text):
        return "MLIR text (name it .mlir)"
    return "text"


def not_onnx_reason(source: Path, parser_message: str) -> str:
    """The one-line reason a `.onnx` file could not be read: what it looks like, else the parser's words."""
    what = looks_like(source)
    if what is not None:
        return f"not an ONNX model: looks like {what}"
    return f"not a valid ONNX protobuf (corrupt or truncated): {parser_message}"
