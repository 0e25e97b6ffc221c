"""Model weights outside the IR: one `.irpa` parameter archive per workspace.

Printed MLIR spells every constant out in hex, and every phase snapshot
prints them again: a 200 MB weight makes twelve 400 MB snapshots. So, at
import, every ONNX initializer of at least `threshold_bytes` becomes a
`util.global` whose initial value is `#stream.parameter.named<"model"::NAME>`
(IREE's own externalizing importer), and its bytes go into `params.irpa`.
The compiler keeps the named references through every phase; the runtime
reads the archive (`run_vmfb`), and so do the dispatch index, the NPU
pipeline and the IR view, through `ParameterArchive`.

Memory: the model is parsed without its external data and without its big
embedded weights (cut out of the file's protobuf records, core/compile/onnx_wire.py),
and the runtime's archive writer copies every weight file to file: external
data from its file, embedded weights from their byte ranges in the model
file. No step holds the big weights in memory.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

from ..lazy_import import lazy_module

from ..errors import ImportFailed, StudioError
from .onnx_model import (check_external_data, checker_reason, external_ref, load_external_data, not_onnx_reason,
                         tensor_nbytes)
from .onnx_wire import model_bytes_without_large_data

np = lazy_module("numpy")  # loaded on first use: not at the app's start

SCOPE = "model"
ARCHIVE_NAME = "params.irpa"
# Biases, shapes and small filters stay inline where a user reads them;
# anything bigger than a 128x128 f32 matrix goes to the archive.
DEFAULT_THRESHOLD_BYTES = 64 * 1024


@dataclass(frozen=True)
class ParamOptions:
    """How weights are imported: externalized at or above `threshold_bytes`."""

    threshold_bytes: int = DEFAULT_THRESHOLD_BYTES

    def __post_init__(self):
        if self.threshold_bytes < 1:
            raise ValueError("threshold_bytes must be at least 1")


@dataclass(frozen=True)
class Parameter:
    name: str
    shape: tuple[int, ...]
    dtype: str  # numpy dtype name
    nbytes: int


def _set_external(tensor, location: str, offset: int, length: int) -> None:
    from onnx import TensorProto

    del tensor.external_data[:]
    for key, value in (("location", location), ("offset", str(offset)), ("length", str(length))):
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value
    tensor.data_location = TensorProto.EXTERNAL


def externalize(model, model_dir: Path, archive: Path, options: ParamOptions, source: Path,
                in_file: dict[str, tuple[int, int]]) -> list[Parameter]:
    """Move every initializer of at least `options.threshold_bytes` into `archive`.

    `in_file` gives {name: (offset, length)} of embedded weights whose bytes
    were left out of `model` and are copied from the model file `source`.
    The moved initializers are left in `model` as external data pointing into
    the archive (so the ONNX checker and shape inference see a valid model),
    and small external tensors are loaded into the proto. Returns what moved.
    """
    from onnx import TensorProto, helper, numpy_helper

    index = None  # made at the first weight that moves: importing the runtime costs a tenth of a second
    moved: list[Parameter] = []
    open_files: list[int] = []
    external_tensors = []
    try:
        model_fd = os.open(source, os.O_RDONLY)
        open_files.append(model_fd)
        for tensor in model.graph.initializer:
            nbytes = tensor_nbytes(tensor)
            is_external = tensor.data_location == TensorProto.EXTERNAL
            if nbytes is None or nbytes < options.threshold_bytes:
                if is_external:
                    load_external_data(tensor, source)
                continue
            dtype = np.dtype(helper.tensor_dtype_to_np_dtype(tensor.data_type))
            if index is None:
                import iree.runtime as rt

                index = rt.ParameterIndex()
            if is_external:
                location, offset, length = external_ref(tensor)
                path = model_dir / location
                fd = os.open(path, os.O_RDONLY)
                open_files.append(fd)
                size = os.fstat(fd).st_size
                length = nbytes if length is None else length
                if length != nbytes or offset + length > size:
                    raise ImportFailed(source, f"tensor {tensor.name!r}: external data is {size - offset} bytes "
                                             f"from offset {offset}; its shape needs {nbytes}")
                index.add_from_file_handle(tensor.name, rt.FileHandle.wrap_fd(fd), nbytes, offset)
            elif tensor.name in in_file:
                offset, length = in_file[tensor.name]
                if length != nbytes:
                    raise ImportFailed(source, f"initializer {tensor.name!r} has {length} bytes of data; its shape needs {nbytes}")
                index.add_from_file_handle(tensor.name, rt.FileHandle.wrap_fd(model_fd), length, offset)
            else:  # typed fields (float_data, ...) rather than raw bytes: one tensor copied at a time
                index.add_buffer(tensor.name, numpy_helper.to_array(tensor).reshape(-1))
            if not is_external:
                for field in ("raw_data", "float_data", "int32_data", "int64_data", "double_data", "uint64_data"):
                    tensor.ClearField(field)
            external_tensors.append(tensor)
            moved.append(Parameter(tensor.name, tuple(tensor.dims), dtype.name, nbytes))
        if not moved:
            return []
        archive.parent.mkdir(parents=True, exist_ok=True)
        written = index.create_archive_file(str(archive))
    except OSError as exc:
        raise ImportFailed(getattr(exc, "filename", None) or source, f"cannot move the weights into {archive.name}: {exc.strerror or exc}") from None
    finally:
        del index
        for fd in open_files:
            os.close(fd)
    offsets = {key: (entry.file_storage[1], entry.length) for key, entry in written.items() if entry.is_file}
    for tensor in external_tensors:
        offset, length = offsets[tensor.name]
        _set_external(tensor, archive.name, offset, length)
    return moved


class ParameterArchive:
    """Read access to a workspace's `.irpa`: entries by name, arrays mapped from the file."""

    def __init__(self, path: Path):
        import iree.runtime as rt

        self.path = Path(path)
        self._index = rt.ParameterIndex()
        try:
            self._index.load(str(self.path))
        except Exception as exc:  # the runtime raises ValueError/RuntimeError variants
            raise StudioError(self.path, f"not a readable parameter archive: {' '.join(str(exc).split())}") from None
        self._entries = {key: entry for key, entry in self._index.items()}

    def names(self) -> list[str]:
        return list(self._entries)

    def entries(self) -> dict:
        """The runtime's index entries by name (file span or splat pattern, length)."""
        return dict(self._entries)

    def nbytes(self, name: str) -> int:
        return self._entry(name).length

    def array(self, name: str, shape: tuple[int, ...], dtype: str | np.dtype) -> np.ndarray:
        """The parameter's data as a read-only array over the mapped file (no copy)."""
        entry = self._entry(name)
        dtype = np.dtype(dtype)
        expected = math.prod(shape) * dtype.itemsize
        if entry.is_splat:
            pattern = np.frombuffer(bytes(entry.splat_pattern), dtype=dtype)
            return np.broadcast_to(pattern[0], shape)
        if entry.length != expected:
            raise StudioError(self.path, f"parameter {name!r} has {entry.length} bytes; "
                                         f"{'x'.join(map(str, shape))}x{dtype.name} needs {expected}")
        return np.frombuffer(entry.file_view, dtype=dtype).reshape(shape)

    def _entry(self, name: str):
        try:
            return self._entries[name]
        except KeyError:
            raise StudioError(self.path, f"no parameter named {name!r} in the archive") from None

    def provider(self):
        """A runtime parameter provider for the `model` scope (for `create_io_parameters_module`)."""
        return self._index.create_provider(scope=SCOPE)


@dataclass(frozen=True)
class ParamStats:
    minimum: float
    maximum: float
    mean: float
    std: float
    histogram: tuple[np.ndarray, np.ndarray]  # counts, bin edges


class StatsCancelled(Exception):
    pass


def stats(values: np.ndarray, bins: int = 64, chunk: int = 1 << 22, *,
          convert=None, cancelled=lambda: False) -> ParamStats:
    """Min, max, mean, std and a histogram, computed in chunks so a mapped weight is never copied whole.

    `convert` maps a chunk to the values to count (e.g. bf16 bits to f32);
    `cancelled` is polled between chunks (raises StatsCancelled).
    """
    flat = values.reshape(-1)
    if flat.size == 0:
        raise ValueError("empty parameter")
    convert = convert or (lambda part: part)
    lo = hi = None
    total = total_sq = 0.0
    for start in range(0, flat.size, chunk):
        if cancelled():
            raise StatsCancelled()
        part = convert(flat[start:start + chunk]).astype(np.float64)
        lo = part.min() if lo is None else min(lo, part.min())
        hi = part.max() if hi is None else max(hi, part.max())
        total += part.sum()
        total_sq += np.square(part).sum()
    mean = total / flat.size
    var = max(total_sq / flat.size - mean * mean, 0.0)
    edges = np.linspace(lo, hi if hi > lo else lo + 1.0, bins + 1)
    counts = np.zeros(bins, dtype=np.int64)
    for start in range(0, flat.size, chunk):
        if cancelled():
            raise StatsCancelled()
        counts += np.histogram(convert(flat[start:start + chunk]), bins=edges)[0]
    return ParamStats(float(lo), float(hi), float(mean), float(math.sqrt(var)), (counts, edges))


def hoist_large_constants(model, threshold_bytes: int) -> int:
    """Turn `Constant` nodes holding at least `threshold_bytes` into initializers; returns how many.

    Some exporters store weights as Constant nodes rather than initializers;
    as initializers they take the same way into the archive.
    """
    keep, hoisted = [], 0
    for node in model.graph.node:
        value = next((a.t for a in node.attribute if a.name == "value" and a.HasField("t")), None)
        if node.op_type == "Constant" and node.domain in ("", "ai.onnx") and value is not None \
                and (tensor_nbytes(value) or 0) >= threshold_bytes:
            tensor = model.graph.initializer.add()
            tensor.CopyFrom(value)
            tensor.name = node.output[0]
            hoisted += 1
        else:
            keep.append(node)
    if hoisted:
        del model.graph.node[:]
        model.graph.node.extend(keep)
    return hoisted


def load_with_archive(source: Path, archive: Path, options: ParamOptions):
    """Load an ONNX model, its large weights moved into `archive`; returns (model, moved parameters).

    The model is checked by the ONNX checker as it would be in memory, with
    the moved weights' data in the archive (the checker needs them to exist).
    """
    import onnx
    from google.protobuf.message import DecodeError


    source = Path(source)
    try:
        stripped, in_file = model_bytes_without_large_data(source, options.threshold_bytes)
    except ValueError as exc:  # refused from its first records, however big the file
        raise ImportFailed(source, not_onnx_reason(source, str(exc))) from None
    except OSError as exc:
        raise ImportFailed(source, f"cannot read ONNX model: {exc.strerror or exc}") from None
    try:
        model = onnx.ModelProto()
        model.ParseFromString(stripped)
    except DecodeError as exc:
        raise ImportFailed(source, not_onnx_reason(source, str(exc))) from None
    except Exception as exc:  # onnx raises a variety of types for unreadable files
        raise ImportFailed(source, f"cannot read ONNX model: {exc}") from None
    del stripped
    check_external_data(model, source)
    if not model.graph.node and not model.graph.output:
        raise ImportFailed(source, "not a valid ONNX model (empty graph: corrupt or truncated file?)")
    hoist_large_constants(model, options.threshold_bytes)
    moved = externalize(model, source.parent, archive, options, source, in_file)
    checked = archive.parent / f".check-{os.getpid()}.onnx"
    try:
        onnx.save(model, str(checked))
        onnx.checker.check_model(str(checked))
    except onnx.checker.ValidationError as exc:
        raise ImportFailed(source, checker_reason(str(exc))) from None
    finally:
        checked.unlink(missing_ok=True)
    return model, moved


def archive_importer(info, module, parameters: set[str]):
    """IREE's externalizing ONNX importer, externalizing exactly `parameters`.

    IREE's importer decides by element count; ours has already decided by
    bytes (and written the archive), so the initializers not in `parameters`
    are imported inline as the plain importer would.
    """
    from iree.compiler.extras import onnx_importer
    from iree.compiler.tools.import_onnx.importer_externalization_overrides import IREENodeImporter, ParamData

    class _ArchiveImporter(IREENodeImporter):
        def import_initializer(self, initializer, extern_name=None):
            name = extern_name or initializer.name
            if name in parameters:
                return super().import_initializer(initializer, extern_name)
            return onnx_importer.NodeImporter.import_initializer(self, initializer, extern_name)

    data = ParamData(param_bit_threshold=None, num_elements_threshold=0, params_scope=SCOPE,
                     data_dir="", param_path="", input_index_threshold=None)
    imp = IREENodeImporter.define_function(info.main_graph, module, data)
    imp.__class__ = _ArchiveImporter  # define_function builds the base class by name
    return imp
